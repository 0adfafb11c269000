package placementcheck_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/internal/placementcheck"
	"github.com/troupe-ml/troupe/internal/testutil"
)

// The checker is the differential suite's referee, so it is tested on its
// own, on plain values: each rule with a placement it must accept and one
// it must refuse, so that a checker that accepts everything (or refuses
// everything) fails here.

const (
	zone = corev1.LabelTopologyZone
	host = corev1.LabelHostname
	ns   = "team"
)

func node(name string) *testutil.NodeBuilder { return testutil.MakeNode(name).Capacity("4", "8Gi") }

func zoned(name, z string) *corev1.Node { return node(name).Label(zone, z).Obj() }

// on is a pod already placed on a node.
func on(name, nodeName string) *testutil.PodBuilder {
	return testutil.MakePod(name, ns).NodeName(nodeName)
}

func pod() *testutil.PodBuilder { return testutil.MakePod("subject", ns) }

func web() map[string]string { return map[string]string{"app": "web"} }

func namespace(name string, labels map[string]string) *corev1.Namespace {
	l := map[string]string{corev1.LabelMetadataName: name}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

type checkCase struct {
	name       string
	nodes      []*corev1.Node
	pods       []*corev1.Pod
	namespaces []*corev1.Namespace
	storage    storage
	pod        *corev1.Pod
	on         string
	// wantRules are the rules broken, in the checker's order; none means
	// the placement is allowed.
	wantRules []string
	// wantDetail, if set, must be in one violation's detail.
	wantDetail string
}

func runCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placementcheck.State{Nodes: tc.nodes, Pods: tc.pods, Namespaces: tc.namespaces,
				Claims: tc.storage.claims, PersistentVolumes: tc.storage.volumes, StorageClasses: tc.storage.classes, CSINodes: tc.storage.csiNodes}
			got := placementcheck.CheckOn(s, tc.pod, tc.on)
			var rules []string
			for _, v := range got {
				rules = append(rules, v.Rule)
			}
			if !slices.Equal(rules, tc.wantRules) {
				t.Fatalf("rules broken: %q, want %q; violations:\n%s", rules, tc.wantRules, list(got))
			}
			if tc.wantDetail != "" && !slices.ContainsFunc(got, func(v placementcheck.Violation) bool { return strings.Contains(v.Detail, tc.wantDetail) }) {
				t.Errorf("no violation says %q:\n%s", tc.wantDetail, list(got))
			}
		})
	}
}

func list(vs []placementcheck.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}

func TestNodeRules(t *testing.T) {
	a := node("a").Label("pool", "gpu").Label("size", "8").Obj()
	runCases(t, []checkCase{
		{name: "a node that is not there", nodes: []*corev1.Node{a}, pod: pod().Obj(), on: "b",
			wantRules: []string{placementcheck.RuleNodeExists}},
		{name: "a gated pod is never placed", nodes: []*corev1.Node{a}, on: "a",
			pod: func() *corev1.Pod {
				p := pod().Obj()
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
				return p
			}(), wantRules: []string{placementcheck.RuleSchedulingGates}},
		{name: "cordoned", nodes: []*corev1.Node{node("a").Unschedulable().Obj()}, pod: pod().Obj(), on: "a",
			wantRules: []string{placementcheck.RuleNodeUnschedulable}},
		{name: "cordoned, tolerated by key", nodes: []*corev1.Node{node("a").Unschedulable().Obj()}, on: "a",
			pod: pod().Toleration(testutil.Tolerate(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule)).Obj()},
		{name: "cordoned, tolerated by an empty key with Exists", nodes: []*corev1.Node{node("a").Unschedulable().Obj()}, on: "a",
			pod: pod().Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists}).Obj()},
		{name: "nodeSelector matches", nodes: []*corev1.Node{a}, pod: pod().NodeSelector("pool", "gpu").Obj(), on: "a"},
		{name: "nodeSelector does not match", nodes: []*corev1.Node{a}, pod: pod().NodeSelector("pool", "cpu").Obj(), on: "a",
			wantRules: []string{placementcheck.RuleNodeAffinity}},
		{name: "affinity In", nodes: []*corev1.Node{a}, on: "a",
			pod: pod().RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("pool", corev1.NodeSelectorOpIn, "cpu", "gpu"))).Obj()},
		{name: "affinity NotIn", nodes: []*corev1.Node{a}, on: "a",
			pod:       pod().RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("pool", corev1.NodeSelectorOpNotIn, "gpu"))).Obj(),
			wantRules: []string{placementcheck.RuleNodeAffinity}},
		{name: "affinity Exists", nodes: []*corev1.Node{a}, on: "a",
			pod: pod().RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("pool", corev1.NodeSelectorOpExists))).Obj()},
		{name: "affinity DoesNotExist", nodes: []*corev1.Node{a}, on: "a",
			pod:       pod().RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("pool", corev1.NodeSelectorOpDoesNotExist))).Obj(),
			wantRules: []string{placementcheck.RuleNodeAffinity}},
		{name: "affinity Gt", nodes: []*corev1.Node{a}, on: "a",
			pod: pod().RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("size", corev1.NodeSelectorOpGt, "4"))).Obj()},
		{name: "affinity Lt", nodes: []*corev1.Node{a}, on: "a",
			pod:       pod().RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("size", corev1.NodeSelectorOpLt, "8"))).Obj(),
			wantRules: []string{placementcheck.RuleNodeAffinity}},
		{name: "affinity terms are ORed", nodes: []*corev1.Node{a}, on: "a",
			pod: pod().RequiredNodeAffinity(
				testutil.NodeTerm(testutil.NodeReq("pool", corev1.NodeSelectorOpIn, "cpu")),
				testutil.NodeNameTerm(corev1.NodeSelectorOpIn, "a")).Obj()},
		{name: "affinity matchFields NotIn", nodes: []*corev1.Node{a}, on: "a",
			pod:       pod().RequiredNodeAffinity(testutil.NodeNameTerm(corev1.NodeSelectorOpNotIn, "a")).Obj(),
			wantRules: []string{placementcheck.RuleNodeAffinity}},
		{name: "nodeSelector and affinity must both match", nodes: []*corev1.Node{a}, on: "a",
			pod: pod().NodeSelector("pool", "cpu").
				RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("pool", corev1.NodeSelectorOpExists))).Obj(),
			wantRules: []string{placementcheck.RuleNodeAffinity}},
	})
}

