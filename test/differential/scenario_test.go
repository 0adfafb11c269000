package differential

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/internal/placementcheck"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// scenario is one single-pod case: a cluster (nodes and the pods already
// running on them) and the pod to place.
//
// Names in a scenario are short and local: nodes are "a", "b"; a pod's
// namespace "" is the case's own namespace, and "@key" names one of the
// case's extra namespaces (also in pod affinity terms' namespaces lists).
// The case runs them under unique names, since nodes are cluster-wide.
type scenario struct {
	name string
	// seed and index identify a generated case; seed 0 is a hand-written
	// one.
	seed  uint64
	index int
	nodes []*corev1.Node
	// namespaces are extra namespaces, by key, with their labels.
	namespaces map[string]map[string]string
	// background pods are already on their nodes (spec.nodeName set at
	// creation, no scheduler involved); both schedulers must count them.
	background []*corev1.Pod
	pod        *corev1.Pod
	// notReady nodes report Ready=False (without the taint the node
	// lifecycle controller would add).
	notReady []string
	// changes are made to nodes after they joined and a troupe-scheduler
	// cycle has seen them as they were: labels, taints, cordon,
	// allocatable. A change must be idempotent; it is applied to the spec
	// and then to the status.
	changes map[string]func(*corev1.Node)
	// storage is the case's claims, volumes, classes and CSINodes.
	storage storage
	// want is what kube-scheduler must do with the pod, so that a
	// hand-written case proves it tests what its name says.
	want premise
}

// premise is the expected kube-scheduler decision of a hand-written case.
type premise struct {
	checked bool
	refused bool
	onOneOf []string // short node names; empty: anywhere
}

func placedOn(nodes ...string) premise { return premise{checked: true, onOneOf: nodes} }
func refused() premise                 { return premise{checked: true, refused: true} }

func (p premise) String() string {
	switch {
	case !p.checked:
		return "none (a generated case)"
	case p.refused:
		return "kube-scheduler refuses the pod"
	case len(p.onOneOf) == 0:
		return "kube-scheduler places the pod"
	default:
		return "kube-scheduler places the pod on one of " + strings.Join(p.onOneOf, ", ")
	}
}

// run is one scenario on the API server.
type run struct {
	sc    scenario
	ns    string
	nsMap map[string]string // extra namespace key (with @) -> name
	// prefix makes node names unique: nodes of earlier cases may still be
	// in a scheduler's cache for a moment.
	prefix string
	nodes  []*corev1.Node
	state  placementcheck.State
}

func (r *run) nodeName(short string) string { return r.prefix + short }

func (r *run) shortNode(name string) string { return strings.TrimPrefix(name, r.prefix) }

func (r *run) namespace(ref string) string {
	if ref == "" {
		return r.ns
	}
	if n, ok := r.nsMap[ref]; ok {
		return n
	}
	return ref
}

// localize gives a scenario pod its real names: namespace, node, the
// nodes named by matchFields, and the namespaces its terms list.
func (r *run) localize(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Namespace = r.namespace(p.Namespace)
	if p.Spec.NodeName != "" {
		p.Spec.NodeName = r.nodeName(p.Spec.NodeName)
	}
	if a := p.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
				for i := range req.NodeSelectorTerms {
					r.localizeFields(req.NodeSelectorTerms[i].MatchFields)
				}
			}
			for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				r.localizeFields(na.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference.MatchFields)
			}
		}
		var terms []*corev1.PodAffinityTerm
		if pa := a.PodAffinity; pa != nil {
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
		}
		for _, t := range terms {
			for i, ns := range t.Namespaces {
				t.Namespaces[i] = r.namespace(ns)
			}
		}
	}
	return p
}

func (r *run) localizeFields(reqs []corev1.NodeSelectorRequirement) {
	for i := range reqs {
		if reqs[i].Key == "metadata.name" {
			for j, v := range reqs[i].Values {
				reqs[i].Values[j] = r.nodeName(v)
			}
		}
	}
}

