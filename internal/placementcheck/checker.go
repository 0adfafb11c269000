// Package placementcheck judges pod placements against the required
// placement rules of Kubernetes, with kube-scheduler v1.36's exact meaning,
// and independently of any scheduler: it is the referee of the
// differential suite (test/differential) and of the scheduler's property
// tests, so it shares no code with troupe-scheduler (gangscheduler/) or
// with kube-scheduler. It uses apimachinery's label selectors and
// component-helpers' node-affinity matching as primitives; every rule is
// its own small code below, written from the rule's definition:
//
//   - the node exists, and is not cordoned unless the pod tolerates
//     node.kubernetes.io/unschedulable:NoSchedule (NodeUnschedulable);
//
//   - nodeSelector and required node affinity (NodeAffinity);
//
//   - every NoSchedule and NoExecute taint is tolerated (TaintToleration);
//
//   - the pod count and every resource the pod requests fit the node's
//     allocatable with what the other pods hold (their requests, or more
//     while an in-place resize is under way) (NodeResourcesFit);
//
//   - no host port clashes (NodePorts);
//
//   - required pod affinity, including the first-pod rule, required pod
//     anti-affinity, and the anti-affinity of the pods already there
//     against the incoming one (InterPodAffinity);
//
//   - DoNotSchedule topology spread constraints, with their eligible
//     domains (nodeAffinityPolicy, nodeTaintsPolicy, nodes lacking a
//     topology key), minDomains, self-match and matchLabelKeys
//     (PodTopologySpread).
//
//   - volumes: every claim exists, is not being deleted, is the pod's if
//     ephemeral, and is bound to a volume that exists and whose node
//     affinity matches (VolumeBinding); the volumes' zone and region
//     labels match the node's (VolumeZone); a ReadWriteOncePod claim in use
//     by another pod (VolumeRestrictions); CSI attach limits from CSINode,
//     a volume shared on the node counted once (NodeVolumeLimits).
//
// A pod that uses what the checker does not model (an unbound
// WaitForFirstConsumer claim, which kube-scheduler would bind or
// provision; in-tree disk plugins, inline or as volumes; resource claims;
// pod-level resources) gets a NotModelled violation rather than a silent
// pass.
package placementcheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Rules, named after the kube-scheduler plugin that enforces each.
const (
	RuleNodeExists           = "NodeExists"
	RuleSchedulingGates      = "SchedulingGates"
	RuleNodeUnschedulable    = "NodeUnschedulable"
	RuleNodeAffinity         = "NodeAffinity"
	RuleTaintToleration      = "TaintToleration"
	RuleNodeResourcesFit     = "NodeResourcesFit"
	RuleNodePorts            = "NodePorts"
	RulePodAffinity          = "InterPodAffinity/affinity"
	RulePodAntiAffinity      = "InterPodAffinity/anti-affinity"
	RuleExistingAntiAffinity = "InterPodAffinity/existing-pods-anti-affinity"
	RuleTopologySpread       = "PodTopologySpread"
	RuleNotModelled          = "NotModelled"
)

// State is the cluster a placement is judged in.
type State struct {
	Nodes []*corev1.Node
	// Pods are the pods on nodes (spec.nodeName set), the judged ones
	// included. Pods that have finished (Succeeded, Failed) take nothing,
	// and pods on a node not in Nodes are left out, as kube-scheduler's
	// snapshot leaves them out.
	Pods []*corev1.Pod
	// Namespaces give the labels that namespaceSelectors match; a
	// namespace not listed has none.
	Namespaces []*corev1.Namespace
	// Claims, PersistentVolumes, StorageClasses and CSINodes are what the
	// volume rules read; a claim or volume not listed does not exist.
	Claims            []*corev1.PersistentVolumeClaim
	PersistentVolumes []*corev1.PersistentVolume
	StorageClasses    []*storagev1.StorageClass
	CSINodes          []*storagev1.CSINode
}

// Violation is one required rule a placement breaks.
type Violation struct {
	Pod    string // namespace/name
	Node   string
	Rule   string
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s on %s: %s: %s", v.Pod, v.Node, v.Rule, v.Detail)
}