func TestTaints(t *testing.T) {
	tainted := func(effect corev1.TaintEffect) []*corev1.Node {
		return []*corev1.Node{node("a").Taint("dedicated", "ml", effect).Obj()}
	}
	runCases(t, []checkCase{
		{name: "NoSchedule untolerated", nodes: tainted(corev1.TaintEffectNoSchedule), pod: pod().Obj(), on: "a",
			wantRules: []string{placementcheck.RuleTaintToleration}, wantDetail: "dedicated=ml:NoSchedule"},
		{name: "NoExecute untolerated", nodes: tainted(corev1.TaintEffectNoExecute), pod: pod().Obj(), on: "a",
			wantRules: []string{placementcheck.RuleTaintToleration}},
		{name: "PreferNoSchedule never keeps a pod off", nodes: tainted(corev1.TaintEffectPreferNoSchedule), pod: pod().Obj(), on: "a"},
		{name: "tolerated by value", nodes: tainted(corev1.TaintEffectNoSchedule), on: "a",
			pod: pod().Toleration(testutil.Tolerate("dedicated", "ml", corev1.TaintEffectNoSchedule)).Obj()},
		{name: "wrong value", nodes: tainted(corev1.TaintEffectNoSchedule), on: "a",
			pod:       pod().Toleration(testutil.Tolerate("dedicated", "web", corev1.TaintEffectNoSchedule)).Obj(),
			wantRules: []string{placementcheck.RuleTaintToleration}},
		{name: "wrong effect", nodes: tainted(corev1.TaintEffectNoExecute), on: "a",
			pod:       pod().Toleration(testutil.Tolerate("dedicated", "ml", corev1.TaintEffectNoSchedule)).Obj(),
			wantRules: []string{placementcheck.RuleTaintToleration}},
		{name: "an empty effect tolerates every effect", nodes: tainted(corev1.TaintEffectNoExecute), on: "a",
			pod: pod().Toleration(testutil.Tolerate("dedicated", "", "")).Obj()},
	})
}

