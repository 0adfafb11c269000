package framework_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// TestBestIndexAgreesWithScan: on random clusters and random sequences of
// placements, commits, discards and evictions, BestNode (answered from the
// per-signature index where it may be) picks the very node the full scan
// of BestNodeIn picks, for every task, every time.
func TestBestIndexAgreesWithScan(t *testing.T) {
	indexed, compared := 0, 0
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		snap, tasks := randomCluster(rng)
		ssn := framework.OpenSession(snap, plugins.Default()...)
		walkRandomly(t, rng, ssn, tasks, 400, func(step int, task *api.TaskInfo) *api.NodeInfo {
			cls := ssn.ClassOf(task)
			got := ssn.BestNode(cls, task)
			want := ssn.BestNodeIn(cls, task, ssn.CandidateNodes(cls, task))
			compared++
			if ssn.Indexed(task) {
				indexed++
			}
			if got != want {
				t.Fatalf("seed %d step %d, %s: BestNode %s, the scan %s", seed, step, task.Name, nameOf(got), nameOf(want))
			}
			return got
		})
	}
	// The comparison means something only if the index answered often.
	if indexed < compared/2 {
		t.Errorf("the index answered %d of %d searches", indexed, compared)
	}
}

// walkRandomly makes steps random changes to ssn's placements: 7 in 10
// asks ask about a random pending task and places it on the node ask
// returns (none: left pending), 1 in 10 commits the open statement, 1 in
// 10 discards it, 1 in 10 evicts a random bound or running task.
func walkRandomly(t *testing.T, rng *rand.Rand, ssn *framework.Session, tasks []*api.TaskInfo, steps int, ask func(step int, task *api.TaskInfo) *api.NodeInfo) {
	t.Helper()
	stmt := ssn.Statement()
	for step := range steps {
		switch op := rng.IntN(10); {
		case op < 7:
			pending := pendingOf(tasks)
			if len(pending) == 0 {
				continue
			}
			task := pending[rng.IntN(len(pending))]
			if node := ask(step, task); node != nil {
				if err := stmt.Allocate(task, node); err != nil {
					t.Fatal(err)
				}
			}
		case op == 7:
			stmt.Commit()
			stmt = ssn.Statement()
		case op == 8:
			stmt.Discard()
			stmt = ssn.Statement()
		default:
			var held []*api.TaskInfo
			for _, task := range tasks {
				if task.Status == api.Bound || task.Status == api.Running {
					held = append(held, task)
				}
			}
			if len(held) > 0 {
				if err := stmt.Evict(held[rng.IntN(len(held))], "test"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

const (
	randomBlockKey = "example.com/block"
	randomRackKey  = "example.com/rack"
)

// randomFabric is the Topology of randomCluster's blocks and racks.
var randomFabric = &api.TopologyInfo{Name: "fabric", Levels: []api.TopologyLevel{
	{Name: "block", NodeLabel: randomBlockKey}, {Name: "rack", NodeLabel: randomRackKey},
}}

// randomCluster makes CPU and GPU nodes of random sizes, some cordoned or
// tainted, most in the blocks and racks of randomFabric, a few pods
// already running, and pending pods of a few shapes
// (some with a host port, some with a preference, which the index leaves
// to the scan), in gangs of one to four.
func randomCluster(rng *rand.Rand) (*api.Snapshot, []*api.TaskInfo) {
	var nodes []*corev1.Node
	for i := range 8 + rng.IntN(40) {
		var n *st.NodeWrapper
		if rng.IntN(3) == 0 {
			n = st.MakeNode(fmt.Sprintf("cpu-%02d", i)).Capacity(fmt.Sprint(4+rng.IntN(28)), "64Gi", 0).Label("pool", "cpu")
		} else {
			n = st.MakeNode(fmt.Sprintf("gpu-%02d", i)).Capacity(fmt.Sprint(8+rng.IntN(56)), "256Gi", int64(2+2*rng.IntN(4))).Label("pool", "gpu")
		}
		switch rng.IntN(12) {
		case 0:
			n = n.Unschedulable()
		case 1:
			n = n.Taint("dedicated", "x", corev1.TaintEffectNoSchedule)
		}
		// Blocks and racks for DomainRoom's test (randomFabric); every
		// seventh node has neither, and is outside the tree.
		if i%7 != 6 {
			n = n.Label(randomBlockKey, fmt.Sprintf("b%d", i%2)).Label(randomRackKey, fmt.Sprintf("b%d-r%d", i%2, i%3))
		}
		nodes = append(nodes, n.Obj())
	}
	shapes := []func(*st.PodWrapper) *st.PodWrapper{
		func(p *st.PodWrapper) *st.PodWrapper { return p.Req("1", "1Gi").NodeSelector("pool", "cpu") },
		func(p *st.PodWrapper) *st.PodWrapper { return p.Req("4", "8Gi").GPU(2) },
		func(p *st.PodWrapper) *st.PodWrapper { return p.Req("2", "4Gi").GPU(1) },
		func(p *st.PodWrapper) *st.PodWrapper { return p.Req("3", "2Gi") },
		func(p *st.PodWrapper) *st.PodWrapper { return p.Req("1", "1Gi").HostPort("", "", 8080) },
		func(p *st.PodWrapper) *st.PodWrapper {
			return p.Req("2", "2Gi").PreferredNodeAffinity(5, "pool", "gpu")
		},
	}
	var pods []*corev1.Pod
	var jobs []*api.JobInfo
	for j := range 10 + rng.IntN(30) {
		name := fmt.Sprintf("j%02d", j)
		size := 1 + rng.IntN(4)
		jobs = append(jobs, st.MakeJob("ns", name).MinMember(int32(size)).Obj())
		shape := shapes[rng.IntN(len(shapes))]
		for m := range size {
			p := shape(st.MakePod("ns", fmt.Sprintf("%s-%d", name, m)).Job(name))
			if j%5 == 0 { // already running somewhere
				p = p.Node(nodes[rng.IntN(len(nodes))].Name).Phase(corev1.PodRunning)
			}
			pods = append(pods, p.Obj())
		}
	}
	snap := st.MustSnapshot(nodes, pods, jobs)
	var tasks []*api.TaskInfo
	for _, job := range snap.Jobs {
		tasks = append(tasks, job.Tasks...)
	}
	// Sorted, so that a seed replays the same choices.
	slices.SortFunc(tasks, func(a, b *api.TaskInfo) int { return strings.Compare(a.Name, b.Name) })
	return snap, tasks
}

func pendingOf(tasks []*api.TaskInfo) []*api.TaskInfo {
	var out []*api.TaskInfo
	for _, t := range tasks {
		if t.Status == api.Pending {
			out = append(out, t)
		}
	}
	return out
}

func nameOf(n *api.NodeInfo) string {
	if n == nil {
		return "<none>"
	}
	return n.Name
}
