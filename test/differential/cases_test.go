package differential

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/internal/testutil"
)

const (
	zone = corev1.LabelTopologyZone
	host = corev1.LabelHostname
	rack = "example.com/rack"
	pool = "example.com/pool"
)

// Builders for the cases' objects, in the scenario's local names.

// node is a node with 4 CPUs and 8Gi, room for 110 pods, labelled with
// its hostname.
func node(name string) *testutil.NodeBuilder { return testutil.MakeNode(name).Capacity("4", "8Gi") }

// inZone is a node labelled with a zone.
func inZone(name, z string) *testutil.NodeBuilder { return node(name).Label(zone, z) }

// bg is a background pod already on a node, in the case's namespace.
func bg(name, nodeName string) *testutil.PodBuilder {
	return testutil.MakePod(name, "").NodeName(nodeName)
}

// busy is a background pod that only takes CPU. Cases use it to make the
// node a rule requires the fuller one, so that a scheduler that ignores
// the rule (and prefers emptier nodes) picks another: the case then fails
// for the rule, not by luck.
func busy(name, nodeName, cpu string) *corev1.Pod {
	return bg(name, nodeName).Label("role", "filler").Request(corev1.ResourceCPU, cpu).Obj()
}

// finished marks a background pod that has succeeded: it takes nothing.
func finished(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodSucceeded
	return p
}

// terminating marks a background pod that is being deleted: until it is
// gone, it still holds what it requested.
func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{}
	return p
}

// resizing marks a running background pod as resized in place: its spec
// asks for specCPU, while the kubelet reports it running with (and having
// allocated) runningCPU, as until it has applied the resize.
func resizing(p *corev1.Pod, runningCPU string) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	q := resource.MustParse(runningCPU)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:               p.Spec.Containers[0].Name,
		Image:              p.Spec.Containers[0].Image,
		State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		Ready:              true,
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q}},
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: q},
	}}
	return p
}

func subject() *testutil.PodBuilder { return testutil.MakePod("subject", "") }

func app(name string) map[string]string { return map[string]string{"app": name} }

func claims(bs ...*st.PVCWrapper) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, len(bs))
	for i, b := range bs {
		out[i] = b.Obj()
	}
	return out
}

func volumes(bs ...*st.PVWrapper) []*corev1.PersistentVolume {
	out := make([]*corev1.PersistentVolume, len(bs))
	for i, b := range bs {
		out[i] = b.Obj()
	}
	return out
}

func csiNodes(bs ...*st.CSINodeWrapper) []*storagev1.CSINode {
	out := make([]*storagev1.CSINode, len(bs))
	for i, b := range bs {
		out[i] = b.Obj()
	}
	return out
}

func nodes(bs ...*testutil.NodeBuilder) []*corev1.Node {
	out := make([]*corev1.Node, len(bs))
	for i, b := range bs {
		out[i] = b.Obj()
	}
	return out
}

func pods(ps ...*corev1.Pod) []*corev1.Pod { return ps }

func web(name, nodeName string) *corev1.Pod { return bg(name, nodeName).Labels(app("web")).Obj() }