// setUp creates the scenario's namespaces, nodes and background pods,
// registers their removal, waits until both schedulers have seen them and
// records the cluster as the checker will judge it.
func setUp(ctx context.Context, s *schedulers, sc scenario) *run {
	ns, err := testutil.CreateNamespace(ctx, suite.Client, "diff")
	Expect(err).NotTo(HaveOccurred())
	r := &run{sc: sc, ns: ns.Name, nsMap: map[string]string{}, prefix: ns.Name + "-"}
	namespaces := []string{r.ns}
	for _, key := range slices.Sorted(maps.Keys(sc.namespaces)) {
		extra := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "diff-" + strings.TrimPrefix(key, "@") + "-", Labels: sc.namespaces[key]}}
		Expect(suite.Client.Create(ctx, extra)).To(Succeed())
		r.nsMap[key] = extra.Name
		namespaces = append(namespaces, extra.Name)
	}
	DeferCleanup(func() {
		for _, n := range namespaces {
			Expect(suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(n), client.GracePeriodSeconds(0))).To(Succeed())
			Expect(suite.Client.DeleteAllOf(ctx, &schedulingv1alpha1.PodGroup{}, client.InNamespace(n))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, n := range namespaces {
				var pods corev1.PodList
				g.Expect(suite.Client.List(ctx, &pods, client.InNamespace(n))).To(Succeed())
				g.Expect(pods.Items).To(BeEmpty(), "pods left in %s", n)
			}
		}).WithPolling(poll).Should(Succeed())
		deleteNodes(ctx, r.nodes)
	})

	// Storage before the nodes: the barrier below then finds it in both
	// schedulers' caches.
	r.createStorage(ctx, sc.storage)

	// The barrier's target is created last: a node with room for both
	// sentinels beside its background pods.
	bgOn := map[string]int{}
	for _, p := range sc.background {
		bgOn[p.Spec.NodeName]++
	}
	target := -1
	for i, n := range sc.nodes {
		if n.Status.Allocatable.Pods().Value() >= int64(bgOn[n.Name]+2) && !slices.Contains(sc.notReady, n.Name) {
			target = i
		}
	}
	Expect(target).To(BeNumerically(">=", 0), "case %q: no node has room for the sync barrier's two sentinel pods", sc.name)
	order := append(slices.Delete(slices.Clone(sc.nodes), target, target+1), sc.nodes[target])
	for _, n := range order {
		n = n.DeepCopy()
		short := n.Name
		n.Name = r.nodeName(short)
		if n.Labels[corev1.LabelHostname] == short {
			n.Labels[corev1.LabelHostname] = n.Name
		}
		Expect(testutil.CreateReadyNode(ctx, suite.Client, n)).To(Succeed())
		if slices.Contains(sc.notReady, short) {
			Expect(testutil.SetNodeReady(ctx, suite.Client, n, false, time.Now())).To(Succeed())
		}
		r.nodes = append(r.nodes, n)
	}
	if len(sc.changes) > 0 {
		from := counter("troupe_scheduler_cycles_total")
		Eventually(func() float64 { return counter("troupe_scheduler_cycles_total") }).WithPolling(poll).
			Should(BeNumerically(">", from), "no troupe-scheduler cycle after the nodes joined")
		for _, n := range r.nodes {
			change := sc.changes[r.shortNode(n.Name)]
			if change == nil {
				continue
			}
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
					return err
				}
				change(n)
				if err := suite.Client.Update(ctx, n); err != nil {
					return err
				}
				change(n)
				return suite.Client.Status().Update(ctx, n)
			})).To(Succeed())
		}
		// The barrier's target must be written last again, so that a
		// scheduler that binds its sentinel has seen the changes too.
		last := r.nodes[len(r.nodes)-1]
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(last), last); err != nil {
				return err
			}
			if last.Annotations == nil {
				last.Annotations = map[string]string{}
			}
			last.Annotations["differential.troupe.dev/after-changes"] = "true"
			return suite.Client.Update(ctx, last)
		})).To(Succeed())
	}
	var bg []*corev1.Pod
	for _, p := range sc.background {
		p = r.localize(p)
		// A scenario marks a pod that has finished by its phase, one
		// being deleted by a deletion timestamp, and one being resized by
		// its container statuses; the API server sets none of them at
		// creation, so they are made so after it, as a kubelet would.
		status, terminating := p.Status, p.DeletionTimestamp != nil
		p.Status, p.DeletionTimestamp = corev1.PodStatus{}, nil
		Expect(suite.Client.Create(ctx, p)).To(Succeed())
		switch {
		case len(status.ContainerStatuses) > 0:
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					return err
				}
				p.Status = status
				return suite.Client.Status().Update(ctx, p)
			})).To(Succeed())
		case status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodRunning:
			Expect(testutil.SetPodPhase(ctx, suite.Client, p, status.Phase)).To(Succeed())
		case status.Phase == corev1.PodFailed:
			Expect(testutil.FailPod(ctx, suite.Client, p, 1)).To(Succeed())
		}
		if terminating {
			// Without a kubelet to confirm its end, a bound pod deleted
			// gracefully stays terminating.
			Expect(suite.Client.Delete(ctx, p)).To(Succeed())
		}
		bg = append(bg, p)
	}
	s.sync(ctx, r.nodeName(sc.nodes[target].Name), decisionTimeout)

	// The cluster as the API server stores it: admission may have
	// defaulted or merged fields (matchLabelKeys into selectors).
	r.state.Nodes, r.state.Pods, r.state.Namespaces = nil, nil, nil
	for _, n := range r.nodes {
		got := &corev1.Node{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(n), got)).To(Succeed())
		r.state.Nodes = append(r.state.Nodes, got)
	}
	for _, p := range bg {
		got := &corev1.Pod{}
		Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		r.state.Pods = append(r.state.Pods, got)
	}
	var nsList corev1.NamespaceList
	Expect(suite.Client.List(ctx, &nsList)).To(Succeed())
	for i := range nsList.Items {
		r.state.Namespaces = append(r.state.Namespaces, &nsList.Items[i])
	}
	return r
}