// Check judges pod where it is bound (spec.nodeName), as if it were the
// last pod placed: every other pod of s is already there. For a gang
// placed in one decision this is the order-free reading of the rules; a
// placement that identical pods could reach one by one always passes it.
func Check(s State, pod *corev1.Pod) []Violation {
	if pod.Spec.NodeName == "" {
		return []Violation{{Pod: key(pod), Rule: RuleNodeExists, Detail: "the pod is not bound"}}
	}
	return CheckOn(s, pod, pod.Spec.NodeName)
}

// CheckOn judges pod as if it were placed on node, whatever its
// spec.nodeName says; a pod of s with its namespace and name is taken to
// be this one and not counted twice.
func CheckOn(s State, pod *corev1.Pod, node string) []Violation {
	c := newCluster(s, pod)
	n, ok := c.nodes[node]
	if !ok {
		return []Violation{{Pod: key(pod), Node: node, Rule: RuleNodeExists, Detail: "no such node in the cluster"}}
	}
	j := judgement{cluster: c, pod: pod, node: n}
	j.notModelled()
	j.gates()
	j.unschedulable()
	j.nodeAffinity()
	j.taints()
	j.resources()
	j.ports()
	j.podAffinity()
	j.podAntiAffinity()
	j.existingAntiAffinity()
	j.topologySpread()
	j.volumeBinding()
	j.volumeZone()
	j.readWriteOncePod()
	j.nodeVolumeLimits()
	return j.violations
}