// The hand-written single-pod cases: each rule, and its edges, with the
// decision kube-scheduler must make (the premise).
func singlePodCases() []scenario {
	var cases []scenario
	add := func(group string, scs ...scenario) {
		for _, sc := range scs {
			sc.name = group + "/" + sc.name
			cases = append(cases, sc)
		}
	}

	add("resources",
		scenario{name: "cpu fits only where there is room",
			nodes:      nodes(node("a"), node("b")),
			background: pods(busy("f1", "a", "3"), busy("f2", "b", "1")),
			pod:        subject().Request(corev1.ResourceCPU, "2").Obj(), want: placedOn("b")},
		scenario{name: "cpu fits nowhere",
			nodes:      nodes(node("a"), node("b")),
			background: pods(busy("f1", "a", "3"), busy("f2", "b", "3")),
			pod:        subject().Request(corev1.ResourceCPU, "2").Obj(), want: refused()},
		scenario{name: "memory exactly fills the node",
			nodes:      nodes(node("a")),
			background: pods(bg("m", "a").Request(corev1.ResourceMemory, "6Gi").Obj()),
			pod:        subject().Request(corev1.ResourceMemory, "2Gi").Obj(), want: placedOn("a")},
		scenario{name: "gpu only on the gpu node with GPUs left",
			nodes:      nodes(node("cpu"), node("gpu1").GPU(2), node("gpu2").GPU(2)),
			background: pods(bg("g", "gpu1").Request(testutil.GPU, "2").Obj()),
			pod:        subject().Request(testutil.GPU, "2").Obj(), want: placedOn("gpu2")},
		scenario{name: "too many pods",
			nodes: nodes(node("a").Resource(corev1.ResourcePods, "2"),
				node("b").Taint("dedicated", "other", corev1.TaintEffectNoSchedule)),
			background: pods(bg("p1", "a").Obj(), bg("p2", "a").Obj()),
			pod:        subject().Obj(), want: refused()},
		scenario{name: "a finished pod frees what it requested",
			nodes:      nodes(node("a")),
			background: pods(finished(busy("done", "a", "4"))),
			pod:        subject().Request(corev1.ResourceCPU, "2").Obj(), want: placedOn("a")},
		scenario{name: "a finished pod does not count against the pod limit",
			nodes:      nodes(node("a").Resource(corev1.ResourcePods, "3"), node("b").Taint("dedicated", "other", corev1.TaintEffectNoSchedule)),
			background: pods(finished(bg("done1", "a").Obj()), finished(bg("done2", "a").Obj()), bg("p", "a").Obj()),
			pod:        subject().Obj(), want: placedOn("a")},
		scenario{name: "a terminating pod still holds what it requested",
			nodes:      nodes(node("a"), node("b").Capacity("8", "8Gi")),
			background: pods(terminating(busy("going", "a", "3")), busy("f", "b", "6")),
			pod:        subject().Request(corev1.ResourceCPU, "2").Obj(), want: placedOn("b")},
		scenario{name: "a pod resized down holds what it runs with until the kubelet applies it",
			// Its spec now asks for 1 CPU; it still runs with 3.
			nodes:      nodes(node("a"), node("b").Taint("dedicated", "other", corev1.TaintEffectNoSchedule)),
			background: pods(resizing(busy("shrinking", "a", "1"), "3")),
			pod:        subject().Request(corev1.ResourceCPU, "2").Obj(), want: refused()},
		scenario{name: "a pod resized up holds its new size at once",
			nodes:      nodes(node("a"), node("b").Taint("dedicated", "other", corev1.TaintEffectNoSchedule)),
			background: pods(resizing(busy("growing", "a", "3"), "1")),
			pod:        subject().Request(corev1.ResourceCPU, "2").Obj(), want: refused()},
		scenario{name: "an init container's request counts while it runs",
			// a has 2.5 CPUs free and is the emptier; the init container
			// needs 3.
			nodes:      nodes(node("a"), node("b").Capacity("8", "8Gi")),
			background: pods(busy("f1", "a", "1500m"), busy("f2", "b", "4")),
			pod:        subject().Request(corev1.ResourceCPU, "1").InitContainer("3", false).Obj(), want: placedOn("b")},
		scenario{name: "a sidecar's request adds to the containers'",
			nodes:      nodes(node("a"), node("b").Capacity("8", "8Gi")),
			background: pods(busy("f1", "a", "1500m"), busy("f2", "b", "4")),
			pod:        subject().Request(corev1.ResourceCPU, "1500m").InitContainer("1500m", true).Obj(), want: placedOn("b")},
		scenario{name: "ephemeral storage on a node that declares none",
			nodes:      nodes(node("a"), node("b").Resource(corev1.ResourceEphemeralStorage, "100Gi")),
			background: pods(busy("f", "b", "2")),
			pod:        subject().Request(corev1.ResourceEphemeralStorage, "1Gi").Obj(), want: placedOn("b")},
		scenario{name: "a node that declares no pod capacity takes no pod",
			nodes: nodes(node("a").Unset(corev1.ResourcePods), node("b").Taint("dedicated", "other", corev1.TaintEffectNoSchedule)),
			pod:   subject().Obj(), want: refused()},
		scenario{name: "allocatable, not capacity",
			nodes: nodes(node("a").Capacity("8", "8Gi").Allocatable(corev1.ResourceCPU, "4")),
			pod:   subject().Request(corev1.ResourceCPU, "5").Obj(), want: refused()},
		scenario{name: "hugepages",
			nodes: nodes(node("a").Resource("hugepages-2Mi", "8Mi"), node("b")),
			pod: subject().Request(corev1.ResourceMemory, "1Gi").Request("hugepages-2Mi", "4Mi").
				Limit(corev1.ResourceMemory, "1Gi").Obj(), want: placedOn("a")},
		scenario{name: "an extended resource other than GPUs",
			nodes:      nodes(node("a").Resource("example.com/fpga", "1"), node("b").Resource("example.com/fpga", "2")),
			background: pods(bg("x", "a").Request("example.com/fpga", "1").Obj(), busy("f", "b", "2")),
			pod:        subject().Request("example.com/fpga", "1").Obj(), want: placedOn("b")},
		scenario{name: "a node reporting Ready=False without a taint still takes pods",
			// kube-scheduler reads taints, not conditions: the node
			// lifecycle controller turns a condition into a taint.
			nodes:    nodes(node("a"), node("b").Taint("dedicated", "other", corev1.TaintEffectNoSchedule)),
			notReady: []string{"a"},
			pod:      subject().Obj(), want: placedOn("a")},
		scenario{name: "an overcommitted resource the pod does not ask for does not matter",
			nodes:      nodes(node("a")),
			background: pods(bg("m", "a").Request(corev1.ResourceMemory, "12Gi").Obj()),
			pod:        subject().Request(corev1.ResourceCPU, "1").Obj(), want: placedOn("a")},
	)

	// Nodes change after they joined: a scheduler must decide on what
	// they are now, not on what it saw first.
	add("node-changes",
		scenario{name: "cordoned after it joined",
			nodes: nodes(node("a"), node("b")), background: pods(busy("f", "b", "2")),
			changes: map[string]func(*corev1.Node){"a": func(n *corev1.Node) { n.Spec.Unschedulable = true }},
			pod:     subject().Obj(), want: placedOn("b")},
		scenario{name: "tainted after it joined",
			nodes: nodes(node("a"), node("b")), background: pods(busy("f", "b", "2")),
			changes: map[string]func(*corev1.Node){"a": func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
			}},
			pod: subject().Obj(), want: placedOn("b")},
		scenario{name: "untainted after it joined",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule), node("b")), background: pods(busy("f", "b", "4")),
			changes: map[string]func(*corev1.Node){"a": func(n *corev1.Node) { n.Spec.Taints = nil }},
			pod:     subject().Request(corev1.ResourceCPU, "1").Obj(), want: placedOn("a")},
		scenario{name: "relabelled after it joined",
			nodes: nodes(node("a").Label(pool, "gpu"), node("b").Label(pool, "gpu")), background: pods(busy("f", "b", "2")),
			changes: map[string]func(*corev1.Node){"a": func(n *corev1.Node) { n.Labels[pool] = "cpu" }},
			pod:     subject().NodeSelector(pool, "gpu").Obj(), want: placedOn("b")},
		scenario{name: "allocatable shrunk after it joined",
			nodes: nodes(node("a"), node("b")), background: pods(busy("f", "b", "2")),
			changes: map[string]func(*corev1.Node){"a": func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("1") }},
			pod:     subject().Request(corev1.ResourceCPU, "2").Obj(), want: placedOn("b")},
	)

	add("node-selector",
		scenario{name: "matches one node",
			nodes: nodes(node("a").Label(pool, "cpu"), node("b").Label(pool, "gpu")),
			pod:   subject().NodeSelector(pool, "gpu").Obj(), want: placedOn("b")},
		scenario{name: "matches none",
			nodes: nodes(node("a").Label(pool, "cpu"), node("b").Label(pool, "gpu")),
			pod:   subject().NodeSelector(pool, "tpu").Obj(), want: refused()},
	)

	nodeAff := func(reqs ...corev1.NodeSelectorRequirement) *corev1.Pod {
		return subject().RequiredNodeAffinity(testutil.NodeTerm(reqs...)).Obj()
	}
	sized := nodes(node("a").Label(pool, "cpu").Label("cores", "8"), node("b").Label(pool, "gpu").Label("cores", "64"), node("c"))
	add("node-affinity",
		scenario{name: "In", nodes: sized, pod: nodeAff(testutil.NodeReq(pool, corev1.NodeSelectorOpIn, "gpu", "tpu")), want: placedOn("b")},
		scenario{name: "NotIn (a node without the label passes)", nodes: sized,
			pod: nodeAff(testutil.NodeReq(pool, corev1.NodeSelectorOpNotIn, "cpu", "gpu")), want: placedOn("c")},
		scenario{name: "Exists", nodes: sized,
			pod: nodeAff(testutil.NodeReq(pool, corev1.NodeSelectorOpExists), testutil.NodeReq(pool, corev1.NodeSelectorOpNotIn, "gpu")), want: placedOn("a")},
		scenario{name: "DoesNotExist", nodes: sized, pod: nodeAff(testutil.NodeReq(pool, corev1.NodeSelectorOpDoesNotExist)), want: placedOn("c")},
		scenario{name: "Gt", nodes: sized, pod: nodeAff(testutil.NodeReq("cores", corev1.NodeSelectorOpGt, "16")), want: placedOn("b")},
		scenario{name: "Lt", nodes: sized, pod: nodeAff(testutil.NodeReq("cores", corev1.NodeSelectorOpLt, "16")), want: placedOn("a")},
		scenario{name: "Gt matches nothing", nodes: sized, pod: nodeAff(testutil.NodeReq("cores", corev1.NodeSelectorOpGt, "64")), want: refused()},
		scenario{name: "matchFields metadata.name", nodes: sized,
			pod: subject().RequiredNodeAffinity(testutil.NodeNameTerm(corev1.NodeSelectorOpIn, "c")).Obj(), want: placedOn("c")},
		scenario{name: "matchFields metadata.name NotIn", nodes: sized,
			pod: subject().RequiredNodeAffinity(testutil.NodeNameTerm(corev1.NodeSelectorOpNotIn, "c")).Obj(), want: placedOn("a", "b")},
		scenario{name: "terms are ORed", nodes: sized,
			pod: subject().RequiredNodeAffinity(
				testutil.NodeTerm(testutil.NodeReq(pool, corev1.NodeSelectorOpIn, "tpu")),
				testutil.NodeTerm(testutil.NodeReq("cores", corev1.NodeSelectorOpLt, "10"))).Obj(), want: placedOn("a")},
		scenario{name: "expressions and fields of one term are ANDed", nodes: sized,
			pod: subject().RequiredNodeAffinity(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{testutil.NodeReq(pool, corev1.NodeSelectorOpExists)},
				MatchFields:      []corev1.NodeSelectorRequirement{testutil.NodeReq("metadata.name", corev1.NodeSelectorOpNotIn, "b")},
			}).Obj(), want: placedOn("a")},
		scenario{name: "an empty term matches nothing", nodes: sized,
			pod: subject().RequiredNodeAffinity(corev1.NodeSelectorTerm{}).Obj(), want: refused()},
		scenario{name: "nodeSelector and affinity both apply", nodes: sized,
			pod:  subject().NodeSelector(pool, "cpu").RequiredNodeAffinity(testutil.NodeTerm(testutil.NodeReq("cores", corev1.NodeSelectorOpGt, "16"))).Obj(),
			want: refused()},
	)

	add("taints",
		scenario{name: "NoSchedule keeps an intolerant pod off",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule), node("b")),
			// a is emptier: a scheduler that ignored the taint would pick it.
			background: pods(busy("f", "b", "2")),
			pod:        subject().Obj(), want: placedOn("b")},
		scenario{name: "NoSchedule tolerated by value",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule)),
			pod:   subject().Toleration(testutil.Tolerate("dedicated", "ml", corev1.TaintEffectNoSchedule)).Obj(), want: placedOn("a")},
		scenario{name: "NoSchedule, toleration of another value",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule)),
			pod:   subject().Toleration(testutil.Tolerate("dedicated", "web", corev1.TaintEffectNoSchedule)).Obj(), want: refused()},
		scenario{name: "NoExecute keeps an intolerant pod off",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoExecute)),
			pod:   subject().Obj(), want: refused()},
		scenario{name: "NoExecute, a NoSchedule toleration is not enough",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoExecute)),
			pod:   subject().Toleration(testutil.Tolerate("dedicated", "ml", corev1.TaintEffectNoSchedule)).Obj(), want: refused()},
		scenario{name: "NoExecute tolerated by Exists with any effect",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoExecute)),
			pod:   subject().Toleration(testutil.Tolerate("dedicated", "", "")).Obj(), want: placedOn("a")},
		scenario{name: "NoExecute tolerated for a while is tolerated",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoExecute)),
			pod: subject().Toleration(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml",
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}).Obj(), want: placedOn("a")},
		scenario{name: "the API server's default tolerations cover unreachable:NoExecute",
			// Every pod gets node.kubernetes.io/not-ready and unreachable
			// NoExecute tolerations (for 300s) at admission.
			nodes: nodes(node("a").Taint(corev1.TaintNodeUnreachable, "", corev1.TaintEffectNoExecute)),
			pod:   subject().Obj(), want: placedOn("a")},
		scenario{name: "but not unreachable:NoSchedule",
			nodes: nodes(node("a").Taint(corev1.TaintNodeUnreachable, "", corev1.TaintEffectNoSchedule)),
			pod:   subject().Obj(), want: refused()},
		scenario{name: "PreferNoSchedule never keeps a pod off",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectPreferNoSchedule)),
			pod:   subject().Obj(), want: placedOn("a")},
		scenario{name: "an empty key with Exists tolerates everything",
			nodes: nodes(node("a").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule).Taint("gpu", "true", corev1.TaintEffectNoExecute)),
			pod:   subject().Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists}).Obj(), want: placedOn("a")},
	)

	add("cordoned",
		scenario{name: "a cordoned node takes nothing new",
			nodes:      nodes(node("a").Unschedulable(), node("b")),
			background: pods(busy("f", "b", "2")),
			pod:        subject().Obj(), want: placedOn("b")},
		scenario{name: "the only node is cordoned",
			nodes: nodes(node("a").Unschedulable()),
			pod:   subject().Obj(), want: refused()},
		scenario{name: "a pod that tolerates node.kubernetes.io/unschedulable",
			nodes: nodes(node("a").Unschedulable()),
			pod:   subject().Toleration(testutil.Tolerate(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule)).Obj(), want: placedOn("a")},
	)

	add("host-ports",
		scenario{name: "the port is taken on two nodes of three",
			nodes:      nodes(node("a"), node("b"), node("c")),
			background: pods(bg("p1", "a").HostPort(8080, corev1.ProtocolTCP).Obj(), bg("p2", "b").HostPort(8080, corev1.ProtocolTCP).Obj(), busy("f", "c", "2")),
			pod:        subject().HostPort(8080, corev1.ProtocolTCP).Obj(), want: placedOn("c")},
		scenario{name: "the port is taken everywhere",
			nodes:      nodes(node("a"), node("b")),
			background: pods(bg("p1", "a").HostPort(8080, corev1.ProtocolTCP).Obj(), bg("p2", "b").HostPort(8080, corev1.ProtocolTCP).Obj()),
			pod:        subject().HostPort(8080, corev1.ProtocolTCP).Obj(), want: refused()},
		scenario{name: "the same port on another host IP is free",
			nodes:      nodes(node("a")),
			background: pods(bg("p1", "a").HostPortOn("10.0.0.1", 8080, corev1.ProtocolTCP).Obj()),
			pod:        subject().HostPortOn("10.0.0.2", 8080, corev1.ProtocolTCP).Obj(), want: placedOn("a")},
		scenario{name: "every IP clashes with one IP",
			nodes:      nodes(node("a"), node("b")),
			background: pods(bg("p1", "a").HostPortOn("10.0.0.1", 8080, corev1.ProtocolTCP).Obj(), busy("f", "b", "2")),
			pod:        subject().HostPort(8080, corev1.ProtocolTCP).Obj(), want: placedOn("b")},
		scenario{name: "the same port over UDP is free",
			nodes:      nodes(node("a")),
			background: pods(bg("p1", "a").HostPort(8080, corev1.ProtocolTCP).Obj()),
			pod:        subject().HostPort(8080, corev1.ProtocolUDP).Obj(), want: placedOn("a")},
	)

	zones := func() []*corev1.Node {
		return nodes(inZone("a", "z1"), inZone("b", "z1"), inZone("c", "z2"), inZone("d", "z2"))
	}
	toWeb := func(key string) *testutil.PodBuilder {
		return subject().PodAffinity(testutil.PodTerm(key, app("web")).Obj())
	}
	add("pod-affinity",
		scenario{name: "hostname: join the web pod's node",
			nodes: zones(), background: pods(web("w", "b"), busy("f", "b", "2")),
			pod: toWeb(host).Obj(), want: placedOn("b")},
		scenario{name: "zone: join the web pod's zone",
			nodes: zones(), background: pods(web("w", "c"), busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod: toWeb(zone).Obj(), want: placedOn("c", "d")},
		scenario{name: "no web pod anywhere, and the pod is not one",
			nodes: zones(), pod: toWeb(zone).Obj(), want: refused()},
		scenario{name: "first pod: no web pod anywhere, and the pod is one",
			// e has no zone: the first pod may still only go where the
			// term's topology key is. e is the emptiest node.
			nodes:      append(zones(), node("e").Obj()),
			background: pods(busy("f1", "a", "1"), busy("f2", "b", "1"), busy("f3", "c", "1"), busy("f4", "d", "1")),
			pod:        toWeb(zone).Labels(app("web")).Obj(), want: placedOn("a", "b", "c", "d")},
		scenario{name: "not the first pod once a web pod runs in another zone",
			nodes: zones(), background: pods(web("w", "c"), busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod: toWeb(zone).Labels(app("web")).Obj(), want: placedOn("c", "d")},
		scenario{name: "a node without the topology key never matches",
			nodes: nodes(inZone("a", "z1"), node("b")), background: pods(web("w", "b")),
			pod: toWeb(zone).Obj(), want: refused()},
		scenario{name: "one pod must match every term",
			nodes:      zones(),
			background: pods(web("w", "a"), bg("db", "b").Label("tier", "db").Obj()),
			pod: subject().PodAffinity(testutil.PodTerm(zone, app("web")).Obj(),
				testutil.PodTerm(zone, map[string]string{"tier": "db"}).Obj()).Obj(),
			want: refused()},
		scenario{name: "a web pod in another namespace does not count by default",
			nodes: zones(), namespaces: map[string]map[string]string{"@ml": nil},
			background: pods(testutil.MakePod("w", "@ml").NodeName("a").Labels(app("web")).Obj()),
			pod:        toWeb(zone).Obj(), want: refused()},
		scenario{name: "namespaces lists the other namespace",
			nodes: zones(), namespaces: map[string]map[string]string{"@ml": nil},
			background: pods(testutil.MakePod("w", "@ml").NodeName("c").Labels(app("web")).Obj(),
				web("decoy", "a"), busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod: subject().PodAffinity(testutil.PodTerm(zone, app("web")).Namespaces("@ml").Obj()).Obj(), want: placedOn("c", "d")},
		scenario{name: "namespaceSelector picks the team's namespace",
			nodes: zones(),
			namespaces: map[string]map[string]string{
				"@ml":  {"differential.troupe.dev/team": "ml"},
				"@web": {"differential.troupe.dev/team": "web"},
			},
			background: pods(testutil.MakePod("w", "@ml").NodeName("c").Labels(app("web")).Obj(),
				testutil.MakePod("decoy", "@web").NodeName("a").Labels(app("web")).Obj(),
				busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod: subject().PodAffinity(testutil.PodTerm(zone, app("web")).
				NamespaceSelector(map[string]string{"differential.troupe.dev/team": "ml"}).Obj()).Obj(),
			want: placedOn("c", "d")},
		scenario{name: "an empty namespaceSelector is every namespace",
			nodes: zones(), namespaces: map[string]map[string]string{"@ml": nil},
			background: pods(testutil.MakePod("w", "@ml").NodeName("c").Labels(app("web")).Obj(), busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod:        subject().PodAffinity(testutil.PodTerm(zone, app("web")).NamespaceSelector(map[string]string{}).Obj()).Obj(),
			want:       placedOn("c", "d")},
		scenario{name: "a selector expression (NotIn) on another label",
			nodes: zones(), background: pods(bg("w1", "a").Labels(app("web")).Label("track", "canary").Obj(),
				bg("w2", "c").Labels(app("web")).Label("track", "stable").Obj(), busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod:  subject().PodAffinity(testutil.PodTerm(zone, app("web")).Expr("track", metav1.LabelSelectorOpNotIn, "canary").Obj()).Obj(),
			want: placedOn("c", "d")},
	)

	awayFrom := func(key string) *testutil.PodBuilder {
		return subject().PodAntiAffinity(testutil.PodTerm(key, app("web")).Obj())
	}
	add("pod-anti-affinity",
		scenario{name: "hostname: not beside a web pod",
			nodes: nodes(node("a"), node("b"), node("c")), background: pods(web("w1", "a"), web("w2", "b"), busy("f", "c", "2")),
			pod: awayFrom(host).Obj(), want: placedOn("c")},
		scenario{name: "zone: not in a web pod's zone",
			nodes: zones(), background: pods(web("w", "a"), busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod: awayFrom(zone).Obj(), want: placedOn("c", "d")},
		scenario{name: "a web pod in every zone",
			nodes: zones(), background: pods(web("w1", "a"), web("w2", "d")),
			pod: awayFrom(zone).Obj(), want: refused()},
		scenario{name: "a node without the topology key is in no zone",
			nodes: nodes(inZone("a", "z1"), node("b")), background: pods(web("w1", "a"), web("w2", "b")),
			pod: awayFrom(zone).Obj(), want: placedOn("b")},
		scenario{name: "symmetric: a placed pod keeps web pods out of its zone",
			nodes: zones(),
			background: pods(bg("keeper", "a").PodAntiAffinity(testutil.PodTerm(zone, app("web")).Obj()).Obj(),
				busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod: subject().Labels(app("web")).Obj(), want: placedOn("c", "d")},
		scenario{name: "symmetric: kept out of every zone",
			nodes: zones(),
			background: pods(bg("k1", "a").PodAntiAffinity(testutil.PodTerm(zone, app("web")).Obj()).Obj(),
				bg("k2", "c").PodAntiAffinity(testutil.PodTerm(zone, app("web")).Obj()).Obj()),
			pod: subject().Labels(app("web")).Obj(), want: refused()},
		scenario{name: "symmetric: the placed pod's term looks in its own namespace only",
			nodes: zones(), namespaces: map[string]map[string]string{"@ml": nil},
			background: pods(testutil.MakePod("keeper", "@ml").NodeName("a").PodAntiAffinity(testutil.PodTerm(zone, app("web")).Obj()).Obj()),
			pod:        subject().Labels(app("web")).Obj(), want: placedOn()},
	)

	spread := func(key string, skew int32) *testutil.SpreadBuilder {
		return testutil.MakeSpread(key, skew, app("web"))
	}
	spreading := func(s *testutil.SpreadBuilder) *testutil.PodBuilder {
		return subject().Labels(app("web")).Spread(s.Obj())
	}
	add("topology-spread",
		scenario{name: "hostname maxSkew 1: not onto the host that has one",
			nodes: nodes(node("a"), node("b"), node("c")), background: pods(web("w", "a"), busy("f1", "b", "2"), busy("f2", "c", "2")),
			pod: spreading(spread(host, 1)).Obj(), want: placedOn("b", "c")},
		scenario{name: "hostname maxSkew 2 allows it",
			nodes: nodes(node("a"), node("b")), background: pods(web("w", "a"), busy("f", "b", "3")),
			pod: spreading(spread(host, 2)).Request(corev1.ResourceCPU, "2").Obj(), want: placedOn("a")},
		scenario{name: "zone maxSkew 2: z1 already two ahead",
			nodes: zones(), background: pods(web("w1", "a"), web("w2", "b"), busy("f1", "c", "2"), busy("f2", "d", "2")),
			pod: spreading(spread(zone, 2)).Obj(), want: placedOn("c", "d")},
		scenario{name: "nothing fits the skew",
			// Each zone has one; z3's only node is full, so the pod cannot
			// go to the zone that would keep the skew.
			nodes:      nodes(inZone("a", "z1"), inZone("b", "z2"), inZone("c", "z3").Resource(corev1.ResourcePods, "3")),
			background: pods(web("w1", "a"), web("w2", "a"), web("w3", "b"), web("w4", "b"), busy("f1", "c", "1"), busy("f2", "c", "1"), busy("f3", "c", "1")),
			pod:        spreading(spread(zone, 1)).Obj(), want: refused()},
		scenario{name: "minDomains above the domains makes the minimum 0",
			nodes: nodes(node("a"), node("b")), background: pods(web("w1", "a"), web("w2", "b")),
			pod: spreading(spread(host, 1).MinDomains(3)).Obj(), want: refused()},
		scenario{name: "minDomains met",
			nodes: nodes(node("a"), node("b"), node("c")), background: pods(web("w1", "a"), web("w2", "b"), busy("f", "c", "2")),
			pod: spreading(spread(host, 1).MinDomains(3)).Obj(), want: placedOn("c")},
		scenario{name: "nodeAffinityPolicy Honor: a node the pod may not use is no domain",
			nodes:      zones(),
			background: pods(web("w1", "a"), web("w2", "b"), web("w3", "b"), busy("f", "a", "2")),
			pod:        spreading(spread(host, 1)).NodeSelector(zone, "z1").Obj(), want: placedOn("a")},
		scenario{name: "nodeAffinityPolicy Ignore: it is, with 0",
			nodes:      zones(),
			background: pods(web("w1", "a"), web("w2", "b"), web("w3", "b")),
			pod:        spreading(spread(host, 1).NodeAffinityPolicy(corev1.NodeInclusionPolicyIgnore)).NodeSelector(zone, "z1").Obj(), want: refused()},
		scenario{name: "nodeTaintsPolicy Ignore (the default): an untolerated tainted node is a domain, with 0",
			nodes:      nodes(node("a"), node("b"), node("c").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule)),
			background: pods(web("w1", "a"), web("w2", "b")),
			pod:        spreading(spread(host, 1)).Obj(), want: refused()},
		scenario{name: "nodeTaintsPolicy Honor: it is not",
			nodes:      nodes(node("a"), node("b"), node("c").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule)),
			background: pods(web("w1", "a"), web("w2", "b"), web("w3", "b"), busy("f", "a", "2")),
			pod:        spreading(spread(host, 1).NodeTaintsPolicy(corev1.NodeInclusionPolicyHonor)).Obj(), want: placedOn("a")},
		scenario{name: "matchLabelKeys: only the pod's own revision counts",
			nodes: nodes(node("a"), node("b")),
			background: pods(bg("old1", "a").Labels(app("web")).Label("rev", "1").Obj(), bg("old2", "a").Labels(app("web")).Label("rev", "1").Obj(),
				bg("new", "b").Labels(app("web")).Label("rev", "2").Obj(), busy("f", "a", "2")),
			pod: spreading(spread(host, 1).MatchLabelKeys("rev")).Label("rev", "2").Obj(), want: placedOn("a")},
		scenario{name: "a node without the topology key is no domain and never passes",
			nodes:      nodes(inZone("a", "z1"), inZone("b", "z2"), node("nozone")),
			background: pods(web("w", "a"), busy("f", "b", "2")),
			pod:        spreading(spread(zone, 1)).Obj(), want: placedOn("b")},
		scenario{name: "two constraints: zone and hostname",
			nodes:      zones(),
			background: pods(web("w1", "a"), web("w2", "c"), busy("f1", "b", "2"), busy("f2", "d", "2")),
			pod:        spreading(spread(zone, 1)).Spread(spread(host, 1).Obj()).Obj(), want: placedOn("b", "d")},
		scenario{name: "a pod outside its own selector",
			nodes: nodes(node("a"), node("b")), background: pods(web("w", "a"), busy("f", "b", "2")),
			pod: subject().Spread(spread(host, 1).Obj()).Obj(), want: placedOn()},
	)

	add("volumes",
		scenario{name: "a local volume pins the pod to its node",
			nodes: nodes(node("a"), node("b")), background: pods(busy("f", "b", "2")),
			storage: storage{claims: claims(boundClaim("local")), volumes: volumes(st.MakePV("local").Local("b", "/mnt/disk").ClaimRef("", "local"))},
			pod:     subject().Request(corev1.ResourceCPU, "1").Claim("local").Obj(), want: placedOn("b")},
		scenario{name: "a local volume's node is full",
			nodes: nodes(node("a"), node("b")), background: pods(busy("f", "b", "4")),
			storage: storage{claims: claims(boundClaim("local")), volumes: volumes(st.MakePV("local").Local("b", "/mnt/disk").ClaimRef("", "local"))},
			pod:     subject().Request(corev1.ResourceCPU, "1").Claim("local").Obj(), want: refused()},
		scenario{name: "a zonal volume keeps the pod in its zone",
			nodes: nodes(inZone("a", "z1"), inZone("b", "z2")), background: pods(busy("f", "b", "2")),
			storage: storage{claims: claims(boundClaim("disk")), volumes: volumes(csiVolume("disk").Label(zone, "z2"))},
			pod:     subject().Claim("disk").Obj(), want: placedOn("b")},
		scenario{name: "a claim that does not exist",
			nodes: nodes(node("a")), pod: subject().Claim("missing").Obj(), want: refused()},
		scenario{name: "a claim bound to a volume that does not exist",
			nodes: nodes(node("a")), storage: storage{claims: claims(boundClaim("gone"))},
			pod: subject().Claim("gone").Obj(), want: refused()},
		scenario{name: "a claim being deleted",
			nodes: nodes(node("a")), storage: storage{claims: claims(boundClaim("going").Terminating()), volumes: volumes(csiVolume("going"))},
			pod: subject().Claim("going").Obj(), want: refused()},
		scenario{name: "an unbound claim of an Immediate class",
			nodes: nodes(node("a")), storage: storage{classes: []*storagev1.StorageClass{st.MakeStorageClass("now", storagev1.VolumeBindingImmediate)},
				claims: claims(st.MakePVC("", "unbound").Class("now"))},
			pod: subject().Claim("unbound").Obj(), want: refused()},
		scenario{name: "a claim pre-bound by name, the binding not completed",
			nodes: nodes(node("a")), storage: storage{claims: claims(st.MakePVC("", "pre").PreBound("pre")), volumes: volumes(st.MakePV("pre").CSI(csiDriver, "h-pre"))},
			pod: subject().Claim("pre").Obj(), want: refused()},
		scenario{name: "a ReadWriteOncePod claim another pod uses",
			nodes: nodes(node("a"), node("b")), background: pods(bg("holder", "a").Claim("once").Obj()),
			storage: storage{claims: claims(boundClaim("once").AccessModes(corev1.ReadWriteOncePod)), volumes: volumes(csiVolume("once"))},
			pod:     subject().Claim("once").Obj(), want: refused()},
		scenario{name: "a ReadWriteOnce claim may be shared",
			nodes: nodes(node("a")), background: pods(bg("holder", "a").Claim("shared").Obj()),
			storage: storage{claims: claims(boundClaim("shared")), volumes: volumes(csiVolume("shared"))},
			pod:     subject().Claim("shared").Obj(), want: placedOn("a")},
		scenario{name: "a node at its CSI attach limit",
			nodes: nodes(node("a"), node("b")), background: pods(bg("holder", "a").Claim("v1").Obj(), busy("f", "b", "2")),
			storage: storage{claims: claims(boundClaim("v1"), boundClaim("v2")),
				volumes:  volumes(csiVolume("v1"), csiVolume("v2")),
				csiNodes: csiNodes(st.MakeCSINode("a").Driver(csiDriver, 1), st.MakeCSINode("b").Driver(csiDriver, 1))},
			pod: subject().Claim("v2").Obj(), want: placedOn("b")},
		scenario{name: "a volume already on the node counts once toward its limit",
			nodes: nodes(node("a"), node("b")), background: pods(bg("holder", "a").Claim("v1").Obj()),
			storage: storage{claims: claims(boundClaim("v1")), volumes: volumes(csiVolume("v1")),
				csiNodes: csiNodes(st.MakeCSINode("a").Driver(csiDriver, 1), st.MakeCSINode("b").Driver(csiDriver, 0))},
			pod: subject().Claim("v1").Obj(), want: placedOn("a")},
	)

	add("preferred",
		scenario{name: "preferred node affinity is free",
			nodes: nodes(node("a").Label(pool, "cpu"), node("b").Label(pool, "gpu")),
			pod:   subject().PreferredNodeAffinity(50, testutil.NodeTerm(testutil.NodeReq(pool, corev1.NodeSelectorOpIn, "gpu"))).Obj(), want: placedOn()},
		scenario{name: "preferred pod affinity to nothing is free",
			nodes: zones(), pod: subject().PreferredPodAffinity(50, testutil.PodTerm(zone, app("db")).Obj()).Obj(), want: placedOn()},
		scenario{name: "preferred anti-affinity against every node is free",
			nodes: nodes(node("a"), node("b")), background: pods(web("w1", "a"), web("w2", "b")),
			pod: subject().PreferredPodAntiAffinity(100, testutil.PodTerm(host, app("web")).Obj()).Obj(), want: placedOn()},
		scenario{name: "ScheduleAnyway spread is free",
			nodes: nodes(node("a"), node("b")), background: pods(web("w1", "a"), web("w2", "a")),
			pod: spreading(spread(host, 1).ScheduleAnyway()).Obj(), want: placedOn()},
		scenario{name: "preferences never override a requirement",
			nodes: nodes(node("a").Label(pool, "cpu"), node("b").Label(pool, "gpu")),
			pod: subject().NodeSelector(pool, "cpu").
				PreferredNodeAffinity(100, testutil.NodeTerm(testutil.NodeReq(pool, corev1.NodeSelectorOpIn, "gpu"))).Obj(),
			want: placedOn("a")},
	)
	return cases
}