func TestResources(t *testing.T) {
	gpuNode := node("a").GPU(2).Obj()
	withInit := func(init corev1.Container) *corev1.Pod {
		p := pod().Request(corev1.ResourceCPU, "1").Obj()
		p.Spec.InitContainers = []corev1.Container{init}
		return p
	}
	initCPU := func(cpu string, sidecar bool) corev1.Container {
		c := corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
		if sidecar {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		return c
	}
	runCases(t, []checkCase{
		{name: "fits exactly", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{on("x", "a").Request(corev1.ResourceCPU, "2").Obj()},
			pod:  pod().Request(corev1.ResourceCPU, "2").Obj()},
		{name: "one millicore too many", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods:      []*corev1.Pod{on("x", "a").Request(corev1.ResourceCPU, "2").Obj()},
			pod:       pod().Request(corev1.ResourceCPU, "2001m").Obj(),
			wantRules: []string{placementcheck.RuleNodeResourcesFit}, wantDetail: "cpu"},
		{name: "a finished pod takes nothing", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := on("x", "a").Request(corev1.ResourceCPU, "4").Obj()
				p.Status.Phase = corev1.PodSucceeded
				return p
			}()},
			pod: pod().Request(corev1.ResourceCPU, "1").Obj()},
		{name: "only what the pod requests is checked", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{on("x", "a").Request(corev1.ResourceMemory, "16Gi").Obj()},
			pod:  pod().Request(corev1.ResourceCPU, "1").Obj()},
		{name: "an extended resource the node lacks", nodes: []*corev1.Node{node("a").Obj()}, on: "a",
			pod: pod().Request(testutil.GPU, "1").Obj(), wantRules: []string{placementcheck.RuleNodeResourcesFit}},
		{name: "GPUs fit", nodes: []*corev1.Node{gpuNode}, on: "a", pod: pod().Request(testutil.GPU, "2").Obj()},
		{name: "pod count", nodes: []*corev1.Node{node("a").Resource(corev1.ResourcePods, "2").Obj()}, on: "a",
			pods:      []*corev1.Pod{on("x", "a").Obj(), on("y", "a").Obj()},
			pod:       pod().Obj(),
			wantRules: []string{placementcheck.RuleNodeResourcesFit}, wantDetail: "3 pods"},
		{name: "the judged pod is not counted twice", nodes: []*corev1.Node{node("a").Resource(corev1.ResourcePods, "1").Obj()}, on: "a",
			pods: []*corev1.Pod{pod().NodeName("a").Obj()}, pod: pod().NodeName("a").Obj()},
		{name: "an init container bigger than the containers", nodes: []*corev1.Node{gpuNode}, on: "a",
			pod: withInit(initCPU("5", false)), wantRules: []string{placementcheck.RuleNodeResourcesFit}},
		{name: "a sidecar adds to the containers", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{on("x", "a").Request(corev1.ResourceCPU, "1").Obj()},
			pod:  withInit(initCPU("2500m", true)), wantRules: []string{placementcheck.RuleNodeResourcesFit}},
		{name: "a plain init container ends before the containers", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{on("x", "a").Request(corev1.ResourceCPU, "1").Obj()},
			pod:  withInit(initCPU("2500m", false))},
		{name: "a pod resized down still holds what it runs with", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{resized("1", "3", "3", "")},
			pod:  pod().Request(corev1.ResourceCPU, "2").Obj(), wantRules: []string{placementcheck.RuleNodeResourcesFit}},
		{name: "a pod resized down, once actuated, holds what its spec says", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{resized("1", "1", "1", "")},
			pod:  pod().Request(corev1.ResourceCPU, "2").Obj()},
		{name: "a pod resized up holds the new size before it is actuated", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{resized("3", "1", "1", "")},
			pod:  pod().Request(corev1.ResourceCPU, "2").Obj(), wantRules: []string{placementcheck.RuleNodeResourcesFit}},
		{name: "an infeasible resize up holds only what was allocated", nodes: []*corev1.Node{gpuNode}, on: "a",
			pods: []*corev1.Pod{resized("3", "1", "1", corev1.PodReasonInfeasible)},
			pod:  pod().Request(corev1.ResourceCPU, "2").Obj()},
	})
}

// resized is a pod on node a whose container's spec asks for spec CPUs,
// while its status reports actuated CPUs running and allocated CPUs
// allocated, as during an in-place resize; pending, if set, is the reason
// of its PodResizePending condition.
func resized(spec, actuated, allocated, pending string) *corev1.Pod {
	p := on("resized", "a").Request(corev1.ResourceCPU, spec).Obj()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:               "main",
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(actuated)}},
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(allocated)},
	}}
	if pending != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: pending}}
	}
	return p
}

func TestHostPorts(t *testing.T) {
	a := node("a").Obj()
	withIP := func(b *testutil.PodBuilder, ip string) *corev1.Pod {
		p := b.HostPort(8080, corev1.ProtocolTCP).Obj()
		p.Spec.Containers[0].Ports[0].HostIP = ip
		return p
	}
	runCases(t, []checkCase{
		{name: "the same port", nodes: []*corev1.Node{a}, on: "a",
			pods: []*corev1.Pod{on("x", "a").HostPort(8080, corev1.ProtocolTCP).Obj()},
			pod:  pod().HostPort(8080, "").Obj(), wantRules: []string{placementcheck.RuleNodePorts}},
		{name: "another protocol", nodes: []*corev1.Node{a}, on: "a",
			pods: []*corev1.Pod{on("x", "a").HostPort(8080, corev1.ProtocolUDP).Obj()},
			pod:  pod().HostPort(8080, corev1.ProtocolTCP).Obj()},
		{name: "another port", nodes: []*corev1.Node{a}, on: "a",
			pods: []*corev1.Pod{on("x", "a").HostPort(8081, corev1.ProtocolTCP).Obj()},
			pod:  pod().HostPort(8080, corev1.ProtocolTCP).Obj()},
		{name: "two different IPs", nodes: []*corev1.Node{a}, on: "a",
			pods: []*corev1.Pod{withIP(on("x", "a"), "10.0.0.1")},
			pod:  withIP(pod(), "10.0.0.2")},
		{name: "one IP against every IP", nodes: []*corev1.Node{a}, on: "a",
			pods: []*corev1.Pod{withIP(on("x", "a"), "10.0.0.1")},
			pod:  pod().HostPort(8080, corev1.ProtocolTCP).Obj(), wantRules: []string{placementcheck.RuleNodePorts}},
	})
}

