package actions_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/gang"
)

// gpuCluster returns n nodes of 8 GPUs with used GPUs taken on each.
func gpuCluster(n int, used int64) ([]*corev1.Node, []*corev1.Pod) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range n {
		node, pod := gpuNode(string(rune('a'+i))+"-gpu", 8, used)
		nodes = append(nodes, node)
		if pod != nil {
			pods = append(pods, pod)
		}
	}
	return nodes, pods
}

func podless(name string, min int32, gpus int64) *api.JobInfo {
	j := st.MakeJob("ns", name).MinMember(min).Obj()
	j.MinResources = api.Resource{MilliCPU: 1000 * int64(min), Scalars: map[corev1.ResourceName]int64{st.GPU: gpus}}
	return withPhase(j, api.JobPending)
}

// A Pending gang is admitted only if its minimal gang fits node by node:
// the same GPUs in aggregate are not enough when no node has room for one
// pod. Admission leaves no trace on the nodes.
func TestEnqueueFitsNodeByNode(t *testing.T) {
	fourFree, fourFreeUsed := gpuCluster(2, 4) // 2 nodes x 4 free GPUs
	twoFree, twoFreeUsed := gpuCluster(4, 6)   // 4 nodes x 2 free GPUs: 8 in aggregate
	cpuPool := st.MakeNode("cpu").Capacity("2", "8Gi", 0).Label("pool", "cpu").Obj()
	master := st.MakePod("ns", "j-master").Job("j").Role("master").Req("4", "").NodeSelector("pool", "cpu").Obj()
	tests := []struct {
		name     string
		nodes    []*corev1.Node
		pods     []*corev1.Pod
		job      *api.JobInfo
		admitted bool
		message  string // part of the refusal
	}{
		{"fits node by node", fourFree, append(gpuGang("j", 2, 4), fourFreeUsed...),
			withPhase(st.MakeJob("ns", "j").MinMember(2).Obj(), api.JobPending), true, ""},
		{"fits in aggregate only", twoFree, append(gpuGang("j", 2, 4), twoFreeUsed...),
			withPhase(st.MakeJob("ns", "j").MinMember(2).Obj(), api.JobPending), false, "Insufficient nvidia.com/gpu"},
		{"only the minimal gang must fit", fourFree, append(gpuGang("j", 4, 4), fourFreeUsed...),
			withPhase(st.MakeJob("ns", "j").MinMember(2).Obj(), api.JobPending), true, ""},
		{"the whole minimal gang must fit", fourFree, append(gpuGang("j", 4, 4), fourFreeUsed...),
			withPhase(st.MakeJob("ns", "j").MinMember(3).Obj(), api.JobPending), false, "do not fit node by node"},
		{"a role minimum must fit", append(slices.Clone(fourFree), cpuPool), append(append(gpuGang("j", 2, 4), master), fourFreeUsed...),
			withPhase(st.MakeJob("ns", "j").MinMember(2).MinTaskMember("master", 1).Obj(), api.JobPending), false, "j-master"},
		{"unset phase is pending", fourFree, append(gpuGang("j", 2, 4), fourFreeUsed...),
			st.MakeJob("ns", "j").MinMember(2).Obj(), true, ""},
		// Without pods only the aggregate can be checked: the documented
		// limitation admits what the gang above could not place.
		{"no pods: minResources within the aggregate", twoFree, twoFreeUsed, podless("j", 2, 8), true, ""},
		{"no pods: minResources beyond the aggregate", twoFree, twoFreeUsed, podless("j", 2, 10), false, "minResources"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster{nodes: tt.nodes, pods: tt.pods, jobs: []*api.JobInfo{tt.job}}
			// The default plugins have no queue share: the fit alone decides.
			before := nodeState(run(t, c, plugins.Default()))
			ssn := run(t, c, plugins.Default(), actions.NewEnqueue())
			job := ssn.Jobs["ns/j"]
			if got := ssn.IsAdmitted(job); got != tt.admitted {
				t.Fatalf("admitted = %v, want %v (record %+v)", got, tt.admitted, ssn.Unschedulable()["ns/j"])
			}
			if got := ssn.Admitted(); tt.admitted != slices.Equal(got, []api.JobID{"ns/j"}) {
				t.Errorf("Admitted() = %v", got)
			}
			u, recorded := ssn.Unschedulable()["ns/j"]
			if !tt.admitted && (u.Reason != actions.ReasonNotEnoughResources || !strings.Contains(u.Message, tt.message)) {
				t.Errorf("record %+v, want %s mentioning %q", u, actions.ReasonNotEnoughResources, tt.message)
			}
			if tt.admitted && recorded {
				t.Errorf("admitted job has a record %+v", u)
			}
			if after := nodeState(ssn); !maps.Equal(before, after) {
				t.Errorf("enqueue left trial placements on nodes:\nbefore %v\nafter  %v", before, after)
			}
			for _, task := range job.Tasks {
				if task.Status != api.Pending {
					t.Errorf("task %s left %v", task.Name, task.Status)
				}
			}
			if len(ssn.Bindings()) != 0 {
				t.Errorf("enqueue bound %v", ssn.Bindings())
			}
			// With the queue share (one queue: it deserves the whole
			// cluster or its request) the verdict is the same.
			ssn = run(t, c, plugins.WithQueueShare(), actions.NewEnqueue())
			if got := ssn.IsAdmitted(ssn.Jobs["ns/j"]); got != tt.admitted {
				t.Errorf("with the queue share: admitted = %v, want %v (%+v)", got, tt.admitted, ssn.Unschedulable()["ns/j"])
			}
		})
	}

	// The aggregate case really is one: the session counts enough idle
	// GPUs for the gang that was refused.
	ssn := run(t, cluster{nodes: twoFree, pods: twoFreeUsed}, nil)
	if idle := idleGPUs(ssn); idle < 2*4 {
		t.Errorf("setup: only %d idle GPUs in aggregate", idle)
	}
}

