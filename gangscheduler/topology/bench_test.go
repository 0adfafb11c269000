package topology_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// BenchmarkPlace is the search for one gang of 32 one-GPU workers with a
// required rack pack on 8 blocks x 8 racks x 8 hosts of 8 GPUs (512
// nodes), every third host half busy: the time per gang of the search
// alone, on a session opened once, beside the same gang placed member by
// member on each one's best node.
func BenchmarkPlace(b *testing.B) {
	nodes := gpuNodes(8, 8, 8, 8)
	var pods []*corev1.Pod
	for i, n := range nodes {
		if i%3 == 0 {
			pods = append(pods, used(n.Name, 4))
		}
	}
	for i := range 32 {
		pods = append(pods, st.MakePod("ns", fmt.Sprintf("g-worker-%d", i)).Job("g").Role("worker").Req("1", "1Gi").GPU(1).
			Labels(topology.ReplicaIndexLabel, fmt.Sprint(i)).Obj())
	}
	job := st.MakeJob("ns", "g").MinMember(32).Obj()
	job.Topology = &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{rule("rack", api.RulePack, true)}}
	snap := st.MustSnapshot(nodes, pods, []*api.JobInfo{job})
	snap.Topologies = map[string]*api.TopologyInfo{fabric.Name: fabric}
	ssn := framework.OpenSession(snap, plugins.Default()...)
	g := ssn.Jobs["ns/g"]
	tasks := g.PendingTasks()
	b.Run("rack pack, required", func(b *testing.B) {
		for range b.N {
			res := topology.Place(ssn, g, tasks, nil)
			if res.Stmt == nil {
				b.Fatalf("not placed: %s", res.Message)
			}
			res.Stmt.Discard()
		}
	})
	// The baseline: each member on its best node, as allocate places a
	// gang without a policy.
	b.Run("no policy, best node each", func(b *testing.B) {
		for range b.N {
			stmt := ssn.Statement()
			for _, t := range tasks {
				n := ssn.BestNode(ssn.ClassOf(t), t)
				if n == nil || stmt.Allocate(t, n) != nil {
					b.Fatalf("%s not placed", t.Name)
				}
			}
			stmt.Discard()
		}
	})
}
