package actions_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// afterward runs an action, then tells what the session holds after it. At
// its action's place in Run, the session's next action is the one after
// it, as for the action alone.
type afterward struct {
	framework.Action
	then func(*framework.Session)
}

func (a afterward) Execute(ssn *framework.Session) {
	a.Action.Execute(ssn)
	a.then(ssn)
}

// checkCommitsForAllocate runs the pipeline as the scheduler does (Run, so
// enqueue commits for allocate where it may) and each action on its own
// (enqueue then never does), and checks that both decide the same: the
// same placements in the same order, the same admissions, refusals (reason
// and message), holds and topology outcomes. Enqueue's commits are only
// allocate's work done early. It returns how many placements of the
// pipeline enqueue committed, and how many there were in all.
func checkCommitsForAllocate(t *testing.T, c cluster, plugs func() []framework.Plugin, seed uint64) (early, total int) {
	t.Helper()
	pipeline := actions.Pipeline()
	pipeline[0] = afterward{pipeline[0], func(ssn *framework.Session) { early = len(ssn.Bindings()) }}
	together := run(t, c, plugs(), pipeline...)
	apart := run(t, c, plugs())
	for _, a := range actions.Pipeline() {
		apart.Run(a)
	}

	if !sameDecisions(together.Bindings(), apart.Bindings()) {
		t.Errorf("seed %d: committed in the pipeline %v, action by action %v", seed, keys(together.Bindings()), keys(apart.Bindings()))
	}
	if a, b := slices.Sorted(slices.Values(together.Admitted())), slices.Sorted(slices.Values(apart.Admitted())); !slices.Equal(a, b) {
		t.Errorf("seed %d: admitted in the pipeline %v, action by action %v", seed, a, b)
	}
	if a, b := together.Unschedulable(), apart.Unschedulable(); !maps.Equal(a, b) {
		t.Errorf("seed %d: refusals in the pipeline %v, action by action %v", seed, a, b)
	}
	if a, b := together.Holds(), apart.Holds(); !maps.EqualFunc(a, b, slices.Equal) {
		t.Errorf("seed %d: holds in the pipeline %v, action by action %v", seed, a, b)
	}
	if a, b := together.TopologyOutcomes(), apart.TopologyOutcomes(); !reflect.DeepEqual(a, b) {
		t.Errorf("seed %d: topology outcomes in the pipeline %v, action by action %v", seed, a, b)
	}
	checkNoResidue(t, c, together, seed)
	return early, len(together.Bindings())
}

func keys(ds []framework.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Task.Key() + "@" + d.Node
	}
	return out
}

// freshGangs is c with every gang new: its PodGroup Pending and none of its
// pods on a node (the first cycle after a burst of jobs), the cluster's
// other pods as they were. Only then may enqueue commit from the start.
func freshGangs(c cluster) cluster {
	out := c
	out.jobs = make([]*api.JobInfo, len(c.jobs))
	for i, j := range c.jobs {
		out.jobs[i] = withPhase(ptr.To(*j), api.JobPending)
	}
	out.pods = make([]*corev1.Pod, 0, len(c.pods))
	for _, p := range c.pods {
		if _, ok := st.JobOf(p); ok && p.Spec.NodeName != "" {
			p = p.DeepCopy()
			p.Spec.NodeName, p.Status.Phase = "", corev1.PodPending
		}
		out.pods = append(out.pods, p)
	}
	return out
}

// commitCluster is randomPipelineCluster with, at random, what ends enqueue's
// commits for allocate: gangs that waited long enough to hold nodes
// (reservation), and gangs required in one rack (a topology search).
func commitCluster(seed uint64) cluster {
	c := randomPipelineCluster(seed, 12, 10)
	r := rand.New(rand.NewPCG(seed^0x7c15e3779b97f4a, seed+3))
	pick := r.IntN
	if pick(3) == 0 {
		c.now = time.Unix(1_700_003_600, 0)
		for _, j := range c.jobs {
			if pick(2) == 0 {
				waited := c.now.Add(-time.Minute)
				j.WaitingSince = &waited
			}
		}
	}
	if pick(3) == 0 {
		const rackKey = "example.com/rack"
		c.topologies = []*api.TopologyInfo{{Name: "racks", Levels: []api.TopologyLevel{{Name: "rack", NodeLabel: rackKey}}}}
		for _, n := range c.nodes {
			n.Labels[rackKey] = fmt.Sprintf("rack-%d", pick(3))
		}
		for _, j := range c.jobs {
			if pick(3) == 0 {
				j.Topology = &api.TopologyPolicy{Topology: "racks", Rules: []api.LevelRule{{Level: "rack", Kind: api.RulePack, Required: true}}}
			}
		}
	}
	return c
}

// pickyQueues is a queue check that enqueue's admission budget does not
// know of: it refuses every second worker (index 1, 3, ...). Allocate asks
// it for each task; enqueue's trial placement does not, so a gang it
// admits with such a worker is one allocate would not place whole.
type pickyQueues struct{}

func (pickyQueues) Name() string { return "picky-queues" }

func (pickyQueues) OnSessionOpen(ssn *framework.Session) {
	ssn.AddAllocatableFn(func(_ *api.QueueInfo, task *api.TaskInfo) bool {
		// randomCluster's workers are <job>-worker-<i>, i a single digit.
		return !strings.Contains(task.Name, "-worker-") || (task.Name[len(task.Name)-1]-'0')%2 == 0
	})
}