// with is the cluster with the placed pods added.
func (r *run) with(pods ...*corev1.Pod) placementcheck.State {
	s := r.state
	s.Pods = append(slices.Clone(s.Pods), pods...)
	return s
}

// outcome is everything a single-pod case found.
type outcome struct {
	kube, troupe         decision
	feasible             []string // by the checker, short names
	kubeViol, troupeViol []placementcheck.Violation
	problems             []string
}

// runSingle runs a single-pod scenario: kube-scheduler decides, its pod is
// deleted, troupe-scheduler decides on the identical pod, and the
// decisions are compared and judged.
func runSingle(ctx context.Context, s *schedulers, sc scenario) {
	mark := s.mark()
	r := setUp(ctx, s, sc)
	pod := r.localize(sc.pod)
	pod.Name = "subject"

	var o outcome
	o.kube = kubeDecision(ctx, pod)
	deletePod(ctx, o.kube.pod)
	o.troupe = troupeDecision(ctx, "subject", pod)[0]
	deletePod(ctx, o.troupe.pod)

	for _, n := range placementcheck.FeasibleNodes(r.state, o.kube.asked) {
		o.feasible = append(o.feasible, r.shortNode(n))
	}
	if o.kube.placed {
		p := o.kube.judged()
		o.kubeViol = placementcheck.Check(r.with(p), p)
	}
	if o.troupe.placed {
		p := o.troupe.judged()
		o.troupeViol = placementcheck.Check(r.with(p), p)
	}

	if p := sc.want; p.checked {
		switch {
		case p.refused && o.kube.placed:
			o.problems = append(o.problems, "premise: the case expects kube-scheduler to refuse the pod, and it placed it: the case does not test what it says")
		case !p.refused && !o.kube.placed:
			o.problems = append(o.problems, "premise: the case expects kube-scheduler to place the pod, and it refused it: the case does not test what it says")
		case !p.refused && len(p.onOneOf) > 0 && !slices.Contains(p.onOneOf, r.shortNode(o.kube.node)):
			o.problems = append(o.problems, fmt.Sprintf("premise: the case expects kube-scheduler to place the pod on one of %v, and it chose %s", p.onOneOf, r.shortNode(o.kube.node)))
		}
	}
	if o.kube.placed != (len(o.feasible) > 0) {
		o.problems = append(o.problems, fmt.Sprintf("checker vs kube-scheduler: kube-scheduler %s, the checker finds feasible nodes %v: the checker is wrong, or misses a rule",
			o.kube, o.feasible))
	}
	if len(o.kubeViol) > 0 {
		o.problems = append(o.problems, "checker vs kube-scheduler: the checker rejects kube-scheduler's placement: the checker is wrong, or misses a rule")
	}
	if o.kube.placed != o.troupe.placed {
		o.problems = append(o.problems, fmt.Sprintf("feasibility differs: kube-scheduler %s, troupe-scheduler %s", o.kube, r.short(o.troupe)))
	}
	if len(o.troupeViol) > 0 {
		o.problems = append(o.problems, "troupe-scheduler's placement breaks required rules (see the checker's violations)")
	}
	if len(o.problems) > 0 {
		Fail(r.report(o) + s.logsSince(mark))
	}
}

func (r *run) short(d decision) string {
	if d.placed {
		return "placed on " + r.shortNode(d.node)
	}
	return "refused"
}

// report is a readable account of a failed case: the decisions, the
// checker's verdicts, what each scheduler said, and the whole cluster.
func (r *run) report(o outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "case %q\n", r.sc.name)
	if r.sc.seed != 0 {
		fmt.Fprintf(&b, "  generated: seed %d, case %d (rerun with %s=%d)\n", r.sc.seed, r.sc.index, seedEnv, r.sc.seed)
	}
	fmt.Fprintf(&b, "  namespace %s, nodes named %s<name>\n", r.ns, r.prefix)
	b.WriteString("problems:\n")
	for _, p := range o.problems {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	fmt.Fprintf(&b, "premise:            %s\n", r.sc.want)
	fmt.Fprintf(&b, "kube-scheduler:     %s\n", r.short(o.kube))
	fmt.Fprintf(&b, "troupe-scheduler:   %s\n", r.short(o.troupe))
	fmt.Fprintf(&b, "checker's feasible: %v\n", o.feasible)
	r.writeViolations(&b, "kube-scheduler's placement", o.kubeViol)
	r.writeViolations(&b, "troupe-scheduler's placement", o.troupeViol)
	fmt.Fprintf(&b, "kube-scheduler said:   %s\n", orDash(o.kube.message))
	fmt.Fprintf(&b, "troupe PodGroup said:  %s\n", orDash(o.troupe.message))
	b.WriteString(r.describeCluster())
	b.WriteString(r.describeStorage())
	b.WriteString("the pod:\n")
	b.WriteString(indent(describePod(o.kube.asked), "    "))
	return b.String()
}