func TestPodAffinity(t *testing.T) {
	nodes := []*corev1.Node{zoned("a", "z1"), zoned("b", "z1"), zoned("c", "z2"), node("nozone").Obj()}
	webIn := func(nodeName string) *corev1.Pod { return on("web-"+nodeName, nodeName).Labels(web()).Obj() }
	toWeb := func(key string) *testutil.PodBuilder { return pod().PodAffinity(testutil.PodTerm(key, web()).Obj()) }
	runCases(t, []checkCase{
		{name: "a match in the zone", nodes: nodes, pods: []*corev1.Pod{webIn("b")}, pod: toWeb(zone).Obj(), on: "a"},
		{name: "a match only in another zone", nodes: nodes, pods: []*corev1.Pod{webIn("c")}, pod: toWeb(zone).Obj(), on: "a",
			wantRules: []string{placementcheck.RulePodAffinity}},
		{name: "hostname: a match on another node of the zone is not enough", nodes: nodes, pods: []*corev1.Pod{webIn("b")},
			pod: toWeb(host).Obj(), on: "a", wantRules: []string{placementcheck.RulePodAffinity}},
		{name: "a node without the topology key", nodes: nodes, pods: []*corev1.Pod{webIn("nozone")}, pod: toWeb(zone).Obj(), on: "nozone",
			wantRules: []string{placementcheck.RulePodAffinity}, wantDetail: "no " + zone + " label"},
		{name: "first pod: nothing matches anywhere and the pod matches itself", nodes: nodes,
			pod: toWeb(zone).Labels(web()).Obj(), on: "c"},
		{name: "first pod: but not on a node without the key", nodes: nodes,
			pod: toWeb(zone).Labels(web()).Obj(), on: "nozone", wantRules: []string{placementcheck.RulePodAffinity}},
		{name: "first pod: not if the pod does not match itself", nodes: nodes,
			pod: toWeb(zone).Obj(), on: "c", wantRules: []string{placementcheck.RulePodAffinity}},
		{name: "first pod: not once a match exists elsewhere", nodes: nodes, pods: []*corev1.Pod{webIn("c")},
			pod: toWeb(zone).Labels(web()).Obj(), on: "a", wantRules: []string{placementcheck.RulePodAffinity}},
		{name: "a pod must match every term at once", nodes: nodes, on: "a",
			pods: []*corev1.Pod{webIn("a"), on("db", "b").Label("app", "db").Obj()},
			pod: pod().PodAffinity(testutil.PodTerm(zone, web()).Obj(),
				testutil.PodTerm(zone, map[string]string{"app": "db"}).Obj()).Obj(),
			wantRules: []string{placementcheck.RulePodAffinity}},
		{name: "a match in another namespace does not count by default", nodes: nodes, on: "a",
			pods: []*corev1.Pod{testutil.MakePod("w", "other").NodeName("a").Labels(web()).Obj()},
			pod:  toWeb(zone).Obj(), wantRules: []string{placementcheck.RulePodAffinity}},
		{name: "namespaces lists the other namespace", nodes: nodes, on: "a",
			pods: []*corev1.Pod{testutil.MakePod("w", "other").NodeName("b").Labels(web()).Obj()},
			pod:  pod().PodAffinity(testutil.PodTerm(zone, web()).Namespaces("other").Obj()).Obj()},
		{name: "namespaceSelector by label", nodes: nodes, on: "a",
			namespaces: []*corev1.Namespace{namespace("other", map[string]string{"team": "ml"})},
			pods:       []*corev1.Pod{testutil.MakePod("w", "other").NodeName("b").Labels(web()).Obj()},
			pod:        pod().PodAffinity(testutil.PodTerm(zone, web()).NamespaceSelector(map[string]string{"team": "ml"}).Obj()).Obj()},
		{name: "namespaceSelector that selects another team", nodes: nodes, on: "a",
			namespaces: []*corev1.Namespace{namespace("other", map[string]string{"team": "ml"})},
			pods:       []*corev1.Pod{testutil.MakePod("w", "other").NodeName("b").Labels(web()).Obj()},
			pod:        pod().PodAffinity(testutil.PodTerm(zone, web()).NamespaceSelector(map[string]string{"team": "web"}).Obj()).Obj(),
			wantRules:  []string{placementcheck.RulePodAffinity}},
		{name: "an empty namespaceSelector selects every namespace", nodes: nodes, on: "a",
			pods: []*corev1.Pod{testutil.MakePod("w", "other").NodeName("b").Labels(web()).Obj()},
			pod:  pod().PodAffinity(testutil.PodTerm(zone, web()).NamespaceSelector(map[string]string{}).Obj()).Obj()},
		{name: "preferred terms are no requirement", nodes: nodes, on: "a",
			pod: pod().PreferredPodAffinity(10, testutil.PodTerm(zone, web()).Obj()).Obj()},
	})
}