// Admissions of one pass count against each other: two gangs that each fit
// alone but not together are not both admitted.
func TestEnqueueAdmissionsAddUp(t *testing.T) {
	node, _ := gpuNode("n1", 8, 0)
	jobs := []*api.JobInfo{
		withPhase(st.MakeJob("ns", "a").MinMember(2).Obj(), api.JobPending),
		withPhase(st.MakeJob("ns", "b").MinMember(2).Obj(), api.JobPending),
	}
	both := cluster{nodes: []*corev1.Node{node}, pods: append(gpuGang("a", 2, 4), gpuGang("b", 2, 4)...), jobs: jobs}
	ssn := run(t, both, plugins.WithQueueShare(), actions.NewEnqueue())
	if !ssn.IsAdmitted(ssn.Jobs["ns/a"]) || ssn.IsAdmitted(ssn.Jobs["ns/b"]) {
		t.Errorf("admitted %v, want only ns/a (first by name)", ssn.Admitted())
	}
	if idleGPUs(ssn) != 8 {
		t.Errorf("%d idle GPUs after enqueue, want all 8 back", idleGPUs(ssn))
	}
	// The control: b alone is admitted.
	alone := cluster{nodes: []*corev1.Node{node}, pods: gpuGang("b", 2, 4), jobs: jobs[1:]}
	if ssn := run(t, alone, plugins.WithQueueShare(), actions.NewEnqueue()); !ssn.IsAdmitted(ssn.Jobs["ns/b"]) {
		t.Errorf("b alone not admitted: %+v", ssn.Unschedulable()["ns/b"])
	}
}

// Jobs without pods and jobs with pods of one pass count against each
// other in both orders: a podless job's aggregate sees the trial placements
// held before it, however many podless jobs came earlier.
func TestEnqueuePodlessAfterHeldPlacements(t *testing.T) {
	node, _ := gpuNode("n1", 8, 0)
	tests := []struct {
		name     string
		lastGPUs int64 // what the last podless job asks for
		admitted []api.JobID
	}{
		// a (no pods, 2 GPUs) is admitted first; b (a pod of 4 GPUs) is
		// placed on trial; 8 - 2 - 4 = 2 GPUs are left for c.
		{"what is left fits", 2, []api.JobID{"ns/a", "ns/b", "ns/c"}},
		{"more than is left", 3, []api.JobID{"ns/a", "ns/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := []*api.JobInfo{
				podless("a", 1, 2),
				withPhase(st.MakeJob("ns", "b").MinMember(1).Obj(), api.JobPending),
				podless("c", 1, tt.lastGPUs),
			}
			c := cluster{nodes: []*corev1.Node{node}, pods: gpuGang("b", 1, 4), jobs: jobs}
			ssn := run(t, c, plugins.Default(), actions.NewEnqueue())
			if got := slices.Sorted(slices.Values(ssn.Admitted())); !slices.Equal(got, tt.admitted) {
				t.Errorf("admitted %v, want %v (c: %+v)", got, tt.admitted, ssn.Unschedulable()["ns/c"])
			}
		})
	}
}

