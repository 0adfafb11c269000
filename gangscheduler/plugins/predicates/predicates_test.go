package predicates_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/predicates"
)

const (
	noSchedule       = corev1.TaintEffectNoSchedule
	noExecute        = corev1.TaintEffectNoExecute
	preferNoSchedule = corev1.TaintEffectPreferNoSchedule
	exists           = corev1.TolerationOpExists
	equal            = corev1.TolerationOpEqual
)

func node() *st.NodeWrapper { return st.MakeNode("n1").Capacity("4", "8Gi", 0) }

func pod() *st.PodWrapper { return st.MakePod("ns", "p").Job("j").Req("1", "1Gi") }

// Each case is one pod against one node (with pods already on it), with
// the answer kube-scheduler's filters give.
func TestPredicates(t *testing.T) {
	tests := []struct {
		name     string
		node     *corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		cfg      predicates.Config
		want     framework.Status
	}{
		{name: "plain fit", node: node().Obj(), pod: pod().Obj(), want: framework.Fit},

		// taints
		{name: "not-ready NoSchedule taint blocks",
			node: node().Taint(corev1.TaintNodeNotReady, "", noSchedule).Obj(), pod: pod().Obj(),
			want: framework.Unfit(predicates.ReasonTaint)},
		{name: "NoExecute taint blocks",
			node: node().Taint("dedicated", "ml", noExecute).Obj(), pod: pod().Obj(),
			want: framework.Unfit(predicates.ReasonTaint)},
		{name: "PreferNoSchedule taint does not block",
			node: node().Taint("dedicated", "ml", preferNoSchedule).Obj(), pod: pod().Obj(),
			want: framework.Fit},
		{name: "tolerated taint (Exists) passes",
			node: node().Taint(corev1.TaintNodeNotReady, "", noSchedule).Obj(),
			pod:  pod().Toleration(corev1.TaintNodeNotReady, exists, "", noSchedule).Obj(),
			want: framework.Fit},
		{name: "tolerated taint (Equal value) passes",
			node: node().Taint("dedicated", "ml", noSchedule).Obj(),
			pod:  pod().Toleration("dedicated", equal, "ml", "").Obj(),
			want: framework.Fit},
		{name: "toleration with another value blocks",
			node: node().Taint("dedicated", "ml", noSchedule).Obj(),
			pod:  pod().Toleration("dedicated", equal, "web", noSchedule).Obj(),
			want: framework.Unfit(predicates.ReasonTaint)},
		{name: "toleration for another effect blocks",
			node: node().Taint("dedicated", "ml", noExecute).Obj(),
			pod:  pod().Toleration("dedicated", exists, "", noSchedule).Obj(),
			want: framework.Unfit(predicates.ReasonTaint)},
		{name: "one of two taints untolerated blocks",
			node: node().Taint("a", "", noSchedule).Taint("b", "", noSchedule).Obj(),
			pod:  pod().Toleration("a", exists, "", "").Obj(),
			want: framework.Unfit(predicates.ReasonTaint)},
		{name: "wildcard toleration (empty key, Exists) passes every taint",
			node: node().Taint("a", "", noSchedule).Taint("b", "x", noExecute).Obj(),
			pod:  pod().Toleration("", exists, "", "").Obj(),
			want: framework.Fit},
		{name: "Gt toleration ignored while the alpha gate is off",
			node: node().Taint("tier", "5", noSchedule).Obj(),
			pod:  pod().Toleration("tier", corev1.TolerationOpGt, "3", noSchedule).Obj(),
			want: framework.Unfit(predicates.ReasonTaint)},
		{name: "Lt toleration matches with the gate on",
			node: node().Taint("tier", "2", noSchedule).Obj(),
			pod:  pod().Toleration("tier", corev1.TolerationOpLt, "3", noSchedule).Obj(),
			cfg:  predicates.Config{TaintTolerationComparisonOperators: true},
			want: framework.Fit},

		// cordoned nodes
		{name: "unschedulable node blocks",
			node: node().Unschedulable().Obj(), pod: pod().Obj(),
			want: framework.Unfit(predicates.ReasonUnschedulable)},
		{name: "unschedulable node, pod tolerates the unschedulable taint",
			node: node().Unschedulable().Obj(),
			pod:  pod().Toleration(corev1.TaintNodeUnschedulable, exists, "", noSchedule).Obj(),
			want: framework.Fit},
		{name: "unschedulable node, toleration for NoExecute only blocks",
			node: node().Unschedulable().Obj(),
			pod:  pod().Toleration(corev1.TaintNodeUnschedulable, exists, "", noExecute).Obj(),
			want: framework.Unfit(predicates.ReasonUnschedulable)},

		// node selector and affinity
		{name: "nodeSelector matches",
			node: node().Label("pool", "cpu").Obj(), pod: pod().NodeSelector("pool", "cpu").Obj(),
			want: framework.Fit},
		{name: "nodeSelector mismatch",
			node: node().Label("pool", "gpu").Obj(), pod: pod().NodeSelector("pool", "cpu").Obj(),
			want: framework.Unfit(predicates.ReasonNodeAffinity)},
		{name: "nodeSelector label missing",
			node: node().Obj(), pod: pod().NodeSelector("pool", "cpu").Obj(),
			want: framework.Unfit(predicates.ReasonNodeAffinity)},
		{name: "affinity In matches",
			node: node().Label("zone", "b").Obj(), pod: pod().NodeAffinity("zone", corev1.NodeSelectorOpIn, "a", "b").Obj(),
			want: framework.Fit},
		{name: "affinity NotIn mismatch",
			node: node().Label("zone", "b").Obj(), pod: pod().NodeAffinity("zone", corev1.NodeSelectorOpNotIn, "b").Obj(),
			want: framework.Unfit(predicates.ReasonNodeAffinity)},
		{name: "affinity terms are ORed",
			node: node().Label("zone", "b").Obj(),
			pod:  pod().NodeAffinity("zone", corev1.NodeSelectorOpIn, "a").NodeAffinity("zone", corev1.NodeSelectorOpIn, "b").Obj(),
			want: framework.Fit},
		{name: "nodeSelector and affinity are ANDed",
			node: node().Label("zone", "b").Label("pool", "gpu").Obj(),
			pod:  pod().NodeSelector("pool", "cpu").NodeAffinity("zone", corev1.NodeSelectorOpIn, "b").Obj(),
			want: framework.Unfit(predicates.ReasonNodeAffinity)},
		{name: "affinity matchFields on metadata.name, other node",
			node: node().Obj(), pod: withMatchField(pod().Obj(), "n2"),
			want: framework.Unfit(predicates.ReasonNodeAffinity)},
		{name: "affinity matchFields on metadata.name, this node",
			node: node().Obj(), pod: withMatchField(pod().Obj(), "n1"),
			want: framework.Fit},
		{name: "affinity that does not parse matches nothing",
			node: node().Label("zone", "b").Obj(), pod: pod().NodeAffinity("zone", corev1.NodeSelectorOpGt, "x").Obj(),
			want: framework.Unfit(predicates.ReasonNodeAffinity)},

		// host ports
		{name: "host port conflict with a pod on the node",
			node:     node().Obj(),
			existing: []*corev1.Pod{st.MakePod("other", "web").HostPort("", "", 8080).Node("n1").Phase(corev1.PodRunning).Obj()},
			pod:      pod().HostPort("", "", 8080).Obj(),
			want:     framework.Unfit(predicates.ReasonHostPorts)},
		{name: "host port on another IP does not conflict",
			node:     node().Obj(),
			existing: []*corev1.Pod{st.MakePod("other", "web").HostPort("10.0.0.1", "", 8080).Node("n1").Obj()},
			pod:      pod().HostPort("10.0.0.2", "", 8080).Obj(),
			want:     framework.Fit},
		{name: "finished pod frees its host port",
			node:     node().Obj(),
			existing: []*corev1.Pod{st.MakePod("other", "web").HostPort("", "", 8080).Node("n1").Phase(corev1.PodSucceeded).Obj()},
			pod:      pod().HostPort("", "", 8080).Obj(),
			want:     framework.Fit},

		// resources
		{name: "cpu short",
			node:     node().Obj(),
			existing: []*corev1.Pod{st.MakePod("other", "a").Req("3500m", "").Node("n1").Obj()},
			pod:      pod().Obj(),
			want:     framework.Insufficient(corev1.ResourceCPU)},
		{name: "terminating pod still holds its cpu",
			node:     node().Obj(),
			existing: []*corev1.Pod{st.MakePod("other", "a").Req("3500m", "").Node("n1").Phase(corev1.PodRunning).Terminating().Obj()},
			pod:      pod().Obj(),
			want:     framework.Insufficient(corev1.ResourceCPU)},
		{name: "pod count full",
			node:     node().Resource(corev1.ResourcePods, "1").Obj(),
			existing: []*corev1.Pod{st.MakePod("other", "a").Node("n1").Obj()},
			pod:      pod().Obj(),
			want:     framework.Unfit(predicates.ReasonTooManyPods)},
		{name: "limits-only gpu (defaulted) on a node without gpus",
			node: node().Obj(), pod: pod().Limit(st.GPU, "1").Defaulted().Obj(),
			want: framework.Insufficient(st.GPU)},
		{name: "limits-only gpu (defaulted) on a gpu node",
			node: st.MakeNode("n1").Capacity("4", "8Gi", 1).Obj(), pod: pod().Limit(st.GPU, "1").Defaulted().Obj(),
			want: framework.Fit},
		{name: "no cpu request fits a cpu-over-committed node",
			node:     node().Obj(),
			existing: []*corev1.Pod{st.MakePod("other", "a").Req("6", "").Node("n1").Obj()},
			pod:      st.MakePod("ns", "p").Job("j").Obj(),
			want:     framework.Fit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := append([]*corev1.Pod{tt.pod}, tt.existing...)
			snap := st.MustSnapshot([]*corev1.Node{tt.node}, pods, []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
			ssn := framework.OpenSession(snap, predicates.New(tt.cfg))
			task := snap.Jobs["ns/j"].PendingTasks()[0]
			if got := ssn.Predicate(task, snap.NodeList[0]); got != tt.want {
				t.Errorf("Predicate = %v, want %v", got, tt.want)
			}
		})
	}
}

func withMatchField(p *corev1.Pod, nodeName string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName}}},
		}}},
	}}
	return p
}
