package actions_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// preemptPipeline is the pipeline with preempt where the sample
// configuration documents it.
func preemptPipeline() []framework.Action {
	return []framework.Action{actions.NewEnqueue(), actions.NewPreempt(), actions.NewAllocate(), actions.NewBackfill()}
}

// runningGang returns a running gang's pods, one per node, each taking gpus
// GPUs, the i-th with replica index i.
func runningGang(name string, gpus int64, nodes ...string) []*corev1.Pod {
	return runningRole(name, "worker", gpus, nodes...)
}

// runningRole returns a running gang's pods of one role, named
// <job>-<role>-<index> unless the role is "worker" (<job>-<index>).
func runningRole(job, role string, gpus int64, nodes ...string) []*corev1.Pod {
	var pods []*corev1.Pod
	for i, n := range nodes {
		name := fmt.Sprintf("%s-%s-%d", job, role, i)
		if role == "worker" {
			name = fmt.Sprintf("%s-%d", job, i)
		}
		pods = append(pods, st.MakePod("ns", name).Job(job).Role(role).Labels(topology.ReplicaIndexLabel, strconv.Itoa(i)).
			Req("1", "1Gi").GPU(gpus).Node(n).Phase(corev1.PodRunning).Obj())
	}
	return pods
}

// evicted maps job -> sorted names of its evicted pods.
func evicted(ssn *framework.Session) map[api.JobID][]string {
	m := map[api.JobID][]string{}
	for _, e := range ssn.Evictions() {
		m[e.Task.Job] = append(m[e.Task.Job], e.Task.Name)
	}
	for _, names := range m {
		slices.Sort(names)
	}
	return m
}