func TestPodAntiAffinity(t *testing.T) {
	nodes := []*corev1.Node{zoned("a", "z1"), zoned("b", "z1"), zoned("c", "z2"), node("nozone").Obj()}
	webIn := func(nodeName string) *corev1.Pod { return on("web-"+nodeName, nodeName).Labels(web()).Obj() }
	awayFromWeb := func(key string) *corev1.Pod { return pod().PodAntiAffinity(testutil.PodTerm(key, web()).Obj()).Obj() }
	// A placed pod that keeps web pods out of its zone.
	keeper := func(nodeName, namespace string) *corev1.Pod {
		return testutil.MakePod("keeper", namespace).NodeName(nodeName).PodAntiAffinity(testutil.PodTerm(zone, web()).Obj()).Obj()
	}
	runCases(t, []checkCase{
		{name: "a match on the node", nodes: nodes, pods: []*corev1.Pod{webIn("a")}, pod: awayFromWeb(host), on: "a",
			wantRules: []string{placementcheck.RulePodAntiAffinity}},
		{name: "a match on another node", nodes: nodes, pods: []*corev1.Pod{webIn("b")}, pod: awayFromWeb(host), on: "a"},
		{name: "a match in the zone", nodes: nodes, pods: []*corev1.Pod{webIn("b")}, pod: awayFromWeb(zone), on: "a",
			wantRules: []string{placementcheck.RulePodAntiAffinity}},
		{name: "a node without the key is in no zone", nodes: nodes, pods: []*corev1.Pod{webIn("nozone")}, pod: awayFromWeb(zone), on: "nozone"},
		{name: "existing: a placed pod's term matches the incoming pod in its zone", nodes: nodes,
			pods: []*corev1.Pod{keeper("b", ns)}, pod: pod().Labels(web()).Obj(), on: "a",
			wantRules: []string{placementcheck.RuleExistingAntiAffinity}},
		{name: "existing: another zone", nodes: nodes, pods: []*corev1.Pod{keeper("c", ns)}, pod: pod().Labels(web()).Obj(), on: "a"},
		{name: "existing: the term does not match the incoming pod", nodes: nodes, pods: []*corev1.Pod{keeper("b", ns)}, pod: pod().Obj(), on: "a"},
		{name: "existing: the term looks in its owner's namespace only", nodes: nodes,
			pods: []*corev1.Pod{keeper("b", "other")}, pod: pod().Labels(web()).Obj(), on: "a"},
	})
}

