package nodeorder_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/nodeorder"
)

const tpu corev1.ResourceName = "example.com/tpu"

// session opens a session with only nodeorder on nodes (and pods already
// on them) and one pending task.
func session(t *testing.T, cfg nodeorder.Config, nodes []*corev1.Node, existing []*corev1.Pod, task *corev1.Pod) (*framework.Session, *api.TaskInfo) {
	t.Helper()
	snap := st.MustSnapshot(nodes, append(existing, task), []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
	ssn := framework.OpenSession(snap, nodeorder.New(cfg))
	return ssn, snap.Jobs["ns/j"].PendingTasks()[0]
}

// Each case names the node that must score strictly highest.
func TestNodeOrder(t *testing.T) {
	tests := []struct {
		name     string
		cfg      nodeorder.Config
		nodes    []*corev1.Node
		existing []*corev1.Pod
		task     *corev1.Pod
		best     string
	}{{
		// The GPU node has far more free CPU, so only the penalty can make
		// the CPU node win.
		name:  "cpu task prefers a cpu node, however full",
		nodes: []*corev1.Node{st.MakeNode("a-gpu").Capacity("64", "512Gi", 8).Obj(), st.MakeNode("b-cpu").Capacity("2", "4Gi", 0).Obj()},
		task:  st.MakePod("ns", "p").Job("j").Req("1", "1Gi").Obj(),
		best:  "b-cpu",
	}, {
		name:  "gpu task bin-packs onto the node with fewer idle gpus",
		nodes: []*corev1.Node{st.MakeNode("a-8").Capacity("64", "512Gi", 8).Obj(), st.MakeNode("b-4").Capacity("8", "32Gi", 4).Obj()},
		task:  st.MakePod("ns", "p").Job("j").Req("1", "1Gi").GPU(2).Obj(),
		best:  "b-4",
	}, {
		name:     "gpu task counts gpus used by pods already there",
		nodes:    []*corev1.Node{st.MakeNode("a").Capacity("64", "512Gi", 8).Obj(), st.MakeNode("b").Capacity("64", "512Gi", 8).Obj()},
		existing: []*corev1.Pod{st.MakePod("other", "x").GPU(6).Node("b").Obj()},
		task:     st.MakePod("ns", "p").Job("j").GPU(2).Obj(),
		best:     "b",
	}, {
		name:     "cpu task forced onto gpu nodes takes the one with fewer idle gpus",
		nodes:    []*corev1.Node{st.MakeNode("a").Capacity("64", "512Gi", 8).Obj(), st.MakeNode("b").Capacity("8", "32Gi", 8).Obj()},
		existing: []*corev1.Pod{st.MakePod("other", "x").GPU(7).Node("b").Obj()},
		task:     st.MakePod("ns", "p").Job("j").Req("1", "1Gi").Obj(),
		best:     "b",
	}, {
		name:  "equal gpu nodes: more free cpu and memory wins",
		nodes: []*corev1.Node{st.MakeNode("a").Capacity("8", "32Gi", 8).Obj(), st.MakeNode("b").Capacity("64", "512Gi", 8).Obj()},
		task:  st.MakePod("ns", "p").Job("j").Req("1", "1Gi").GPU(1).Obj(),
		best:  "b",
	}, {
		name:  "configured gpu names: nvidia gpus do not count, tpus do",
		cfg:   nodeorder.Config{GPUResources: []corev1.ResourceName{tpu}},
		nodes: []*corev1.Node{st.MakeNode("a-tpu").Capacity("64", "512Gi", 0).Resource(tpu, "4").Obj(), st.MakeNode("b-nvidia").Capacity("2", "4Gi", 8).Obj()},
		task:  st.MakePod("ns", "p").Job("j").Req("1", "1Gi").Obj(),
		best:  "b-nvidia",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ssn, task := session(t, tt.cfg, tt.nodes, tt.existing, tt.task)
			bestScore := ssn.NodeScore(task, ssn.Nodes[tt.best])
			for _, n := range ssn.NodeList {
				if n.Name != tt.best && ssn.NodeScore(task, n) >= bestScore {
					t.Errorf("%s scores %d, not below %s's %d", n.Name, ssn.NodeScore(task, n), tt.best, bestScore)
				}
			}
		})
	}
}

func TestTiebreak(t *testing.T) {
	n := api.NewNodeInfo(st.MakeNode("n").Capacity("10", "10Gi", 0).Obj())
	tests := []struct {
		name string
		pod  *corev1.Pod
		want int64
	}{
		{"empty request on empty node", st.MakePod("ns", "p").Obj(), 100 + 100},
		{"half cpu, no memory: 75 free on average, 50 apart", st.MakePod("ns", "p").Req("5", "").Obj(), 75 + 50},
		{"balanced half", st.MakePod("ns", "p").Req("5", "5Gi").Obj(), 50 + 100},
		{"more than the node has clamps to 0 free", st.MakePod("ns", "p").Req("20", "20Gi").Obj(), 0 + 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nodeorder.Tiebreak(api.NewTaskInfo("", tt.pod), n)
			if got != tt.want {
				t.Errorf("Tiebreak = %d, want %d", got, tt.want)
			}
			if got < 0 || got > nodeorder.MaxTiebreak {
				t.Errorf("Tiebreak %d outside [0, %d]", got, nodeorder.MaxTiebreak)
			}
		})
	}
}

// Scoring runs for every task on every feasible node: it must not allocate.
func TestScoreDoesNotAllocate(t *testing.T) {
	ssn, task := session(t, nodeorder.Config{},
		[]*corev1.Node{st.MakeNode("a").Capacity("64", "512Gi", 8).Obj(), st.MakeNode("b").Capacity("8", "32Gi", 0).Obj()},
		nil, st.MakePod("ns", "p").Job("j").Req("1", "1Gi").GPU(2).Obj())
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range ssn.NodeList {
			ssn.NodeScore(task, n)
		}
	})
	if allocs != 0 {
		t.Errorf("NodeScore allocates %v times per run", allocs)
	}
}