// FeasibleNodes are the nodes of s where pod may go, sorted by name.
func FeasibleNodes(s State, pod *corev1.Pod) []string {
	var out []string
	for _, n := range s.Nodes {
		if len(CheckOn(s, pod, n.Name)) == 0 {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// cluster indexes a State for one judgement: nodes by name, and the other
// pods (not the judged one) by node.
type cluster struct {
	nodes     map[string]*corev1.Node
	nodeList  []*corev1.Node
	others    []*corev1.Pod
	onNode    map[string][]*corev1.Pod
	nsLabels  map[string]labels.Set
	judgedKey string
	// claims are by namespace/name; volumes, classes and csiNodes by name.
	claims   map[string]*corev1.PersistentVolumeClaim
	volumes  map[string]*corev1.PersistentVolume
	classes  map[string]*storagev1.StorageClass
	csiNodes map[string]*storagev1.CSINode
}

func newCluster(s State, judged *corev1.Pod) *cluster {
	c := &cluster{
		nodes:     map[string]*corev1.Node{},
		onNode:    map[string][]*corev1.Pod{},
		nsLabels:  map[string]labels.Set{},
		judgedKey: key(judged),
	}
	for _, n := range s.Nodes {
		c.nodes[n.Name] = n
		c.nodeList = append(c.nodeList, n)
	}
	for _, p := range s.Pods {
		if key(p) == c.judgedKey || p.Spec.NodeName == "" || c.nodes[p.Spec.NodeName] == nil {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		c.others = append(c.others, p)
		c.onNode[p.Spec.NodeName] = append(c.onNode[p.Spec.NodeName], p)
	}
	for _, ns := range s.Namespaces {
		c.nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	c.claims = map[string]*corev1.PersistentVolumeClaim{}
	for _, claim := range s.Claims {
		c.claims[claim.Namespace+"/"+claim.Name] = claim
	}
	c.volumes = byName(s.PersistentVolumes)
	c.classes = byName(s.StorageClasses)
	c.csiNodes = byName(s.CSINodes)
	return c
}

func byName[T interface{ GetName() string }](objs []T) map[string]T {
	m := make(map[string]T, len(objs))
	for _, o := range objs {
		m[o.GetName()] = o
	}
	return m
}

type judgement struct {
	*cluster
	pod        *corev1.Pod
	node       *corev1.Node
	violations []Violation
}

func (j *judgement) fail(rule, format string, args ...any) {
	j.violations = append(j.violations, Violation{Pod: key(j.pod), Node: j.node.Name, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (j *judgement) notModelled() {
	var what []string
	for i := range j.pod.Spec.Volumes {
		if disk := inlineInTreeDisk(&j.pod.Spec.Volumes[i]); disk != "" {
			what = append(what, "volume "+j.pod.Spec.Volumes[i].Name+" (an inline "+disk+")")
		}
	}
	if len(j.pod.Spec.ResourceClaims) > 0 {
		what = append(what, "spec.resourceClaims")
	}
	if j.pod.Spec.Resources != nil {
		what = append(what, "spec.resources (pod-level resources)")
	}
	if len(what) > 0 {
		j.fail(RuleNotModelled, "the checker cannot judge %s", strings.Join(what, ", "))
	}
}

// gates: kube-scheduler never places a pod that still has scheduling gates.
func (j *judgement) gates() {
	if len(j.pod.Spec.SchedulingGates) > 0 {
		j.fail(RuleSchedulingGates, "the pod still has scheduling gates %v", j.pod.Spec.SchedulingGates)
	}
}

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

func (j *judgement) unschedulable() {
	if j.node.Spec.Unschedulable && !toleratedBy(unschedulableTaint, j.pod.Spec.Tolerations) {
		j.fail(RuleNodeUnschedulable, "the node is cordoned and the pod does not tolerate %s:NoSchedule", corev1.TaintNodeUnschedulable)
	}
}

func (j *judgement) nodeAffinity() {
	if !matchesNodeAffinity(j.pod, j.node) {
		j.fail(RuleNodeAffinity, "the node's labels %v do not match the pod's nodeSelector or required node affinity", j.node.Labels)
	}
}

// matchesNodeAffinity is nodeSelector AND any of the required node
// selector terms. A selector that does not parse matches nothing.
func matchesNodeAffinity(pod *corev1.Pod, node *corev1.Node) bool {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return ok && err == nil
}

func (j *judgement) taints() {
	if t, bad := untoleratedTaint(j.node, j.pod); bad {
		j.fail(RuleTaintToleration, "taint %s=%s:%s is not tolerated", t.Key, t.Value, t.Effect)
	}
}

// untoleratedTaint is the first NoSchedule or NoExecute taint of node that
// pod does not tolerate. PreferNoSchedule never keeps a pod off.
func untoleratedTaint(node *corev1.Node, pod *corev1.Pod) (corev1.Taint, bool) {
	for _, t := range node.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !toleratedBy(t, pod.Spec.Tolerations) {
			return t, true
		}
	}
	return corev1.Taint{}, false
}

func toleratedBy(taint corev1.Taint, tolerations []corev1.Toleration) bool {
	for _, tol := range tolerations {
		if tolerates(tol, taint) {
			return true
		}
	}
	return false
}

// tolerates is a toleration's definition: an empty effect matches every
// effect, an empty key (with Exists) every key; Exists ignores the value,
// Equal (or no operator) compares it. Lt and Gt need an alpha feature gate
// that is off by default, so they tolerate nothing.
func tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}

// resources: the pod count, and each resource the pod requests (only
// those: a node already overcommitted on memory still takes a pod that
// asks for CPU alone), summed over every pod on the node including this
// one, must not exceed allocatable. A resource the node does not list has
// an allocatable of zero.
func (j *judgement) resources() {
	onNode := j.onNode[j.node.Name]
	allowed := j.node.Status.Allocatable.Pods().Value()
	if int64(len(onNode)+1) > allowed {
		j.fail(RuleNodeResourcesFit, "%d pods with this one, the node allows %d", len(onNode)+1, allowed)
	}
	want := PodRequests(j.pod)
	names := make([]corev1.ResourceName, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		q := want[name]
		if q.Sign() <= 0 {
			continue
		}
		used := resource.Quantity{}
		for _, p := range onNode {
			if r, ok := HeldRequests(p)[name]; ok {
				used.Add(r)
			}
		}
		total := used.DeepCopy()
		total.Add(q)
		alloc := j.node.Status.Allocatable[name]
		if total.Cmp(alloc) > 0 {
			j.fail(RuleNodeResourcesFit, "%s: %s requested + %s in use > %s allocatable", name, q.String(), used.String(), alloc.String())
		}
	}
}

// PodRequests is what a pod asks of a node to be placed there: the sum of
// its containers and sidecars (restartable init containers), or more if
// an init container needs more while it runs (beside the sidecars started
// before it), plus the pod's overhead.
func PodRequests(p *corev1.Pod) corev1.ResourceList { return requests(p, false) }

// HeldRequests is what a pod already on a node holds there. It is
// PodRequests, except for a pod being resized in place: each container
// (and sidecar) holds the most of what its spec asks, what the kubelet has
// allocated to it and what it actually runs with, as reported in its
// status. Once the kubelet has found a resize infeasible, the spec no
// longer counts; only what was allocated and actuated does.
func HeldRequests(p *corev1.Pod) corev1.ResourceList { return requests(p, true) }

func requests(p *corev1.Pod, held bool) corev1.ResourceList {
	effective := func(c corev1.Container) corev1.ResourceList { return c.Resources.Requests }
	if held {
		statuses := map[string]corev1.ContainerStatus{}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			statuses[cs.Name] = cs
		}
		infeasible := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending {
				infeasible = c.Reason == corev1.PodReasonInfeasible
			}
		}
		effective = func(c corev1.Container) corev1.ResourceList {
			cs, ok := statuses[c.Name]
			if !ok || cs.Resources == nil {
				return c.Resources.Requests
			}
			out := corev1.ResourceList{}
			if !infeasible {
				maxInto(out, c.Resources.Requests)
			}
			maxInto(out, cs.Resources.Requests)
			maxInto(out, cs.AllocatedResources)
			return out
		}
	}
	sum := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addTo(sum, effective(c))
	}
	sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		running := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(sidecars, effective(c))
			addTo(running, sidecars)
		} else {
			// A plain init container has ended by the time a resize
			// could happen: its spec is what it asked.
			addTo(running, c.Resources.Requests)
			addTo(running, sidecars)
		}
		maxInto(initPeak, running)
	}
	addTo(sum, sidecars)
	maxInto(sum, initPeak)
	addTo(sum, p.Spec.Overhead)
	return sum
}

func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name]
		cur.Add(q)
		dst[name] = cur
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// hostPort is one (IP, protocol, port) a pod binds on its node.
type hostPort struct {
	ip, protocol string
	port         int32
}

