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

// BenchmarkPlace is the search for gangs of 32 one-GPU workers with a
// required rack pack on 8 blocks x 8 racks x 8 hosts of 8 GPUs (512
// nodes), every third host half busy, on a session opened once: the time
// per gang of the search alone, for one gang and for a backlog of 8 of
// one shape (each placed beside the ones before it), beside one gang
// placed member by member on each one's best node.
func BenchmarkPlace(b *testing.B) {
	nodes := gpuNodes(8, 8, 8, 8)
	var pods []*corev1.Pod
	for i, n := range nodes {
		if i%3 == 0 {
			pods = append(pods, used(n.Name, 4))
		}
	}
	const gangs = 8
	var jobs []*api.JobInfo
	for j := range gangs {
		name := fmt.Sprintf("g%d", j)
		for i := range 32 {
			pods = append(pods, st.MakePod("ns", fmt.Sprintf("%s-worker-%d", name, i)).Job(name).Role("worker").Req("1", "1Gi").GPU(1).
				Labels(topology.ReplicaIndexLabel, fmt.Sprint(i)).Obj())
		}
		job := st.MakeJob("ns", name).MinMember(32).Obj()
		job.Topology = &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{rule("rack", api.RulePack, true)}}
		jobs = append(jobs, job)
	}
	snap := st.MustSnapshot(nodes, pods, jobs)
	snap.Topologies = map[string]*api.TopologyInfo{fabric.Name: fabric}
	ssn := framework.OpenSession(snap, plugins.Default()...)
	g := ssn.Jobs["ns/g0"]
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
	// A backlog: each gang sees the nodes the gangs before it took.
	b.Run(fmt.Sprintf("rack pack, required, %d gangs", gangs), func(b *testing.B) {
		stmts := make([]*framework.Statement, gangs)
		for range b.N {
			for j := range gangs {
				job := ssn.Jobs[api.JobID(fmt.Sprintf("ns/g%d", j))]
				res := topology.Place(ssn, job, job.PendingTasks(), nil)
				if res.Stmt == nil {
					b.Fatalf("gang %d not placed: %s", j, res.Message)
				}
				stmts[j] = res.Stmt
			}
			for j := gangs - 1; j >= 0; j-- {
				stmts[j].Discard()
			}
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