// An over-committed node (a pod bound by hand past its GPUs) frees
// nothing, and takes nothing from the other nodes' idle either.
func TestEnqueuePodlessOverCommitted(t *testing.T) {
	over, overPod := gpuNode("a-over", 4, 6)
	free, _ := gpuNode("b-free", 8, 0)
	for _, tt := range []struct {
		gpus     int64
		admitted bool
	}{{8, true}, {9, false}} {
		c := cluster{nodes: []*corev1.Node{over, free}, pods: []*corev1.Pod{overPod}, jobs: []*api.JobInfo{podless("j", 1, tt.gpus)}}
		ssn := run(t, c, plugins.Default(), actions.NewEnqueue())
		if got := ssn.IsAdmitted(ssn.Jobs["ns/j"]); got != tt.admitted {
			t.Errorf("%d GPUs with 8 idle in aggregate: admitted %v, want %v (%+v)", tt.gpus, got, tt.admitted, ssn.Unschedulable()["ns/j"])
		}
	}
}

// Queue capability, closed and missing queues.
func TestEnqueueQueues(t *testing.T) {
	nodes, _ := gpuCluster(4, 0) // 32 GPUs
	const capGPUs, perJob = 8, 4
	capped := func() *api.QueueInfo {
		q := st.MakeQueue("capped")
		q.Capability = api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: capGPUs}}
		return q
	}
	var pods []*corev1.Pod
	var jobs []*api.JobInfo
	for _, name := range []string{"j1", "j2", "j3"} {
		pods = append(pods, gpuGang(name, 1, perJob)...)
		jobs = append(jobs, withPhase(st.MakeJob("ns", name).Queue("capped").Obj(), api.JobPending))
	}
	runningPod := st.MakePod("ns", "run-0").Job("run").Req("1", "").GPU(perJob).Node("a-gpu").Phase(corev1.PodRunning).Obj()
	running := withPhase(st.MakeJob("ns", "run").Queue("capped").Obj(), api.JobRunning)
	podlessJob := func(gpus int64) *api.JobInfo {
		j := podless("nopods", 1, gpus)
		j.Queue = "capped"
		return j
	}

	tests := []struct {
		name string
		c    cluster
		want int // jobs of j1..j3 admitted
	}{
		{"capability admits what fits", cluster{nodes: nodes, pods: pods, jobs: jobs}, capGPUs / perJob},
		{"running pods count", cluster{nodes: nodes, pods: append(slices.Clone(pods), runningPod), jobs: append(slices.Clone(jobs), running)},
			(capGPUs - perJob) / perJob},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.queues = []*api.QueueInfo{capped()}
			ssn := run(t, tt.c, plugins.WithQueueShare(), actions.NewEnqueue(), actions.NewAllocate())
			admitted := 0
			for _, id := range []api.JobID{"ns/j1", "ns/j2", "ns/j3"} {
				if ssn.IsAdmitted(ssn.Jobs[id]) {
					admitted++
				} else if u := ssn.Unschedulable()[id]; !strings.Contains(u.Message, "capability") {
					t.Errorf("%s refused for %+v, want the capability", id, u)
				}
			}
			if admitted != tt.want {
				t.Errorf("admitted %d jobs, want %d", admitted, tt.want)
			}
			placedGPUs := int64(0)
			for _, d := range ssn.Bindings() {
				placedGPUs += d.Task.Resreq.Scalar(st.GPU)
			}
			if placedGPUs != int64(tt.want*perJob) {
				t.Errorf("allocate placed %d GPUs, want the admitted %d", placedGPUs, tt.want*perJob)
			}
			checkInvariants(t, tt.c, ssn.Bindings())
		})
	}

	// Without pods, minResources counts against the capability.
	for _, tt := range []struct {
		gpus     int64
		admitted bool
	}{{capGPUs, true}, {capGPUs + 1, false}} {
		c := cluster{nodes: nodes, jobs: []*api.JobInfo{podlessJob(tt.gpus)}, queues: []*api.QueueInfo{capped()}}
		ssn := run(t, c, plugins.WithQueueShare(), actions.NewEnqueue())
		if got := ssn.IsAdmitted(ssn.Jobs["ns/nopods"]); got != tt.admitted {
			t.Errorf("podless job with %d GPUs: admitted %v, want %v", tt.gpus, got, tt.admitted)
		}
	}

	// Closed and missing queues admit nothing; an open one beside them does.
	c := cluster{
		nodes: nodes,
		pods:  append(append(gpuGang("closed", 1, 1), gpuGang("missing", 1, 1)...), gpuGang("ok", 1, 1)...),
		jobs: []*api.JobInfo{
			withPhase(st.MakeJob("ns", "closed").Queue("shut").Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "missing").Queue("nowhere").Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "ok").Obj(), api.JobPending),
		},
		queues: []*api.QueueInfo{st.MakeQueue(api.DefaultQueue), {Name: "shut", Weight: 1, State: api.QueueClosed}},
	}
	ssn := run(t, c, plugins.WithQueueShare(), actions.NewEnqueue())
	if got := ssn.Admitted(); !slices.Equal(got, []api.JobID{"ns/ok"}) {
		t.Errorf("admitted %v, want only ns/ok", got)
	}
	for id, reason := range map[api.JobID]string{"ns/closed": actions.ReasonQueueClosed, "ns/missing": actions.ReasonQueueNotFound} {
		if u := ssn.Unschedulable()[id]; u.Reason != reason {
			t.Errorf("%s: record %+v, want %s", id, u, reason)
		}
	}
}