// hostPorts are the host ports of a pod's containers and sidecars (plain
// init containers have ended before the containers start), with an empty
// IP read as 0.0.0.0 and an empty protocol as TCP.
func hostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(ports []corev1.ContainerPort) {
		for _, cp := range ports {
			if cp.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: cp.HostIP, protocol: string(cp.Protocol), port: cp.HostPort}
			if hp.ip == "" {
				hp.ip = "0.0.0.0"
			}
			if hp.protocol == "" {
				hp.protocol = string(corev1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c.Ports)
		}
	}
	for _, c := range p.Spec.Containers {
		add(c.Ports)
	}
	return out
}

// clash: the same protocol and port, on the same IP or where either side
// binds every IP (0.0.0.0).
func (a hostPort) clash(b hostPort) bool {
	return a.protocol == b.protocol && a.port == b.port && (a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0")
}

func (j *judgement) ports() {
	want := hostPorts(j.pod)
	if len(want) == 0 {
		return
	}
	for _, p := range j.onNode[j.node.Name] {
		for _, used := range hostPorts(p) {
			for _, w := range want {
				if w.clash(used) {
					j.fail(RuleNodePorts, "host port %s/%d on %s is taken by %s", w.protocol, w.port, w.ip, key(p))
				}
			}
		}
	}
}

// term is a parsed pod (anti-)affinity term of its owner.
type term struct {
	namespaces  []string        // explicit namespaces, or the owner's own when neither list nor selector is given
	nsSelector  labels.Selector // nil selector in the API: matches no namespace
	selector    labels.Selector // nil selector in the API: matches no pod
	topologyKey string
}

func parseTerms(owner *corev1.Pod, ts []corev1.PodAffinityTerm) ([]term, error) {
	var out []term
	for _, t := range ts {
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			return nil, err
		}
		nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return nil, err
		}
		nss := t.Namespaces
		if len(nss) == 0 && t.NamespaceSelector == nil {
			nss = []string{owner.Namespace}
		}
		out = append(out, term{namespaces: nss, nsSelector: nsSel, selector: sel, topologyKey: t.TopologyKey})
	}
	return out, nil
}

// matches: the pod is in one of the term's namespaces (listed, or
// selected by their labels) and its labels match the term's selector.
func (c *cluster) matches(t term, p *corev1.Pod) bool {
	if !slices.Contains(t.namespaces, p.Namespace) && !t.nsSelector.Matches(c.nsLabels[p.Namespace]) {
		return false
	}
	return t.selector.Matches(labels.Set(p.Labels))
}

func requiredAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

func requiredAntiAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

type topoPair struct{ key, value string }

// podAffinity: the node must have every term's topology key, and for
// every term some pod in the node's domain must match. As in
// kube-scheduler, a pod counts only if it matches all the terms at once.
// The first pod of a group with affinity to itself has nobody to join: if
// no pod anywhere matches all the terms and the pod matches them itself,
// it may go on any node that has the topology keys.
func (j *judgement) podAffinity() {
	terms, err := parseTerms(j.pod, requiredAffinity(j.pod))
	if err != nil {
		j.fail(RulePodAffinity, "a term does not parse: %v", err)
		return
	}
	if len(terms) == 0 {
		return
	}
	for _, t := range terms {
		if _, ok := j.node.Labels[t.topologyKey]; !ok {
			j.fail(RulePodAffinity, "the node has no %s label, which a required pod affinity term spreads over", t.topologyKey)
			return
		}
	}
	counts := map[topoPair]int{}
	for _, p := range j.others {
		if !j.matchesAll(terms, p) {
			continue
		}
		m := j.nodes[p.Spec.NodeName]
		for _, t := range terms {
			if v, ok := m.Labels[t.topologyKey]; ok {
				counts[topoPair{t.topologyKey, v}]++
			}
		}
	}
	var missing []string
	for _, t := range terms {
		if counts[topoPair{t.topologyKey, j.node.Labels[t.topologyKey]}] == 0 {
			missing = append(missing, fmt.Sprintf("%s=%s", t.topologyKey, j.node.Labels[t.topologyKey]))
		}
	}
	if len(missing) == 0 {
		return
	}
	if len(counts) == 0 && j.matchesAll(terms, j.pod) {
		return // the first pod of its group
	}
	j.fail(RulePodAffinity, "no pod matching all the required affinity terms in %s", strings.Join(missing, ", "))
}

func (c *cluster) matchesAll(terms []term, p *corev1.Pod) bool {
	for _, t := range terms {
		if !c.matches(t, p) {
			return false
		}
	}
	return len(terms) > 0
}

// podAntiAffinity: no pod matching a term in the node's domain of that
// term. A node without the term's topology key is in no domain, so the
// term does not keep the pod off it.
func (j *judgement) podAntiAffinity() {
	terms, err := parseTerms(j.pod, requiredAntiAffinity(j.pod))
	if err != nil {
		j.fail(RulePodAntiAffinity, "a term does not parse: %v", err)
		return
	}
	for _, t := range terms {
		v, ok := j.node.Labels[t.topologyKey]
		if !ok {
			continue
		}
		for _, p := range j.others {
			if mv, ok := j.nodes[p.Spec.NodeName].Labels[t.topologyKey]; ok && mv == v && j.matches(t, p) {
				j.fail(RulePodAntiAffinity, "%s on %s matches a required anti-affinity term in %s=%s", key(p), p.Spec.NodeName, t.topologyKey, v)
			}
		}
	}
}

// existingAntiAffinity: the pods already placed keep the incoming pod out
// of their domains when one of their required anti-affinity terms matches
// it (the term's namespaces are the placed pod's, and its
// namespaceSelector is matched against the incoming pod's namespace).
func (j *judgement) existingAntiAffinity() {
	for _, p := range j.others {
		terms, err := parseTerms(p, requiredAntiAffinity(p))
		if err != nil {
			continue // kube-scheduler could not have placed it either; nothing to enforce
		}
		m := j.nodes[p.Spec.NodeName]
		for _, t := range terms {
			mv, ok := m.Labels[t.topologyKey]
			if !ok {
				continue
			}
			if v, ok := j.node.Labels[t.topologyKey]; ok && v == mv && j.matches(t, j.pod) {
				j.fail(RuleExistingAntiAffinity, "%s on %s has a required anti-affinity term that matches this pod in %s=%s", key(p), p.Spec.NodeName, t.topologyKey, v)
			}
		}
	}
}

// constraint is a DoNotSchedule topology spread constraint, parsed.
type constraint struct {
	src          corev1.TopologySpreadConstraint
	selector     labels.Selector
	minDomains   int
	honorAff     bool // nodeAffinityPolicy Honor (the default)
	honorTaints  bool // nodeTaintsPolicy Honor (the default is Ignore)
	selectsNoPod bool // an empty selector counts no pod (but matches the incoming one)
}