func TestPreempt(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	gpuNodes := func(n int) []*corev1.Node {
		var out []*corev1.Node
		for i := range n {
			out = append(out, st.MakeNode(fmt.Sprintf("gpu-%d", i)).Capacity("16", "64Gi", 4).Obj())
		}
		return out
	}
	job := func(name string, prio int32, age int, phase api.JobPhase, min int32) *api.JobInfo {
		return withPhase(st.MakeJob("ns", name).Priority(prio).MinMember(min).Created(t0.Add(time.Duration(age)*time.Minute)).Obj(), phase)
	}
	// racks are two racks of two nodes of 4 GPUs, r<rack>-h<host>.
	var racks []*corev1.Node
	for _, n := range []string{"r0-h0", "r0-h1", "r1-h0", "r1-h1"} {
		racks = append(racks, st.MakeNode(n).Capacity("16", "64Gi", 4).Label("example.com/rack", n[:2]).Obj())
	}
	fabric := &api.TopologyInfo{Name: "fabric", Levels: []api.TopologyLevel{{Name: "rack", NodeLabel: "example.com/rack"}}}
	inOneRack := func(j *api.JobInfo) *api.JobInfo {
		j.Topology = &api.TopologyPolicy{Topology: "fabric", Rules: []api.LevelRule{{Level: "rack", Kind: api.RulePack, Required: true}}}
		return j
	}
	// high would fit once low is gone; peer and blocker, admitted and not
	// placed (it fits no node), hold the queue's admission budget.
	budgetPods := slices.Concat(
		runningGang("low", 4, "gpu-0"), runningGang("peer", 4, "gpu-1"),
		makeGang("blocker", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(4).NodeSelector("pool", "none") }),
		gpuGang("high", 1, 4),
	)
	budgetJobs := func(blocker int32) []*api.JobInfo {
		return []*api.JobInfo{
			job("low", 0, 0, api.JobRunning, 1), job("peer", 10, 0, api.JobRunning, 1),
			job("blocker", blocker, 1, api.JobInqueue, 1), job("high", 10, 5, api.JobPending, 1),
		}
	}
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		topologies []*api.TopologyInfo
		pods       []*corev1.Pod
		jobs       []*api.JobInfo
		// want maps each victim to every pod name it must lose.
		want map[api.JobID][]string
		// noShare runs without the queue-share plugins, so that only the
		// action's own rules stand between a job and its victims.
		noShare bool
		// preemptor is the job that must not bind before its victims are
		// gone, then bind whole; "ns/high" if unset.
		preemptor api.JobID
		// capacity caps the default queue's GPUs, if set.
		capacity int64
	}{{
		name:  "the whole low-priority gang goes, none of an equal-priority one",
		nodes: gpuNodes(3),
		pods: slices.Concat(
			runningGang("low", 4, "gpu-0", "gpu-1"),
			runningGang("peer", 4, "gpu-2"),
			gpuGang("high", 1, 4),
		),
		jobs: []*api.JobInfo{job("low", 1, 0, api.JobRunning, 2), job("peer", 10, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		// One node would do, but a gang is never split.
		want: map[api.JobID][]string{"ns/low": {"low-0", "low-1"}},
	}, {
		name:  "an admitted (Inqueue) preemptor",
		nodes: gpuNodes(2),
		pods:  slices.Concat(runningGang("low", 4, "gpu-0", "gpu-1"), gpuGang("high", 2, 4)),
		jobs:  []*api.JobInfo{job("low", 0, 0, api.JobRunning, 2), job("high", 5, 5, api.JobInqueue, 2)},
		want:  map[api.JobID][]string{"ns/low": {"low-0", "low-1"}},
	}, {
		name:  "two equal low gangs, one is enough: the youngest goes",
		nodes: gpuNodes(2),
		pods:  slices.Concat(runningGang("old", 4, "gpu-0"), runningGang("young", 4, "gpu-1"), gpuGang("high", 1, 4)),
		jobs:  []*api.JobInfo{job("old", 1, 0, api.JobRunning, 1), job("young", 1, 1, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want:  map[api.JobID][]string{"ns/young": {"young-0"}},
	}, {
		name:  "two low gangs, one is enough: the lowest priority goes, even if older",
		nodes: gpuNodes(2),
		pods:  slices.Concat(runningGang("lowest", 4, "gpu-0"), runningGang("low", 4, "gpu-1"), gpuGang("high", 1, 4)),
		jobs:  []*api.JobInfo{job("lowest", 1, 0, api.JobRunning, 1), job("low", 2, 1, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want:  map[api.JobID][]string{"ns/lowest": {"lowest-0"}},
	}, {
		name:  "it needs two victims: both go",
		nodes: gpuNodes(2),
		pods:  slices.Concat(runningGang("a", 4, "gpu-0"), runningGang("b", 4, "gpu-1"), gpuGang("high", 2, 4)),
		jobs:  []*api.JobInfo{job("a", 1, 0, api.JobRunning, 1), job("b", 2, 1, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 2)},
		want:  map[api.JobID][]string{"ns/a": {"a-0"}, "ns/b": {"b-0"}},
	}, {
		name: "a cheap victim whose room the gang cannot use is spared",
		nodes: []*corev1.Node{
			st.MakeNode("cpu").Capacity("16", "64Gi", 0).Obj(),
			st.MakeNode("gpu-0").Capacity("16", "64Gi", 4).Obj(),
		},
		pods: slices.Concat(
			[]*corev1.Pod{st.MakePod("ns", "cpu-job-0").Job("cpu-job").Req("16", "1Gi").Node("cpu").Phase(corev1.PodRunning).Obj()},
			runningGang("gpu-job", 4, "gpu-0"),
			gpuGang("high", 1, 4),
		),
		jobs: []*api.JobInfo{job("cpu-job", 0, 9, api.JobRunning, 1), job("gpu-job", 1, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want: map[api.JobID][]string{"ns/gpu-job": {"gpu-job-0"}},
	}, {
		name:  "it would not fit even with every eligible victim gone: nothing goes",
		nodes: gpuNodes(2),
		pods:  slices.Concat(runningGang("low", 4, "gpu-0"), runningGang("peer", 4, "gpu-1"), gpuGang("high", 2, 4)),
		jobs:  []*api.JobInfo{job("low", 1, 0, api.JobRunning, 1), job("peer", 10, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 2)},
		want:  map[api.JobID][]string{},
	}, {
		name:  "a preemptor with preemptionPolicy Never waits instead",
		nodes: gpuNodes(1),
		pods: slices.Concat(runningGang("low", 4, "gpu-0"), func() []*corev1.Pod {
			pods := gpuGang("high", 1, 4)
			never := corev1.PreemptNever
			pods[0].Spec.PreemptionPolicy = &never
			return pods
		}()),
		jobs: []*api.JobInfo{job("low", 1, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want: map[api.JobID][]string{},
	}, {
		name:  "never a higher-priority victim",
		nodes: gpuNodes(1),
		pods:  slices.Concat(runningGang("higher", 4, "gpu-0"), gpuGang("high", 1, 4)),
		jobs:  []*api.JobInfo{job("higher", 20, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want:  map[api.JobID][]string{},
	}, {
		name:  "never across queues",
		nodes: gpuNodes(1),
		pods:  slices.Concat(runningGang("other", 4, "gpu-0"), gpuGang("high", 1, 4)),
		jobs: []*api.JobInfo{
			withPhase(st.MakeJob("ns", "other").Queue("research").Obj(), api.JobRunning),
			job("high", 10, 5, api.JobPending, 1),
		},
		want:    map[api.JobID][]string{},
		noShare: true,
	}, {
		name:  "victims already terminating make room: nothing more goes",
		nodes: gpuNodes(2),
		pods: slices.Concat(
			[]*corev1.Pod{st.MakePod("ns", "gone-0").Job("gone").Req("1", "1Gi").GPU(4).Node("gpu-0").Phase(corev1.PodRunning).Terminating().Obj()},
			runningGang("low", 4, "gpu-1"),
			gpuGang("high", 1, 4),
		),
		jobs: []*api.JobInfo{job("gone", 0, 0, api.JobRunning, 1), job("low", 0, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want: map[api.JobID][]string{},
	}, {
		// high would fit once low is gone, but its queue's admission
		// budget (8 GPUs: peer's 4 and blocker's 4, admitted and not
		// placed, of high's priority, so not for high to take) keeps it
		// out whatever it preempts.
		name:  "a gang its queue's admission budget keeps out preempts nothing",
		nodes: gpuNodes(2),
		pods:  budgetPods,
		jobs:  budgetJobs(10),
		want:  map[api.JobID][]string{},
	}, {
		// The same, but blocker is of lower priority: high may take its
		// admission (once low is gone, the next cycle does), so the
		// budget does not keep it out.
		name:  "an admission of lower priority holding the budget does not keep the gang out",
		nodes: gpuNodes(2),
		pods:  budgetPods,
		jobs:  budgetJobs(0),
		want:  map[api.JobID][]string{"ns/low": {"low-0"}},
	}, {
		name:  "a gang that fits already evicts nothing",
		nodes: gpuNodes(2),
		pods:  slices.Concat(runningGang("low", 4, "gpu-0"), gpuGang("high", 1, 4)),
		jobs:  []*api.JobInfo{job("low", 0, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want:  map[api.JobID][]string{},
	}, {
		name:  "two preemptors do not count the same room: the second one takes another victim",
		nodes: gpuNodes(2),
		pods: slices.Concat(runningGang("low-a", 4, "gpu-0"), runningGang("low-b", 4, "gpu-1"),
			gpuGang("high", 1, 4), gpuGang("mid", 1, 4)),
		jobs: []*api.JobInfo{
			job("low-a", 0, 1, api.JobRunning, 1), job("low-b", 0, 0, api.JobRunning, 1),
			job("high", 10, 5, api.JobPending, 1), job("mid", 5, 5, api.JobPending, 1),
		},
		want: map[api.JobID][]string{"ns/low-a": {"low-a-0"}, "ns/low-b": {"low-b-0"}},
	}, {
		name:  "a preemptor that fits already holds its room from the next one",
		nodes: gpuNodes(2),
		pods:  slices.Concat(runningGang("low", 4, "gpu-0"), gpuGang("high", 1, 4), gpuGang("mid", 1, 4)),
		jobs: []*api.JobInfo{
			job("low", 0, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1), job("mid", 5, 5, api.JobPending, 1),
		},
		want:      map[api.JobID][]string{"ns/low": {"low-0"}},
		preemptor: "ns/mid",
	}, {
		name:  "the room must fit the queue's capability too: a second victim goes",
		nodes: gpuNodes(3),
		pods:  slices.Concat(runningGang("low-a", 4, "gpu-0"), runningGang("low-b", 4, "gpu-1"), gpuGang("high", 2, 4)),
		jobs: []*api.JobInfo{
			job("low-a", 0, 1, api.JobRunning, 1), job("low-b", 0, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 2),
		},
		capacity: 8,
		// gpu-2 and one victim's node would hold the gang; the queue's 8
		// GPUs would not.
		want: map[api.JobID][]string{"ns/low-a": {"low-a-0"}, "ns/low-b": {"low-b-0"}},
	}, {
		// Taken in order, victims b and a go first, then c frees rack r0:
		// five pods. Rack r1 costs b and d, of the same priorities: two.
		name:       "a gang required in one rack frees the rack that costs least, not the first victims' racks",
		nodes:      racks,
		topologies: []*api.TopologyInfo{fabric},
		pods: slices.Concat(
			runningGang("a", 4, "r0-h0"), runningGang("b", 4, "r1-h0"),
			runningGang("c", 1, "r0-h1", "r0-h1", "r0-h1", "r0-h1"), runningGang("d", 4, "r1-h1"),
			gpuGang("high", 2, 4),
		),
		jobs: []*api.JobInfo{
			job("a", 1, 0, api.JobRunning, 1), job("b", 1, 1, api.JobRunning, 1),
			job("c", 2, 3, api.JobRunning, 4), job("d", 2, 2, api.JobRunning, 1),
			inOneRack(job("high", 10, 5, api.JobPending, 2)),
		},
		want: map[api.JobID][]string{"ns/b": {"b-0"}, "ns/d": {"d-0"}},
	}, {
		// Every surplus goes before any whole gang, even one of a lower
		// priority: an elastic gang runs on without it.
		name:  "an elastic gang's members above its minimum are the first to go, the highest index first",
		nodes: gpuNodes(4),
		pods:  slices.Concat(runningGang("elastic", 4, "gpu-0", "gpu-1", "gpu-2"), runningGang("low", 4, "gpu-3"), gpuGang("high", 1, 4)),
		jobs:  []*api.JobInfo{job("elastic", 1, 0, api.JobRunning, 1), job("low", 0, 0, api.JobRunning, 1), job("high", 10, 5, api.JobPending, 1)},
		want:  map[api.JobID][]string{"ns/elastic": {"elastic-2"}},
	}, {
		name:  "a surplus too small for the preemptor: the whole gang goes, not the surplus and then more",
		nodes: gpuNodes(3),
		pods:  slices.Concat(runningGang("elastic", 4, "gpu-0", "gpu-1", "gpu-2"), gpuGang("high", 2, 4)),
		jobs:  []*api.JobInfo{job("elastic", 1, 0, api.JobRunning, 2), job("high", 10, 5, api.JobPending, 2)},
		want:  map[api.JobID][]string{"ns/elastic": {"elastic-0", "elastic-1", "elastic-2"}},
	}, {
		name:  "a surplus keeps every role's minimum: workers above theirs go, the master stays",
		nodes: gpuNodes(4),
		pods: slices.Concat(runningRole("mixed", "master", 4, "gpu-0"), runningRole("mixed", "trainer", 4, "gpu-1", "gpu-2", "gpu-3"),
			gpuGang("high", 2, 4)),
		jobs: []*api.JobInfo{
			withPhase(st.MakeJob("ns", "mixed").Priority(1).MinMember(2).MinTaskMember("master", 1).MinTaskMember("trainer", 1).Created(t0).Obj(), api.JobRunning),
			job("high", 10, 5, api.JobPending, 2),
		},
		want: map[api.JobID][]string{"ns/mixed": {"mixed-trainer-1", "mixed-trainer-2"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := st.MakeQueue(api.DefaultQueue)
			if tt.capacity > 0 {
				def.Capability = api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: tt.capacity}}
			}
			c := cluster{nodes: tt.nodes, pods: tt.pods, jobs: tt.jobs, queues: []*api.QueueInfo{def, st.MakeQueue("research")}, topologies: tt.topologies}
			preemptor := cmp.Or(tt.preemptor, "ns/high")
			plugs := plugins.WithQueueShare()
			if tt.noShare {
				plugs = plugins.Default()
			}
			ssn := run(t, c, plugs, actions.NewEnqueue())
			before := nodeState(ssn)
			ssn.Run(actions.NewPreempt())
			if got := evicted(ssn); !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("evicted %v, want %v", got, tt.want)
			}
			// What preempt reserves for its preemptor goes back with
			// the session's holds; the rest is as it was.
			ssn.ReleaseHolds()
			if after := nodeState(ssn); !maps.Equal(before, after) {
				t.Errorf("preempt changed the nodes' accounting:\nbefore %v\nafter  %v", before, after)
			}
			for _, e := range ssn.Evictions() {
				if e.Task.Status != api.Releasing || e.Reason == "" {
					t.Errorf("eviction of %s: status %v, reason %q", e.Task.Key(), e.Task.Status, e.Reason)
				}
			}
			if len(ssn.Bindings()) != 0 {
				t.Errorf("preempt placed pods: %v", placed(ssn))
			}

			// The whole pipeline: the preemptor does not bind while its
			// victims hold the room; once they are gone it binds whole.
			ssn = run(t, c, plugs, preemptPipeline()...)
			if got := evicted(ssn); !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("in the pipeline: evicted %v, want %v", got, tt.want)
			}
			checkInvariants(t, c, ssn.Bindings())
			if len(tt.want) == 0 {
				return
			}
			if got := placed(ssn); len(got[preemptor]) != 0 {
				t.Errorf("the preemptor bound before its victims were gone: %v", got)
			}
			gone := map[string]bool{}
			for _, e := range ssn.Evictions() {
				gone[e.Task.Key()] = true
			}
			next := c
			next.pods = slices.DeleteFunc(slices.Clone(c.pods), func(p *corev1.Pod) bool { return gone[p.Namespace+"/"+p.Name] })
			ssn = run(t, next, plugs, preemptPipeline()...)
			if got := placed(ssn); len(got[preemptor]) != len(ssn.Jobs[preemptor].Tasks) {
				t.Errorf("after the victims left, the preemptor got %v", got[preemptor])
			}
			if len(ssn.Evictions()) != 0 {
				t.Errorf("the next cycle evicted more: %v", evicted(ssn))
			}
			checkInvariants(t, next, ssn.Bindings())
		})
	}
}

// The same input gives the same evictions, in the same order.
func TestPreemptDeterministic(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("gpu-0").Capacity("16", "64Gi", 4).Obj(), st.MakeNode("gpu-1").Capacity("16", "64Gi", 4).Obj()}
	var pods []*corev1.Pod
	var jobs []*api.JobInfo
	for i := range 4 { // 4 GPUs per node, all taken
		name := fmt.Sprintf("low-%d", i)
		pods = append(pods, runningGang(name, 1, "gpu-0", "gpu-1")...)
		jobs = append(jobs, withPhase(st.MakeJob("ns", name).MinMember(2).Obj(), api.JobRunning))
	}
	pods = append(pods, gpuGang("high", 2, 3)...)
	jobs = append(jobs, withPhase(st.MakeJob("ns", "high").Priority(1).MinMember(2).Obj(), api.JobPending))
	c := cluster{nodes: nodes, pods: pods, jobs: jobs}
	first := run(t, c, plugins.WithQueueShare(), preemptPipeline()...).Evictions()
	if len(first) != 6 {
		t.Fatalf("%d evictions, want 6 (three gangs of two)", len(first))
	}
	for range 5 {
		again := run(t, c, plugins.WithQueueShare(), preemptPipeline()...).Evictions()
		if !slices.EqualFunc(first, again, func(a, b framework.Eviction) bool { return a.Task.Key() == b.Task.Key() && a.Node == b.Node }) {
			t.Fatalf("evictions differ between runs")
		}
	}
}

// While its victims terminate, a preemptor's room is kept for it: a gang
// after it in the session (of lower priority) takes none of what the
// preemptor counted on, or the preemptor would find too little once the
// victims are gone and preempt again (as kube-scheduler's nominated pods
// reserve their room on the node). What the preemptor does not need stays
// free for the others. Once they are gone, lower-priority gangs admitted
// and not placed give back the admission budget it needs. (The victim gang's own members are kept off by its
// preemption mark: framework's preemptedStillHeld.)
// victim is a pod of job on node, taking gpus GPUs, that this scheduler
// preempted and that still terminates.
func victim(job, name, node string, gpus int64) *corev1.Pod {
	return st.MakePod("ns", name).Job(job).Req("1", "1Gi").GPU(gpus).Node(node).Phase(corev1.PodRunning).
		PreemptedBy("troupe").Terminating().Obj()
}

func TestPreemptorKeepsItsRoom(t *testing.T) {
	gpu := func(name string) *corev1.Node { return st.MakeNode(name).Capacity("16", "64Gi", 4).Obj() }
	running := func(job, name, node string, gpus int64) *corev1.Pod {
		return st.MakePod("ns", name).Job(job).Req("1", "1Gi").GPU(gpus).Node(node).Phase(corev1.PodRunning).Obj()
	}
	job := func(name string, prio, min int32, phase api.JobPhase) *api.JobInfo {
		return withPhase(st.MakeJob("ns", name).Priority(prio).MinMember(min).Obj(), phase)
	}
	// In the cases of high's rules, high must go to gpu-0, the GPU node of
	// pool a (one of its 2 GPUs idle, one held by gone-0, leaving), with
	// its rule; low, of lower priority, comes after it.
	inPoolA := func(name, cpu string, gpus int64) *corev1.Node {
		return st.MakeNode(name).Capacity(cpu, "64Gi", gpus).Label("pool", "a").Obj()
	}
	highOnGPU0 := func(rule func(*st.PodWrapper)) []*corev1.Pod {
		return makeGang("high", 1, func(p *st.PodWrapper) {
			p.Req("1", "1Gi").GPU(2).NodeSelector("pool", "a")
			rule(p)
		})
	}
	highWaits := func(low api.JobPhase, lowMin int32) []*api.JobInfo {
		return []*api.JobInfo{job("gone", 0, 1, api.JobRunning), job("high", 10, 1, api.JobPending), job("low", 0, lowMin, low)}
	}
	// An elastic gang lost its members 2 and 3 to high: 2 is gone, 3
	// still terminates; low asks for the GPU 2 left.
	elasticLost := slices.Concat(
		[]*corev1.Pod{
			running("elastic", "elastic-0", "gpu-0", 1), running("elastic", "elastic-1", "gpu-0", 1),
			victim("elastic", "elastic-3", "gpu-0", 1),
		},
		gpuGang("high", 2, 1), gpuGang("low", 1, 1),
	)
	tests := []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		jobs  []*api.JobInfo
		// want is what the cycle binds, by job; nothing of the preemptor.
		want map[api.JobID]map[string]string
		// admitted are the gangs the cycle admits, sorted; revoked the
		// gangs whose earlier admission it takes back.
		admitted, revoked []api.JobID
		// findings are what the cycle must say of a gang, in part.
		findings map[api.JobID]string
		// capacity caps the queue's GPUs, if set.
		capacity int64
	}{{
		// low, admitted earlier, would fit the GPU: it gives its
		// admission back, or it would hold the queue's budget high needs
		// once its victims are gone.
		name:    "a lower-priority gang does not take the GPU a gone victim left",
		nodes:   []*corev1.Node{gpu("gpu-0")},
		pods:    elasticLost,
		jobs:    []*api.JobInfo{job("elastic", 0, 2, api.JobRunning), job("high", 10, 2, api.JobPending), job("low", 0, 1, api.JobInqueue)},
		want:    map[api.JobID]map[string]string{},
		revoked: []api.JobID{"ns/low"},
	}, {
		// low needs 2 GPUs: it did not fit before the reservation either,
		// and keeps its admission (its own finding says why it waits).
		name:  "a gang admitted earlier that does not fit anyway keeps its admission",
		nodes: []*corev1.Node{gpu("gpu-0")},
		pods: slices.Concat(elasticLost[:3], gpuGang("high", 2, 1),
			makeGang("low", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(2) })),
		jobs: []*api.JobInfo{job("elastic", 0, 2, api.JobRunning), job("high", 10, 2, api.JobPending), job("low", 0, 1, api.JobInqueue)},
		want: map[api.JobID]map[string]string{},
	}, {
		// Enqueue, before preempt, sees the GPU free and admits low; an
		// admitted low would count against the queue's budget and keep
		// high out once the victims are gone.
		name:  "nor is a gang admitted on that room",
		nodes: []*corev1.Node{gpu("gpu-0")},
		pods:  elasticLost,
		jobs:  []*api.JobInfo{job("elastic", 0, 2, api.JobRunning), job("high", 10, 2, api.JobPending), job("low", 0, 1, api.JobPending)},
		want:  map[api.JobID]map[string]string{},
	}, {
		// high's master fits the CPU node now; its worker waits for the
		// GPU node. The master's room is kept too, or low's pod would
		// take it and high find no room for its master next time.
		name: "the room on a node that needs no victim is kept as well",
		nodes: []*corev1.Node{
			st.MakeNode("cpu").Capacity("4", "16Gi", 0).Label("pool", "cpu").Obj(), gpu("gpu-0"),
		},
		pods: slices.Concat(
			[]*corev1.Pod{
				st.MakePod("ns", "busy-0").Job("busy").Req("2", "1Gi").Node("cpu").Phase(corev1.PodRunning).Obj(),
				running("a", "a-0", "gpu-0", 2), victim("gone", "gone-0", "gpu-0", 2),
			},
			makeGang("high", 1, func(p *st.PodWrapper) { p.Role("master").Req("2", "1Gi") }),
			[]*corev1.Pod{st.MakePod("ns", "high-worker-0").Job("high").Role("worker").Req("1", "1Gi").GPU(2).Obj()},
			makeGang("low", 1, func(p *st.PodWrapper) { p.Req("2", "1Gi").NodeSelector("pool", "cpu") }),
		),
		jobs: []*api.JobInfo{
			job("busy", 0, 1, api.JobRunning), job("a", 0, 1, api.JobRunning), job("gone", 0, 1, api.JobRunning),
			job("high", 10, 2, api.JobPending), job("low", 0, 1, api.JobInqueue),
		},
		want:    map[api.JobID]map[string]string{},
		revoked: []api.JobID{"ns/low"},
	}, {
		// high must go to gpu-0 (one GPU idle, one leaving); the queue may
		// hold 4 GPUs: a's 2 and high's 2 once gone-0 has left. low on
		// gpu-1 would take the queue's last GPU.
		name: "nor is the queue's share it counts on, on another node",
		nodes: []*corev1.Node{
			st.MakeNode("gpu-0").Capacity("16", "64Gi", 4).Label("pool", "a").Obj(), gpu("gpu-1"),
		},
		pods: slices.Concat(
			[]*corev1.Pod{running("a", "a-0", "gpu-0", 2), victim("gone", "gone-0", "gpu-0", 1)},
			makeGang("high", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(2).NodeSelector("pool", "a") }),
			gpuGang("low", 1, 1),
		),
		jobs: []*api.JobInfo{
			job("a", 0, 1, api.JobRunning), job("gone", 0, 1, api.JobRunning),
			job("high", 10, 1, api.JobPending), job("low", 0, 1, api.JobInqueue),
		},
		capacity: 4,
		want:     map[api.JobID]map[string]string{},
		revoked:  []api.JobID{"ns/low"},
	}, {
		// high must go to gpu-0 (one GPU idle, one leaving) and needs host
		// port 2222 there; low asks nothing but that port (and a CPU).
		name:  "nor is a host port it needs",
		nodes: []*corev1.Node{inPoolA("gpu-0", "16", 2), gpu("gpu-1")},
		pods: slices.Concat(
			[]*corev1.Pod{victim("gone", "gone-0", "gpu-0", 1)},
			highOnGPU0(func(p *st.PodWrapper) { p.HostPort("", corev1.ProtocolTCP, 2222) }),
			makeGang("low", 1, func(p *st.PodWrapper) {
				p.Req("1", "1Gi").NodeSelector("pool", "a").HostPort("", corev1.ProtocolTCP, 2222)
			}),
		),
		jobs: highWaits(api.JobPending, 1),
		want: map[api.JobID]map[string]string{},
	}, {
		// high must go to gpu-0 (one GPU idle, one leaving), and keeps
		// off its node any pod labelled app=web; low, admitted earlier,
		// is such a pod and asks for a CPU of gpu-0 alone, which the
		// reservation leaves free: it gives its admission back rather
		// than land where high could not follow.
		name:  "nor is a node its required anti-affinity keeps others off",
		nodes: []*corev1.Node{inPoolA("gpu-0", "16", 2), gpu("gpu-1")},
		pods: slices.Concat(
			[]*corev1.Pod{victim("gone", "gone-0", "gpu-0", 1)},
			highOnGPU0(func(p *st.PodWrapper) { p.PodAntiAffinity(corev1.LabelHostname, "app", "web") }),
			makeGang("low", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").NodeSelector("pool", "a").Labels("app", "web") }),
		),
		jobs:    highWaits(api.JobInqueue, 1),
		want:    map[api.JobID]map[string]string{},
		revoked: []api.JobID{"ns/low"},
	}, {
		// The same, the other way round: low's anti-affinity selects
		// high's pods (app=train), so high could not land beside it.
		name:  "nor is a node where another pod's anti-affinity would keep it out",
		nodes: []*corev1.Node{inPoolA("gpu-0", "16", 2), gpu("gpu-1")},
		pods: slices.Concat(
			[]*corev1.Pod{victim("gone", "gone-0", "gpu-0", 1)},
			highOnGPU0(func(p *st.PodWrapper) { p.Labels("app", "train") }),
			makeGang("low", 1, func(p *st.PodWrapper) {
				p.Req("1", "1Gi").NodeSelector("pool", "a").PodAntiAffinity(corev1.LabelHostname, "app", "train")
			}),
		),
		jobs: highWaits(api.JobPending, 1),
		want: map[api.JobID]map[string]string{},
	}, {
		// low spreads its 2 pods by node at most 1 apart, counting app=
		// train, which high's pod is: as if high ran on gpu-0, low's pods
		// go to the two other nodes (kube-scheduler counts a nominated
		// pod so). Otherwise one would go to gpu-0, the least allocated
		// (high may use no other node: gpu-1 and gpu-2 are not in pool a).
		name: "another gang's topology spread counts it where it will run",
		nodes: []*corev1.Node{
			inPoolA("gpu-0", "64", 2), gpu("gpu-1"), gpu("gpu-2"),
		},
		pods: slices.Concat(
			[]*corev1.Pod{victim("gone", "gone-0", "gpu-0", 1)},
			highOnGPU0(func(p *st.PodWrapper) { p.Labels("app", "train") }),
			makeGang("low", 2, func(p *st.PodWrapper) {
				p.Req("1", "1Gi").Labels("app", "train").
					Spread(1, corev1.LabelHostname, corev1.DoNotSchedule, nil, "app", "train")
			}),
		),
		jobs:     highWaits(api.JobPending, 2),
		want:     map[api.JobID]map[string]string{"ns/low": {"low-0": "gpu-1", "low-1": "gpu-2"}},
		admitted: []api.JobID{"ns/low"},
	}, {
		// As kube-scheduler asks a rule with the nominated pods and
		// without them: low's pod (app=train) on cpu-1, beside the
		// running r-0, would be 2 apart from gpu-0 while high does not
		// run yet. So it goes to gpu-0, beside high's room; otherwise to
		// cpu-1, the CPU node a CPU pod is kept on.
		name:  "another gang's topology spread is kept without it too",
		nodes: []*corev1.Node{inPoolA("gpu-0", "16", 2), inPoolA("cpu-1", "16", 0)},
		pods: slices.Concat(
			[]*corev1.Pod{
				victim("gone", "gone-0", "gpu-0", 1),
				st.MakePod("ns", "r-0").Req("1", "1Gi").Labels("app", "train").Node("cpu-1").Phase(corev1.PodRunning).Obj(),
			},
			highOnGPU0(func(p *st.PodWrapper) { p.Labels("app", "train") }),
			makeGang("low", 1, func(p *st.PodWrapper) {
				p.Req("1", "1Gi").NodeSelector("pool", "a").Labels("app", "train").
					Spread(1, corev1.LabelHostname, corev1.DoNotSchedule, nil, "app", "train")
			}),
		),
		jobs:     highWaits(api.JobPending, 1),
		want:     map[api.JobID]map[string]string{"ns/low": {"low-0": "gpu-0"}},
		admitted: []api.JobID{"ns/low"},
	}, {
		// low must be beside a pod labelled app=train, and only high's
		// would be (on gpu-0): a member that does not run yet meets no
		// one's affinity, so low waits.
		name:  "another gang's required affinity is not met by it alone",
		nodes: []*corev1.Node{inPoolA("gpu-0", "16", 2), inPoolA("cpu-1", "16", 0)},
		pods: slices.Concat(
			[]*corev1.Pod{victim("gone", "gone-0", "gpu-0", 1)},
			highOnGPU0(func(p *st.PodWrapper) { p.Labels("app", "train") }),
			makeGang("low", 1, func(p *st.PodWrapper) {
				p.Req("1", "1Gi").NodeSelector("pool", "a").PodAffinity(corev1.LabelHostname, "app", "train")
			}),
		),
		jobs: highWaits(api.JobPending, 1),
		want: map[api.JobID]map[string]string{},
	}, {
		// low (app=train) has affinity to app=train: with no such pod
		// running it is the first of its group and may go anywhere, but
		// with high's member nominated to gpu-0 only beside it (kube-
		// scheduler's two passes); otherwise to cpu-1, the CPU node.
		name:  "the first pod of a group with affinity to itself joins the member",
		nodes: []*corev1.Node{inPoolA("gpu-0", "16", 2), inPoolA("cpu-1", "16", 0)},
		pods: slices.Concat(
			[]*corev1.Pod{victim("gone", "gone-0", "gpu-0", 1)},
			highOnGPU0(func(p *st.PodWrapper) { p.Labels("app", "train") }),
			makeGang("low", 1, func(p *st.PodWrapper) {
				p.Req("1", "1Gi").NodeSelector("pool", "a").Labels("app", "train").PodAffinity(corev1.LabelHostname, "app", "train")
			}),
		),
		jobs:     highWaits(api.JobPending, 1),
		want:     map[api.JobID]map[string]string{"ns/low": {"low-0": "gpu-0"}},
		admitted: []api.JobID{"ns/low"},
	}, {
		// high waits for gpu-0 (one GPU idle, one leaving); gpu-1's idle
		// GPU is not what it counts on.
		name:  "room the preemptor does not count on stays free",
		nodes: []*corev1.Node{gpu("gpu-0"), gpu("gpu-1")},
		pods: slices.Concat(
			[]*corev1.Pod{
				running("a", "a-0", "gpu-0", 2), victim("gone", "gone-0", "gpu-0", 1),
				running("b", "b-0", "gpu-1", 3),
			},
			gpuGang("high", 1, 2), gpuGang("low", 1, 1),
		),
		jobs: []*api.JobInfo{
			job("a", 0, 1, api.JobRunning), job("b", 0, 1, api.JobRunning), job("gone", 0, 1, api.JobRunning),
			job("high", 10, 1, api.JobPending), job("low", 0, 1, api.JobPending),
		},
		want:     map[api.JobID]map[string]string{"ns/low": {"low-0": "gpu-1"}},
		admitted: []api.JobID{"ns/low"},
	}, {
		// Both victims are gone, and high fits; but low, admitted earlier
		// and not placed, holds the queue's admission budget (4 GPUs:
		// elastic's 2, low's 1 and high's 2 are too many), so enqueue did
		// not admit high. low gives its admission back, and high is
		// admitted and binds. Before, low took the room, and high
		// evicted again.
		name:     "a lower-priority gang admitted and not placed gives the budget back to a preemptor that fits",
		nodes:    []*corev1.Node{gpu("gpu-0")},
		pods:     slices.Concat(elasticLost[:2], gpuGang("high", 2, 1), gpuGang("low", 1, 1)),
		jobs:     []*api.JobInfo{job("elastic", 0, 2, api.JobRunning), job("high", 10, 2, api.JobPending), job("low", 0, 1, api.JobInqueue)},
		want:     map[api.JobID]map[string]string{"ns/high": {"high-0": "gpu-0", "high-1": "gpu-0"}},
		admitted: []api.JobID{"ns/high"},
		revoked:  []api.JobID{"ns/low"},
		findings: map[api.JobID]string{"ns/low": "its admission went to ns/high"},
	}, {
		// low, admitted and not placed, waits itself for gone-0 to leave
		// gpu-1 (it holds a trial there, as a preemptor does); it gives
		// its admission back all the same, to high, which fits gpu-0 now.
		name: "a lower-priority gang that waits for leaving pods gives the budget back too",
		nodes: []*corev1.Node{
			st.MakeNode("gpu-0").Capacity("16", "64Gi", 4).Label("pool", "a").Obj(),
			st.MakeNode("gpu-1").Capacity("16", "64Gi", 2).Label("pool", "b").Obj(),
		},
		pods: slices.Concat(elasticLost[:2], []*corev1.Pod{victim("gone", "gone-0", "gpu-1", 2)},
			makeGang("high", 2, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(1).NodeSelector("pool", "a") }),
			makeGang("low", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(2).NodeSelector("pool", "b") })),
		jobs: []*api.JobInfo{
			job("elastic", 0, 2, api.JobRunning), job("gone", 0, 1, api.JobRunning),
			job("high", 10, 2, api.JobPending), job("low", 0, 1, api.JobInqueue),
		},
		want:     map[api.JobID]map[string]string{"ns/high": {"high-0": "gpu-0", "high-1": "gpu-0"}},
		admitted: []api.JobID{"ns/high"},
		revoked:  []api.JobID{"ns/low"},
	}, {
		// 5 GPUs, the queue's budget one short for high: low0, of the
		// lowest priority (and fitting nowhere), gives its admission
		// back; low1 keeps its own, and binds.
		name:  "the lowest priority gives its admission back first, and no more than the budget needs",
		nodes: []*corev1.Node{st.MakeNode("gpu-0").Capacity("16", "64Gi", 5).Obj()},
		pods: slices.Concat(elasticLost[:2], gpuGang("high", 2, 1), gpuGang("low1", 1, 1),
			makeGang("low0", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(1).NodeSelector("pool", "none") })),
		jobs: []*api.JobInfo{
			job("elastic", 0, 2, api.JobRunning), job("high", 10, 2, api.JobPending),
			job("low1", 5, 1, api.JobInqueue), job("low0", 0, 1, api.JobInqueue),
		},
		want:     map[api.JobID]map[string]string{"ns/high": {"high-0": "gpu-0", "high-1": "gpu-0"}, "ns/low1": {"low1-0": "gpu-0"}},
		admitted: []api.JobID{"ns/high"},
		revoked:  []api.JobID{"ns/low0"},
	}, {
		// peer, of high's priority, holds 1 GPU of the budget and fits
		// nowhere: with low's GPU given back the budget is still one
		// short, so low keeps its admission, and binds.
		name:  "a budget the lower-priority admissions cannot free: nothing is given back",
		nodes: []*corev1.Node{gpu("gpu-0")},
		pods: slices.Concat(elasticLost[:2], gpuGang("high", 2, 1), gpuGang("low", 1, 1),
			makeGang("peer", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(1).NodeSelector("pool", "none") })),
		jobs: []*api.JobInfo{
			job("elastic", 0, 2, api.JobRunning), job("high", 10, 2, api.JobPending),
			job("low", 0, 1, api.JobInqueue), job("peer", 10, 1, api.JobInqueue),
		},
		want: map[api.JobID]map[string]string{"ns/low": {"low-0": "gpu-0"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := st.MakeQueue(api.DefaultQueue)
			if tt.capacity > 0 {
				def.Capability = api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: tt.capacity}}
			}
			c := cluster{nodes: tt.nodes, pods: tt.pods, jobs: tt.jobs, queues: []*api.QueueInfo{def}}
			ssn := run(t, c, plugins.WithQueueShare(), preemptPipeline()...)
			if got := placed(ssn); !maps.EqualFunc(got, tt.want, maps.Equal) {
				t.Errorf("bound %v, want %v", got, tt.want)
			}
			if got := evicted(ssn); len(got) != 0 {
				t.Errorf("evicted %v: the room that is leaving was enough", got)
			}
			if got := slices.Sorted(slices.Values(ssn.Admitted())); !slices.Equal(got, tt.admitted) {
				t.Errorf("admitted %v, want %v", got, tt.admitted)
			}
			if got := ssn.Revoked(); !slices.Equal(got, tt.revoked) {
				t.Errorf("revoked %v, want %v", got, tt.revoked)
			}
			for id, want := range tt.findings {
				if f := ssn.Unschedulable()[id]; !strings.Contains(f.Message, want) {
					t.Errorf("%s's finding %q, want it to say %q", id, f.Message, want)
				}
			}
			checkInvariants(t, c, ssn.Bindings())
		})
	}
}

// A gang that preempts is nominated to the nodes of its trial (the pods'
// status.nominatedNodeName, framework.Session.Nominate), for as long as
// it waits for them; once its room is free, preempt places it itself,
// before allocate's queue walk, which would give the room to a gang of a
// queue it takes first; a nomination no preemption stands behind any more
// is cleared.
func TestPreemptNominates(t *testing.T) {
	gpu := func(name, pool string) *corev1.Node {
		return st.MakeNode(name).Capacity("16", "64Gi", 4).Label("pool", pool).Obj()
	}
	nodes := []*corev1.Node{gpu("gpu-0", "a"), gpu("gpu-1", "b")}
	job := func(name string, queue api.QueueID, prio int32, phase api.JobPhase) *api.JobInfo {
		return withPhase(st.MakeJob("ns", name).Queue(queue).Priority(prio).MinMember(1).Obj(), phase)
	}
	// high, of research, asks all of gpu-0's GPUs; research's share is
	// larger than default's (busy's 2 GPUs on gpu-1), so allocate walks
	// default first, where low asks for a GPU of gpu-0 too.
	high := func(mod func(*st.PodWrapper)) []*corev1.Pod {
		return makeGang("high", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(4).NodeSelector("pool", "a"); mod(p) })
	}
	busy := []*corev1.Pod{st.MakePod("ns", "busy-0").Job("busy").Req("1", "1Gi").GPU(2).Node("gpu-1").Phase(corev1.PodRunning).Obj()}
	low := makeGang("low", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").GPU(1).NodeSelector("pool", "a") })
	jobs := []*api.JobInfo{
		job("busy", "research", 0, api.JobRunning), job("high", "research", 10, api.JobPending), job("low", api.DefaultQueue, 0, api.JobPending),
	}
	// part, of research, is partial: part-0 runs on gpu-1, part-1 was
	// recreated and asks all of gpu-0's GPUs.
	partial := func() []*corev1.Pod {
		return []*corev1.Pod{
			st.MakePod("ns", "part-0").Job("part").Req("1", "1Gi").GPU(1).Node("gpu-1").Phase(corev1.PodRunning).Controlled().Obj(),
			st.MakePod("ns", "part-1").Job("part").Req("1", "1Gi").GPU(4).NodeSelector("pool", "a").Controlled().Obj(),
		}
	}
	partialJob := func(prio int32) *api.JobInfo {
		return withPhase(st.MakeJob("ns", "part").Queue("research").Priority(prio).MinMember(2).Obj(), api.JobRunning)
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		jobs []*api.JobInfo
		// want is what the cycle binds; nominated the nominations it
		// writes, pod -> node ("" clears one).
		want      map[api.JobID]map[string]string
		nominated map[string]string
	}{{
		name: "a gang that preempts is nominated where its trial placed it",
		pods: slices.Concat(busy, high(func(*st.PodWrapper) {}),
			[]*corev1.Pod{st.MakePod("ns", "victim-0").Job("victim").Req("1", "1Gi").GPU(2).Node("gpu-0").Phase(corev1.PodRunning).Controlled().Obj()}),
		jobs:      append(slices.Clone(jobs[:2]), job("victim", "research", 0, api.JobRunning)),
		want:      map[api.JobID]map[string]string{},
		nominated: map[string]string{"high-0": "gpu-0"},
	}, {
		name:      "nominated already: nothing written while it waits",
		pods:      slices.Concat(busy, high(func(p *st.PodWrapper) { p.Nominated("gpu-0") }), []*corev1.Pod{victim("victim", "victim-0", "gpu-0", 2)}),
		jobs:      append(slices.Clone(jobs[:2]), job("victim", "research", 0, api.JobRunning)),
		want:      map[api.JobID]map[string]string{},
		nominated: map[string]string{},
	}, {
		// The victims are gone: without the nomination allocate walks
		// default first, and low takes a GPU high needs (next case).
		name:      "nominated, the room free: placed before allocate's queue walk",
		pods:      slices.Concat(busy, high(func(p *st.PodWrapper) { p.Nominated("gpu-0") }), low),
		jobs:      jobs,
		want:      map[api.JobID]map[string]string{"ns/high": {"high-0": "gpu-0"}},
		nominated: map[string]string{},
	}, {
		name:      "not nominated: allocate's queue order decides",
		pods:      slices.Concat(busy, high(func(*st.PodWrapper) {}), low),
		jobs:      jobs,
		want:      map[api.JobID]map[string]string{"ns/low": {"low-0": "gpu-0"}},
		nominated: map[string]string{},
	}, {
		// part lost a member, recreated asking all of gpu-0's GPUs;
		// its other member runs on gpu-1. Priority first: a partial gang
		// above the nominated one is completed and high waits again,
		// its nomination cleared (part is no victim of a lower gang).
		name:      "nominated, the room free, a partial gang of higher priority needs it: the partial gang is completed",
		pods:      slices.Concat(busy, high(func(p *st.PodWrapper) { p.Nominated("gpu-0") }), partial()),
		jobs:      append(slices.Clone(jobs[:2]), partialJob(20)),
		want:      map[api.JobID]map[string]string{"ns/part": {"part-1": "gpu-0"}},
		nominated: map[string]string{"high-0": ""},
	}, {
		name:      "nominated, the room free, a partial gang of lower priority needs it: the nominated gang is placed",
		pods:      slices.Concat(busy, high(func(p *st.PodWrapper) { p.Nominated("gpu-0") }), partial()),
		jobs:      append(slices.Clone(jobs[:2]), partialJob(5)),
		want:      map[api.JobID]map[string]string{"ns/high": {"high-0": "gpu-0"}},
		nominated: map[string]string{},
	}, {
		// high asks for pool c, which no node has: it fits nowhere and
		// has no victim.
		name:      "a nomination no preemption stands behind is cleared",
		pods:      slices.Concat(busy, makeGang("high", 1, func(p *st.PodWrapper) { p.Req("1", "1Gi").NodeSelector("pool", "c").Nominated("gpu-0") })),
		jobs:      jobs[:2],
		want:      map[api.JobID]map[string]string{},
		nominated: map[string]string{"high-0": ""},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster{nodes: nodes, pods: tt.pods, jobs: tt.jobs, queues: []*api.QueueInfo{st.MakeQueue(api.DefaultQueue), st.MakeQueue("research")}}
			ssn := run(t, c, plugins.WithQueueShare(), preemptPipeline()...)
			if got := placed(ssn); !maps.EqualFunc(got, tt.want, maps.Equal) {
				t.Errorf("bound %v, want %v", got, tt.want)
			}
			nominated := map[string]string{}
			for _, d := range ssn.Nominations() {
				nominated[d.Task.Name] = d.Node
			}
			if !maps.Equal(nominated, tt.nominated) {
				t.Errorf("nominated %v, want %v", nominated, tt.nominated)
			}
			checkInvariants(t, c, ssn.Bindings())
		})
	}
}
