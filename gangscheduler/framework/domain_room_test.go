package framework_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// copiesOn is how many copies of the task node's idle CPU, memory, GPUs
// and pod slots hold, at least one: what DomainRoom should count, worked
// out apart from api.TaskInfo.Copies for the resources randomCluster's
// pods ask.
func copiesOn(task *api.TaskInfo, node *api.NodeInfo) int {
	r, idle := &task.Resreq, &node.Idle
	k := int(idle.Pods)
	for _, q := range []struct{ want, have int64 }{
		{r.MilliCPU, idle.MilliCPU}, {r.Memory, idle.Memory}, {r.Scalar(st.GPU), idle.Scalar(st.GPU)}, {r.Pods, idle.Pods},
	} {
		if q.want > 0 {
			k = min(k, int(q.have/q.want))
		}
	}
	return max(k, 1)
}

// TestDomainRoomAgreesWithACount: on random clusters and random sequences
// of placements, commits, discards and evictions, DomainRoom (kept from
// ask to ask, catching up with the nodes changed) is, for every domain,
// the sum over the domain's nodes of the count where the task fits, as a
// count from scratch finds it then.
func TestDomainRoomAgreesWithACount(t *testing.T) {
	answered, compared := 0, 0
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 11))
		snap, tasks := randomCluster(rng)
		ssn := framework.OpenSession(snap, plugins.Default()...)
		tree := snap.TopologyTree(randomFabric)
		walkRandomly(t, rng, ssn, tasks, 300, func(step int, task *api.TaskInfo) *api.NodeInfo {
			cls := ssn.ClassOf(task)
			compared++
			if got := ssn.DomainRoom(cls, task, tree); got != nil {
				answered++
				if want := countRoom(ssn, cls, task, tree); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d, %s: DomainRoom %v, a count %v", seed, step, task.Name, got, want)
				}
			}
			return ssn.BestNode(cls, task)
		})
	}
	// The comparison means something only if DomainRoom answered often.
	if answered < compared/2 {
		t.Errorf("DomainRoom answered %d of %d asks", answered, compared)
	}
}

// countRoom is DomainRoom from scratch: every node of the session, its
// copies of the task where it fits, added to each of its domains.
func countRoom(ssn *framework.Session, cls *framework.Class, task *api.TaskInfo, tree *api.TopologyTree) []int {
	room := make([]int, tree.Domains)
	for _, n := range ssn.NodeList {
		leaf := tree.Leaf[n.Index]
		if leaf == nil || !ssn.PredicateWithClass(cls, task, n).Fit {
			continue
		}
		for d := leaf; d != nil; d = d.Parent {
			room[d.ID] += copiesOn(task, n)
		}
	}
	return room
}

// DomainRoom answers only where a node's room reads that node alone: not
// for a task whose fit reads other nodes' pods (inter-pod anti-affinity),
// which the caller counts itself.
func TestDomainRoomOnlyWhereFitIsNodeLocal(t *testing.T) {
	var nodes []*corev1.Node
	for _, n := range cpuNodes(4, "8") {
		nodes = append(nodes, n)
		n.Labels[randomBlockKey], n.Labels[randomRackKey] = "b0", "b0-r"+n.Name
	}
	tests := []struct {
		name   string
		pod    *st.PodWrapper
		answer bool
		// root is the room at the root when answered.
		root int
	}{
		{name: "requests and a node selector: 2 nodes of 8 CPUs", pod: st.MakePod("ns", "p").Job("j").Req("1", "1Gi").NodeSelector("pool", "a"), answer: true, root: 16},
		{name: "a preference (it orders nodes, it does not keep any off): 4 nodes", pod: st.MakePod("ns", "p").Job("j").Req("1", "1Gi").PreferredNodeAffinity(5, "pool", "a"), answer: true, root: 32},
		{name: "required anti-affinity to its gang", pod: st.MakePod("ns", "p").Job("j").Req("1", "1Gi").Labels("app", "x").PodAntiAffinity(corev1.LabelHostname, "app", "x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.MustSnapshot(nodes, []*corev1.Pod{tc.pod.Obj()}, []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
			ssn := framework.OpenSession(snap, plugins.Default()...)
			task := ssn.Jobs["ns/j"].PendingTasks()[0]
			got := ssn.DomainRoom(ssn.ClassOf(task), task, snap.TopologyTree(randomFabric))
			if (got != nil) != tc.answer {
				t.Fatalf("DomainRoom answered %v, want an answer: %v", got, tc.answer)
			}
			if got != nil && got[0] != tc.root {
				t.Errorf("room at the root %d, want %d", got[0], tc.root)
			}
		})
	}
}