// Jobs admitted before (Inqueue, Running) are not checked again, even when
// they would not fit now; a job short of pods is not admitted.
func TestEnqueueSkipsAdmittedAndShortJobs(t *testing.T) {
	node, _ := gpuNode("n1", 8, 0)
	run0, run1 := gpuGang("run", 2, 8)[0], gpuGang("run", 2, 8)[1]
	run0.Spec.NodeName = "n1" // a Running gang has members on nodes
	c := cluster{
		nodes: []*corev1.Node{node},
		pods:  append(append(gpuGang("inq", 2, 8), run0, run1), gpuGang("short", 1, 1)...),
		jobs: []*api.JobInfo{
			withPhase(st.MakeJob("ns", "inq").MinMember(2).Obj(), api.JobInqueue),
			withPhase(st.MakeJob("ns", "run").MinMember(2).Obj(), api.JobRunning),
			withPhase(st.MakeJob("ns", "short").MinMember(2).Obj(), api.JobPending),
		},
	}
	ssn := run(t, c, plugins.WithQueueShare(), actions.NewEnqueue())
	for _, id := range []api.JobID{"ns/inq", "ns/run"} {
		if !ssn.IsAdmitted(ssn.Jobs[id]) {
			t.Errorf("%s is no longer admitted", id)
		}
		if u, ok := ssn.Unschedulable()[id]; ok {
			t.Errorf("%s was checked again: %+v", id, u)
		}
	}
	if len(ssn.Admitted()) != 0 {
		t.Errorf("this session admitted %v", ssn.Admitted())
	}
	if ssn.IsAdmitted(ssn.Jobs["ns/short"]) || ssn.Unschedulable()["ns/short"].Reason != gang.ReasonNotEnoughPods {
		t.Errorf("short job: admitted %v, record %+v", ssn.IsAdmitted(ssn.Jobs["ns/short"]), ssn.Unschedulable()["ns/short"])
	}
	// The control: the same Inqueue gang as Pending is refused.
	c.jobs[0] = withPhase(st.MakeJob("ns", "inq").MinMember(2).Obj(), api.JobPending)
	if ssn := run(t, c, plugins.WithQueueShare(), actions.NewEnqueue()); ssn.IsAdmitted(ssn.Jobs["ns/inq"]) {
		t.Error("a pending gang of 2 x 8 GPUs was admitted on one 8-GPU node")
	}
}

// After enqueue, allocate places admitted jobs only; without enqueue it
// places every job, as before queues admitted anything.
func TestAllocateOnlyAdmittedAfterEnqueue(t *testing.T) {
	nodes, _ := gpuCluster(2, 0)
	c := cluster{
		nodes: nodes,
		pods:  append(append(gpuGang("refused", 2, 1), gpuGang("pending", 2, 1)...), gpuGang("inqueue", 2, 1)...),
		jobs: []*api.JobInfo{
			withPhase(st.MakeJob("ns", "refused").MinMember(2).Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "pending").MinMember(2).Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "inqueue").MinMember(2).Obj(), api.JobInqueue),
		},
	}
	withRefusal := append(plugins.WithQueueShare(), refuse{"ns/refused"})
	ssn := run(t, c, withRefusal, actions.NewEnqueue(), actions.NewAllocate())
	checkInvariants(t, c, ssn.Bindings())
	got := placed(ssn)
	if len(got["ns/refused"]) != 0 || len(got["ns/pending"]) != 2 || len(got["ns/inqueue"]) != 2 {
		t.Errorf("placed %v, want pending and inqueue whole, nothing of refused", got)
	}
	if u := ssn.Unschedulable()["ns/refused"]; u.Reason != "Refused" {
		t.Errorf("refused job's record %+v was overwritten", u)
	}
	ssn = run(t, c, withRefusal, actions.NewAllocate())
	if got := placed(ssn); len(got["ns/refused"]) != 2 {
		t.Errorf("allocate alone placed %v, want every job", got)
	}
}

var _ framework.Action = actions.NewEnqueue()