// TestEnqueueCommitsForAllocate checks, over random clusters as they come
// and with every gang made new, with the queue-share plugins and with a
// queue check enqueue does not ask, that the pipeline decides exactly what
// its actions decide one by one; and that the clusters reach enqueue
// committing every gang, committing some before allocate takes over, and
// committing none, so that a pass that never commits (or always does)
// could not pass.
func TestEnqueueCommitsForAllocate(t *testing.T) {
	withPicky := func() []framework.Plugin { return append(plugins.WithQueueShare(), pickyQueues{}) }
	var all, some, none int
	for seed := range uint64(400) {
		for _, fresh := range []bool{false, true} {
			for _, plugs := range []func() []framework.Plugin{plugins.WithQueueShare, withPicky} {
				c := commitCluster(seed)
				if fresh {
					c = freshGangs(c)
				}
				early, total := checkCommitsForAllocate(t, c, plugs, seed)
				switch early {
				case 0:
					none++
				case total:
					all++
				default:
					some++
				}
			}
		}
	}
	t.Logf("over 1600 sessions: enqueue committed every placement of the pipeline in %d, some in %d, none in %d", all, some, none)
	if all < 100 || some < 50 || none < 100 {
		t.Errorf("generator too one-sided: all %d, some %d, none %d", all, some, none)
	}
}

// Enqueue commits for allocate only where allocate would try nothing else
// first: an older gang admitted in an earlier cycle that still waits, or a
// partial gang, keeps its turn before the new gangs; and with preempt
// between them, allocate is not next. Two nodes of 4 CPUs, a and b; a
// gang's pod takes 3 CPUs, so each node holds one, and an empty a is every
// new gang's best node (the first of equals).
func TestEnqueueCommitsOnlyAsAllocate(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("a").Capacity("4", "16Gi", 0).Obj(), st.MakeNode("b").Capacity("4", "16Gi", 0).Obj()}
	t0 := time.Unix(1_700_000_000, 0)
	gang := func(name string, phase api.JobPhase, age time.Duration) *api.JobInfo {
		return withPhase(st.MakeJob("ns", name).MinMember(1).Created(t0.Add(-age)).Obj(), phase)
	}
	pod := func(job string) *st.PodWrapper {
		return st.MakePod("ns", job+"-worker-0").Job(job).Role("worker").Req("3", "1Gi")
	}
	onA := func(job string) *corev1.Pod { return pod(job).NodeSelector(corev1.LabelHostname, "a").Obj() }
	partial := st.MakeJob("ns", "partial").MinMember(2).Created(t0.Add(-time.Hour)).Obj()
	tests := []struct {
		name  string
		jobs  []*api.JobInfo
		pods  []*corev1.Pod
		acts  []framework.Action
		early int      // placements enqueue commits
		bound []string // job@node, in the order committed
	}{
		{"new gangs only: enqueue commits them", []*api.JobInfo{gang("new", api.JobPending, time.Minute), gang("newer", api.JobPending, time.Second)},
			[]*corev1.Pod{pod("new").Obj(), pod("newer").Obj()}, actions.Pipeline(), 2, []string{"new@a", "newer@b"}},
		{"an older gang admitted earlier waits: allocate places it first", []*api.JobInfo{gang("waits", api.JobInqueue, time.Hour), gang("new", api.JobPending, time.Minute)},
			[]*corev1.Pod{onA("waits"), pod("new").Obj()}, actions.Pipeline(), 0, []string{"waits@a", "new@b"}},
		// b has 2 CPUs free: the new gang fits a alone, which the partial
		// gang's pending member needs.
		{"a partial gang is completed first", []*api.JobInfo{withPhase(partial, api.JobRunning), gang("new", api.JobPending, time.Minute)},
			[]*corev1.Pod{
				st.MakePod("ns", "partial-worker-0").Job("partial").Role("worker").Req("2", "1Gi").Node("b").Phase(corev1.PodRunning).Obj(),
				st.MakePod("ns", "partial-worker-1").Job("partial").Role("worker").Req("3", "1Gi").NodeSelector(corev1.LabelHostname, "a").Obj(),
				pod("new").Obj(),
			}, actions.Pipeline(), 0, []string{"partial@a"}},
		{"preempt between: allocate is not next", []*api.JobInfo{gang("new", api.JobPending, time.Minute), gang("newer", api.JobPending, time.Second)},
			[]*corev1.Pod{pod("new").Obj(), pod("newer").Obj()}, []framework.Action{actions.NewEnqueue(), actions.NewPreempt(), actions.NewAllocate()}, 0, []string{"new@a", "newer@b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster{nodes: nodes, pods: tt.pods, jobs: tt.jobs, queues: []*api.QueueInfo{st.MakeQueue(api.DefaultQueue)}, now: t0}
			ssn := run(t, c, plugins.WithQueueShare())
			acts := slices.Clone(tt.acts)
			early := -1
			acts[0] = afterward{acts[0], func(ssn *framework.Session) { early = len(ssn.Bindings()) }}
			ssn.Run(acts...)
			if early != tt.early {
				t.Errorf("enqueue committed %d placements, want %d", early, tt.early)
			}
			var bound []string
			for _, d := range ssn.Bindings() {
				bound = append(bound, strings.TrimPrefix(string(d.Task.Job), "ns/")+"@"+d.Node)
			}
			if !slices.Equal(bound, tt.bound) {
				t.Errorf("bound %v, want %v", bound, tt.bound)
			}
		})
	}
}