func TestTopologySpread(t *testing.T) {
	hosts := []*corev1.Node{zoned("a", "z1"), zoned("b", "z1"), zoned("c", "z2")}
	webOn := func(name, nodeName string) *corev1.Pod { return on(name, nodeName).Labels(web()).Obj() }
	spread := func(key string, skew int32) *testutil.SpreadBuilder { return testutil.MakeSpread(key, skew, web()) }
	subject := func(s *testutil.SpreadBuilder) *testutil.PodBuilder { return pod().Labels(web()).Spread(s.Obj()) }
	runCases(t, []checkCase{
		{name: "maxSkew 1: onto the fuller host", nodes: hosts, pods: []*corev1.Pod{webOn("w1", "a")},
			pod: subject(spread(host, 1)).Obj(), on: "a", wantRules: []string{placementcheck.RuleTopologySpread}, wantDetail: "skew 2"},
		{name: "maxSkew 1: onto an empty host", nodes: hosts, pods: []*corev1.Pod{webOn("w1", "a")},
			pod: subject(spread(host, 1)).Obj(), on: "b"},
		{name: "maxSkew 2 allows it", nodes: hosts, pods: []*corev1.Pod{webOn("w1", "a")},
			pod: subject(spread(host, 2)).Obj(), on: "a"},
		{name: "zones: z1 has 2, z2 has 0", nodes: hosts, pods: []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b")},
			pod: subject(spread(zone, 2)).Obj(), on: "a", wantRules: []string{placementcheck.RuleTopologySpread}},
		{name: "a pod that does not match its own selector adds nothing", nodes: hosts, pods: []*corev1.Pod{webOn("w1", "a")},
			pod: pod().Spread(spread(host, 1).Obj()).Obj(), on: "a"},
		{name: "ScheduleAnyway is no requirement", nodes: hosts, pods: []*corev1.Pod{webOn("w1", "a")},
			pod: subject(spread(host, 1).ScheduleAnyway()).Obj(), on: "a"},
		{name: "pods of other namespaces do not count", nodes: hosts,
			pods: []*corev1.Pod{testutil.MakePod("w1", "other").NodeName("a").Labels(web()).Obj()},
			pod:  subject(spread(host, 1)).Obj(), on: "a"},
		{name: "terminating pods do not count", nodes: hosts,
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := webOn("w1", "a")
				p.DeletionTimestamp = ptr.To(metav1.Now())
				return p
			}()},
			pod: subject(spread(host, 1)).Obj(), on: "a"},
		{name: "a node without the key never passes", nodes: append(hosts, node("nozone").Obj()),
			pod: subject(spread(zone, 1)).Obj(), on: "nozone", wantRules: []string{placementcheck.RuleTopologySpread}, wantDetail: "no " + zone},
		{name: "a node without one constraint's key is no domain for the others", on: "a",
			// nozone is an empty host, but it lacks the zone key of the
			// second constraint, so a and b are the only host domains.
			nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z1"), node("nozone").Obj()},
			pods:  []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b")},
			pod:   subject(spread(host, 1)).Spread(spread(zone, 5).Obj()).Obj()},
		{name: "minDomains above the domains: the minimum is 0", nodes: hosts, on: "a",
			pods: []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b"), webOn("w3", "c")},
			pod:  subject(spread(host, 1).MinDomains(4)).Obj(), wantRules: []string{placementcheck.RuleTopologySpread}, wantDetail: "fewer than minDomains 4"},
		{name: "minDomains met", nodes: hosts, on: "a",
			pods: []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b"), webOn("w3", "c")},
			pod:  subject(spread(host, 1).MinDomains(3)).Obj()},
		{name: "nodeAffinityPolicy Honor: nodes the pod may not use are no domains", nodes: hosts, on: "a",
			pods: []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b")},
			pod:  subject(spread(host, 1)).NodeSelector(zone, "z1").Obj()},
		{name: "nodeAffinityPolicy Ignore: they are", nodes: hosts, on: "a",
			pods:      []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b")},
			pod:       subject(spread(host, 1).NodeAffinityPolicy(corev1.NodeInclusionPolicyIgnore)).NodeSelector(zone, "z1").Obj(),
			wantRules: []string{placementcheck.RuleTopologySpread}},
		{name: "nodeTaintsPolicy Ignore (default): a tainted node is a domain", on: "a",
			nodes:     []*corev1.Node{zoned("a", "z1"), zoned("b", "z1"), node("c").Label(zone, "z2").Taint("k", "v", corev1.TaintEffectNoSchedule).Obj()},
			pods:      []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b")},
			pod:       subject(spread(host, 1)).Obj(),
			wantRules: []string{placementcheck.RuleTopologySpread}},
		{name: "nodeTaintsPolicy Honor: an untolerated tainted node is not", on: "a",
			nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z1"), node("c").Label(zone, "z2").Taint("k", "v", corev1.TaintEffectNoSchedule).Obj()},
			pods:  []*corev1.Pod{webOn("w1", "a"), webOn("w2", "b")},
			pod:   subject(spread(host, 1).NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor)).Obj()},
		{name: "matchLabelKeys: only pods of the same revision count", nodes: hosts, on: "a",
			pods: []*corev1.Pod{on("old", "a").Labels(web()).Label("rev", "1").Obj()},
			pod:  subject(spread(host, 1).MatchLabelKeys("rev")).Label("rev", "2").Obj()},
		{name: "matchLabelKeys: pods of the same revision do", nodes: hosts, on: "a",
			pods: []*corev1.Pod{on("same", "a").Labels(web()).Label("rev", "2").Obj()},
			pod:  subject(spread(host, 1).MatchLabelKeys("rev")).Label("rev", "2").Obj(), wantRules: []string{placementcheck.RuleTopologySpread}},
		{name: "an empty selector counts no pod but matches the incoming one", nodes: hosts, on: "a",
			pods: []*corev1.Pod{webOn("w1", "a"), webOn("w2", "a")},
			pod: pod().Labels(web()).Spread(corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: host,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{}}).Obj()},
	})
}

func TestNotModelled(t *testing.T) {
	inline := pod().Obj()
	inline.Spec.Volumes = []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}
	claims := []*corev1.PersistentVolumeClaim{st.MakePVC(ns, "data").Class("late").Obj(), st.MakePVC(ns, "ebs").BoundTo("ebs").Obj()}
	ebs := st.MakePV("ebs").ClaimRef(ns, "ebs").Obj()
	ebs.Spec.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-2"}
	store := storage{claims: claims, volumes: []*corev1.PersistentVolume{ebs}, classes: []*storagev1.StorageClass{st.MakeStorageClass("late", storagev1.VolumeBindingWaitForFirstConsumer)}}
	a := []*corev1.Node{node("a").Obj()}
	runCases(t, []checkCase{
		{name: "an inline in-tree disk", nodes: a, pod: inline, on: "a", wantRules: []string{placementcheck.RuleNotModelled}},
		{name: "an unbound WaitForFirstConsumer claim", nodes: a, storage: store, pod: claiming("data"), on: "a",
			wantRules: []string{placementcheck.RuleNotModelled}, wantDetail: "WaitForFirstConsumer"},
		{name: "a volume of an in-tree disk plugin", nodes: a, storage: store, pod: claiming("ebs"), on: "a",
			wantRules: []string{placementcheck.RuleNotModelled}, wantDetail: "awsElasticBlockStore"},
		{name: "resource claims", nodes: a, on: "a", pod: func() *corev1.Pod {
			p := pod().Obj()
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
			return p
		}(), wantRules: []string{placementcheck.RuleNotModelled}},
	})
}

// storage is a case's volumes.
type storage struct {
	claims   []*corev1.PersistentVolumeClaim
	volumes  []*corev1.PersistentVolume
	classes  []*storagev1.StorageClass
	csiNodes []*storagev1.CSINode
}