func parseConstraints(p *corev1.Pod) ([]constraint, error) {
	var out []constraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		// matchLabelKeys: the pod's own values of those keys join the
		// selector; keys the pod lacks are ignored. The API server may
		// have merged them into labelSelector already; doing it again
		// changes nothing. A nil labelSelector stays match-nothing.
		if c.LabelSelector != nil {
			for _, k := range c.MatchLabelKeys {
				if v, ok := p.Labels[k]; ok {
					r, err := labels.NewRequirement(k, "=", []string{v})
					if err != nil {
						return nil, err
					}
					sel = sel.Add(*r)
				}
			}
		}
		pc := constraint{src: c, selector: sel, minDomains: 1, honorAff: true, selectsNoPod: sel.Empty()}
		if c.MinDomains != nil {
			pc.minDomains = int(*c.MinDomains)
		}
		if c.NodeAffinityPolicy != nil && *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore {
			pc.honorAff = false
		}
		if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
			pc.honorTaints = true
		}
		out = append(out, pc)
	}
	return out, nil
}

// topologySpread: for each DoNotSchedule constraint, the pods matching its
// selector in the pod's namespace are counted per domain (value of the
// topology key) over the eligible nodes: nodes that have every
// constraint's topology key and pass the constraint's inclusion policies
// (node affinity: Honor by default; taints: Ignore by default). Then
//
//	count(node's domain) + (1 if the pod matches the selector) - min <= maxSkew
//
// where min is the smallest count over the eligible domains, or 0 when
// there are fewer eligible domains than minDomains. A node without the
// topology key never passes. Terminating pods do not count.
func (j *judgement) topologySpread() {
	cs, err := parseConstraints(j.pod)
	if err != nil {
		j.fail(RuleTopologySpread, "a constraint does not parse: %v", err)
		return
	}
	if len(cs) == 0 {
		return
	}
	counts := make([]map[string]int, len(cs))
	for i := range counts {
		counts[i] = map[string]int{}
	}
	for _, n := range j.nodeList {
		if !hasAllKeys(n, cs) {
			continue
		}
		for i, c := range cs {
			if c.honorAff && !matchesNodeAffinity(j.pod, n) {
				continue
			}
			if _, bad := untoleratedTaint(n, j.pod); c.honorTaints && bad {
				continue
			}
			counts[i][n.Labels[c.src.TopologyKey]] += j.countMatching(c, n.Name)
		}
	}
	for i, c := range cs {
		v, ok := j.node.Labels[c.src.TopologyKey]
		if !ok {
			j.fail(RuleTopologySpread, "the node has no %s label, which a DoNotSchedule constraint spreads over", c.src.TopologyKey)
			continue
		}
		// minDomains is at least 1, so with no eligible domain at all the
		// minimum is 0 too.
		minCount, first := 0, true
		for _, n := range counts[i] {
			if first || n < minCount {
				minCount, first = n, false
			}
		}
		if len(counts[i]) < c.minDomains {
			minCount = 0
		}
		self := 0
		if c.selector.Matches(labels.Set(j.pod.Labels)) {
			self = 1
		}
		if skew := counts[i][v] + self - minCount; skew > int(c.src.MaxSkew) {
			j.fail(RuleTopologySpread, "%s=%s would have skew %d (%d matching + %d self - %d min over %d eligible domains%s) > maxSkew %d",
				c.src.TopologyKey, v, skew, counts[i][v], self, minCount, len(counts[i]), minDomainsNote(c, len(counts[i])), c.src.MaxSkew)
		}
	}
}

func minDomainsNote(c constraint, domains int) string {
	if domains < c.minDomains {
		return fmt.Sprintf(", fewer than minDomains %d so min is 0", c.minDomains)
	}
	return ""
}

func hasAllKeys(n *corev1.Node, cs []constraint) bool {
	for _, c := range cs {
		if _, ok := n.Labels[c.src.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

func (j *judgement) countMatching(c constraint, node string) int {
	if c.selectsNoPod {
		return 0
	}
	n := 0
	for _, p := range j.onNode[node] {
		if p.DeletionTimestamp != nil || p.Namespace != j.pod.Namespace {
			continue
		}
		if c.selector.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}