func (r *run) writeViolations(b *strings.Builder, what string, vs []placementcheck.Violation) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(b, "checker on %s:\n", what)
	for _, v := range vs {
		v.Node = r.shortNode(v.Node)
		fmt.Fprintf(b, "  - %s\n", v)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// describeCluster lists each node (labels, taints, cordon, allocatable)
// with the pods on it.
func (r *run) describeCluster() string {
	var b strings.Builder
	b.WriteString("cluster:\n")
	onNode := map[string][]*corev1.Pod{}
	for _, p := range r.state.Pods {
		onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
	}
	for _, n := range r.state.Nodes {
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
			v := n.Labels[k]
			if k == corev1.LabelHostname {
				v = r.shortNode(v)
			}
			labels = append(labels, k+"="+v)
		}
		var alloc []string
		for _, k := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
			q := n.Status.Allocatable[k]
			alloc = append(alloc, fmt.Sprintf("%s=%s", k, q.String()))
		}
		fmt.Fprintf(&b, "  node %s  labels{%s}  allocatable{%s}", r.shortNode(n.Name), strings.Join(labels, " "), strings.Join(alloc, " "))
		for _, t := range n.Spec.Taints {
			fmt.Fprintf(&b, "  taint %s=%s:%s", t.Key, t.Value, t.Effect)
		}
		if n.Spec.Unschedulable {
			b.WriteString("  CORDONED")
		}
		b.WriteString("\n")
		for _, p := range onNode[n.Name] {
			fmt.Fprintf(&b, "    pod %s/%s\n", p.Namespace, p.Name)
			b.WriteString(indent(describePod(p), "        "))
		}
	}
	return b.String()
}

// resizeView is what a container's status says it runs with and has
// been allocated, which differs from its spec during an in-place resize.
type resizeView struct {
	Container string              `json:"container"`
	Running   corev1.ResourceList `json:"running,omitempty"`
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
}

// describePod is the part of a pod that placement reads, as YAML.
func describePod(p *corev1.Pod) string {
	type container struct {
		Requests corev1.ResourceList    `json:"requests,omitempty"`
		Ports    []corev1.ContainerPort `json:"hostPorts,omitempty"`
	}
	view := struct {
		Labels       map[string]string                 `json:"labels,omitempty"`
		NodeSelector map[string]string                 `json:"nodeSelector,omitempty"`
		Containers   []container                       `json:"containers,omitempty"`
		Affinity     *corev1.Affinity                  `json:"affinity,omitempty"`
		Tolerations  []corev1.Toleration               `json:"tolerations,omitempty"`
		Spread       []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
		Resizing     []resizeView                      `json:"statusResources,omitempty"`
	}{Labels: p.Labels, NodeSelector: p.Spec.NodeSelector, Affinity: p.Spec.Affinity, Spread: p.Spec.TopologySpreadConstraints}
	for _, t := range p.Spec.Tolerations {
		// The API server adds the default not-ready/unreachable
		// tolerations to every pod; they say nothing about the case.
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			continue
		}
		view.Tolerations = append(view.Tolerations, t)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Resources != nil || cs.AllocatedResources != nil {
			r := resizeView{Container: cs.Name, Allocated: cs.AllocatedResources}
			if cs.Resources != nil {
				r.Running = cs.Resources.Requests
			}
			view.Resizing = append(view.Resizing, r)
		}
	}
	for _, c := range p.Spec.Containers {
		var ports []corev1.ContainerPort
		for _, cp := range c.Ports {
			if cp.HostPort > 0 {
				ports = append(ports, cp)
			}
		}
		if len(c.Resources.Requests) > 0 || len(ports) > 0 {
			view.Containers = append(view.Containers, container{Requests: c.Resources.Requests, Ports: ports})
		}
	}
	raw, err := yaml.Marshal(view)
	if err != nil {
		return err.Error()
	}
	if strings.TrimSpace(string(raw)) == "{}" {
		return "(no labels, requests or placement rules)\n"
	}
	return string(raw)
}