// claiming is the judged pod with one persistentVolumeClaim volume per
// claim, named after it.
func claiming(claims ...string) *corev1.Pod {
	b := st.MakePod(ns, "subject")
	for _, c := range claims {
		b.Claim(c, c)
	}
	return b.Obj()
}

// using is a pod on a node with persistentVolumeClaim volumes.
func using(name, nodeName string, claims ...string) *corev1.Pod {
	p := claiming(claims...)
	p.Name, p.Spec.NodeName = name, nodeName
	return p
}

func TestVolumeBinding(t *testing.T) {
	nodes := []*corev1.Node{node("a").Obj(), node("b").Obj()}
	store := storage{
		claims: []*corev1.PersistentVolumeClaim{
			st.MakePVC(ns, "local").BoundTo("local-b").Obj(),
			st.MakePVC(ns, "gone").BoundTo("nowhere").Obj(),
			st.MakePVC(ns, "going").BoundTo("plain").Terminating().Obj(),
			st.MakePVC(ns, "unbound").Class("now").Obj(),
			st.MakePVC(ns, "prebound").Class("now").PreBound("plain").Obj(),
			st.MakePVC(ns, "plain").BoundTo("plain").Obj(),
		},
		volumes: []*corev1.PersistentVolume{
			st.MakePV("local-b").Local("b", "/mnt/disk").ClaimRef(ns, "local").Obj(),
			st.MakePV("plain").CSI("csi.example.com", "h-plain").ClaimRef(ns, "plain").Obj(),
		},
		classes: []*storagev1.StorageClass{st.MakeStorageClass("now", storagev1.VolumeBindingImmediate)},
	}
	eph := st.MakePod(ns, "subject").Ephemeral("scratch", "now").Obj()
	eph.UID = "subject-uid"
	other := eph.DeepCopy()
	other.UID = "someone-else"
	ephStore := store
	ephStore.claims = append(slices.Clone(store.claims), st.EphemeralClaim(eph, "scratch").BoundTo("plain").Obj())
	runCases(t, []checkCase{
		{name: "a local volume's node", nodes: nodes, storage: store, pod: claiming("local"), on: "b"},
		{name: "not a local volume's node", nodes: nodes, storage: store, pod: claiming("local"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeBinding}, wantDetail: "node affinity"},
		{name: "a volume without node affinity goes anywhere", nodes: nodes, storage: store, pod: claiming("plain"), on: "a"},
		{name: "a claim that does not exist", nodes: nodes, storage: store, pod: claiming("missing"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeBinding}, wantDetail: "does not exist"},
		{name: "a claim bound to a volume that does not exist", nodes: nodes, storage: store, pod: claiming("gone"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeBinding}, wantDetail: `persistentvolume "nowhere", which does not exist`},
		{name: "a claim being deleted", nodes: nodes, storage: store, pod: claiming("going"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeBinding}, wantDetail: "being deleted"},
		{name: "an unbound Immediate claim", nodes: nodes, storage: store, pod: claiming("unbound"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeBinding}, wantDetail: "not bound"},
		{name: "a claim pre-bound by name, not yet confirmed by the PV controller", nodes: nodes, storage: store, pod: claiming("prebound"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeBinding}, wantDetail: "not bound"},
		{name: "an ephemeral volume's claim, the pod's own", nodes: nodes, storage: ephStore, pod: eph, on: "a"},
		{name: "an ephemeral volume's claim, another pod's", nodes: nodes, storage: ephStore, pod: other, on: "a",
			wantRules: []string{placementcheck.RuleVolumeBinding}, wantDetail: "not created for the pod"},
	})
}

func TestVolumeZone(t *testing.T) {
	store := storage{
		claims: []*corev1.PersistentVolumeClaim{st.MakePVC(ns, "z2").BoundTo("z2").Obj(), st.MakePVC(ns, "regional").BoundTo("regional").Obj(), st.MakePVC(ns, "beta").BoundTo("beta").Obj()},
		volumes: []*corev1.PersistentVolume{
			st.MakePV("z2").Label(zone, "z2").Obj(),
			st.MakePV("regional").Label(zone, "z1__z2").Obj(),
			st.MakePV("beta").Label(corev1.LabelFailureDomainBetaZone, "z2").Obj(),
		},
	}
	nodes := []*corev1.Node{zoned("a", "z1"), zoned("b", "z2"), node("plain").Obj(), node("rackonly").Label(corev1.LabelTopologyRegion, "r1").Obj()}
	runCases(t, []checkCase{
		{name: "the volume's zone", nodes: nodes, storage: store, pod: claiming("z2"), on: "b"},
		{name: "another zone", nodes: nodes, storage: store, pod: claiming("z2"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeZone}},
		{name: "one of a regional volume's zones", nodes: nodes, storage: store, pod: claiming("regional"), on: "a"},
		{name: "a beta label matches the node's GA one", nodes: nodes, storage: store, pod: claiming("beta"), on: "b"},
		{name: "a beta label, another zone", nodes: nodes, storage: store, pod: claiming("beta"), on: "a",
			wantRules: []string{placementcheck.RuleVolumeZone}},
		{name: "a node without zone or region labels passes", nodes: nodes, storage: store, pod: claiming("z2"), on: "plain"},
		{name: "a node with a region but no zone does not", nodes: nodes, storage: store, pod: claiming("z2"), on: "rackonly",
			wantRules: []string{placementcheck.RuleVolumeZone}},
	})
}

func TestReadWriteOncePod(t *testing.T) {
	store := storage{
		claims: []*corev1.PersistentVolumeClaim{
			st.MakePVC(ns, "once").AccessModes(corev1.ReadWriteOncePod).BoundTo("once").Obj(),
			st.MakePVC(ns, "shared").BoundTo("shared").Obj(),
		},
		volumes: []*corev1.PersistentVolume{st.MakePV("once").Obj(), st.MakePV("shared").Obj()},
	}
	nodes := []*corev1.Node{node("a").Obj(), node("b").Obj()}
	runCases(t, []checkCase{
		{name: "a ReadWriteOncePod claim nobody uses", nodes: nodes, storage: store, pod: claiming("once"), on: "a"},
		{name: "a ReadWriteOncePod claim in use on another node", nodes: nodes, storage: store, pod: claiming("once"), on: "a",
			pods: []*corev1.Pod{using("holder", "b", "once")}, wantRules: []string{placementcheck.RuleVolumeRestrictions}},
		{name: "a ReadWriteOncePod claim used by a pod that finished", nodes: nodes, storage: store, pod: claiming("once"), on: "a",
			pods: []*corev1.Pod{func() *corev1.Pod { p := using("done", "b", "once"); p.Status.Phase = corev1.PodSucceeded; return p }()}},
		{name: "a ReadWriteOnce claim may be shared", nodes: nodes, storage: store, pod: claiming("shared"), on: "a",
			pods: []*corev1.Pod{using("other", "a", "shared")}},
	})
}

func TestNodeVolumeLimits(t *testing.T) {
	const driver = "csi.example.com"
	store := storage{
		claims:   []*corev1.PersistentVolumeClaim{st.MakePVC(ns, "v1").BoundTo("v1").Obj(), st.MakePVC(ns, "v2").BoundTo("v2").Obj()},
		volumes:  []*corev1.PersistentVolume{st.MakePV("v1").CSI(driver, "h1").Obj(), st.MakePV("v2").CSI(driver, "h2").Obj()},
		csiNodes: []*storagev1.CSINode{st.MakeCSINode("a").Driver(driver, 1).Obj(), st.MakeCSINode("unlimited").Driver(driver, -1).Obj()},
	}
	nodes := []*corev1.Node{node("a").Obj(), node("unlimited").Obj(), node("nocsinode").Obj()}
	held := []*corev1.Pod{using("holder", "a", "v1")}
	runCases(t, []checkCase{
		{name: "within the node's limit", nodes: nodes, storage: store, pod: claiming("v2"), on: "a"},
		{name: "over the node's limit", nodes: nodes, storage: store, pod: claiming("v2"), on: "a", pods: held,
			wantRules: []string{placementcheck.RuleNodeVolumeLimits}, wantDetail: "2 volumes"},
		{name: "a volume already on the node counts once", nodes: nodes, storage: store, pod: claiming("v1"), on: "a", pods: held},
		{name: "a driver without a count has no limit", nodes: nodes, storage: store, pod: claiming("v2"), on: "unlimited",
			pods: []*corev1.Pod{using("holder", "unlimited", "v1")}},
		{name: "a node without a CSINode has no limit", nodes: nodes, storage: store, pod: claiming("v2"), on: "nocsinode",
			pods: []*corev1.Pod{using("holder", "nocsinode", "v1")}},
		{name: "two volumes of the pod over a limit of one", nodes: nodes, storage: store, pod: claiming("v1", "v2"), on: "a",
			wantRules: []string{placementcheck.RuleNodeVolumeLimits}},
	})
}

func TestCheckAndFeasibleNodes(t *testing.T) {
	nodes := []*corev1.Node{zoned("a", "z1"), zoned("b", "z1"), zoned("c", "z2")}
	s := placementcheck.State{Nodes: nodes, Pods: []*corev1.Pod{on("web", "b").Labels(web()).Obj()}}
	away := pod().PodAntiAffinity(testutil.PodTerm(zone, web()).Obj())
	if got := placementcheck.FeasibleNodes(s, away.Obj()); !slices.Equal(got, []string{"c"}) {
		t.Errorf("FeasibleNodes = %v, want [c]", got)
	}
	if got := placementcheck.Check(s, away.Obj()); len(got) != 1 || got[0].Rule != placementcheck.RuleNodeExists {
		t.Errorf("Check of an unbound pod = %v, want one NodeExists violation", got)
	}
	bound := away.NodeName("a").Obj()
	s.Pods = append(s.Pods, bound)
	if got := placementcheck.Check(s, bound); len(got) != 1 || got[0].Rule != placementcheck.RulePodAntiAffinity || got[0].Node != "a" || got[0].Pod != ns+"/subject" {
		t.Errorf("Check = %v, want one anti-affinity violation of team/subject on a", got)
	}
}
