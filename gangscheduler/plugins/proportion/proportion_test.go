package proportion_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/proportion"
)

func gpuNodes(n int) []*corev1.Node {
	var nodes []*corev1.Node
	for i := range n {
		nodes = append(nodes, st.MakeNode(fmt.Sprintf("n%d", i)).Capacity("16", "64Gi", 8).Obj())
	}
	return nodes
}

// jobPods returns n pending pods of job name, each with cpu and gpus.
func jobPods(name string, n int, cpu string, gpus int64) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		p := st.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Job(name).Req(cpu, "1Gi")
		if gpus > 0 {
			p.GPU(gpus)
		}
		pods = append(pods, p.Obj())
	}
	return pods
}

func queue(name api.QueueID, weight int32) *api.QueueInfo {
	q := st.MakeQueue(name)
	q.Weight = weight
	return q
}

func open(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, jobs []*api.JobInfo, queues ...*api.QueueInfo) (*framework.Session, *api.Snapshot) {
	t.Helper()
	snap := st.MustSnapshot(nodes, pods, jobs, queues...)
	return framework.OpenSession(snap, proportion.New(proportion.Config{})), snap
}

// Deserved shares: by weight where queues want more than their share, a
// queue's request where it wants less (its share flows to the others), a
// capability caps a queue and its remainder flows on, and the cluster is
// the nodes less what pods of no queue hold.
func TestDeserved(t *testing.T) {
	const nodes, gpusPerNode = 4, 8
	total := int64(nodes * gpusPerNode)
	other := st.MakePod("other", "agent").Req("4", "").Node("n0").Phase(corev1.PodRunning).Obj()
	tests := []struct {
		name    string
		queues  []*api.QueueInfo
		demand  map[api.QueueID]int // 4-GPU pods
		wantGPU map[api.QueueID]int64
	}{
		{
			name:    "saturated, weights 1 and 3",
			queues:  []*api.QueueInfo{queue("a", 1), queue("b", 3)},
			demand:  map[api.QueueID]int{"a": 10, "b": 10},
			wantGPU: map[api.QueueID]int64{"a": total * 1 / 4, "b": total * 3 / 4},
		},
		{
			name:    "an idle queue's share flows to the busy one",
			queues:  []*api.QueueInfo{queue("a", 3), queue("b", 1)},
			demand:  map[api.QueueID]int{"b": 10},
			wantGPU: map[api.QueueID]int64{"a": 0, "b": total},
		},
		{
			name:    "a queue wanting less than its share gets its request",
			queues:  []*api.QueueInfo{queue("a", 3), queue("b", 1)},
			demand:  map[api.QueueID]int{"a": 1, "b": 10},
			wantGPU: map[api.QueueID]int64{"a": 4, "b": total - 4},
		},
		{
			name: "capability caps a queue, its remainder flows on",
			queues: []*api.QueueInfo{
				{Name: "a", Weight: 3, State: api.QueueOpen, Capability: api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: 8}}},
				queue("b", 1),
			},
			demand:  map[api.QueueID]int{"a": 10, "b": 10},
			wantGPU: map[api.QueueID]int64{"a": 8, "b": total - 8},
		},
		{
			name:    "a closed queue deserves nothing new",
			queues:  []*api.QueueInfo{queue("a", 1), {Name: "b", Weight: 3, State: api.QueueClosed}},
			demand:  map[api.QueueID]int{"a": 10, "b": 10},
			wantGPU: map[api.QueueID]int64{"a": total, "b": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := []*corev1.Pod{other}
			var jobs []*api.JobInfo
			for _, q := range tt.queues {
				name := "job-" + string(q.Name)
				jobs = append(jobs, st.MakeJob("ns", name).Queue(q.Name).Obj())
				pods = append(pods, jobPods(name, tt.demand[q.Name], "1", 4)...)
			}
			ssn, _ := open(t, gpuNodes(nodes), pods, jobs, tt.queues...)
			tot, attrs := proportion.Attrs(ssn)
			if tot.Scalar(st.GPU) != total || tot.MilliCPU != nodes*16000-4000 {
				t.Errorf("cluster = %v, want %d GPUs and the nodes' CPU less the agent's 4", tot, total)
			}
			for q, want := range tt.wantGPU {
				if got := attrs[q].Deserved.Scalar(st.GPU); got != want {
					t.Errorf("queue %s deserves %d GPUs, want %d", q, got, want)
				}
				// CPU is not saturated: every open queue deserves its request.
				if got, want := attrs[q].Deserved.MilliCPU, attrs[q].Request.MilliCPU; got != want {
					t.Errorf("queue %s deserves %dm CPU, want its request %dm", q, got, want)
				}
			}
		})
	}
}

// Allocatable follows the session: tentative placements count, discards
// give back; an overused queue gets nothing that requests anything, a pod
// that requests nothing still fits, and a capability on pods counts.
func TestAllocatable(t *testing.T) {
	qa, qb := queue("a", 1), queue("b", 1)
	pods := append(jobPods("a", 6, "1", 4), jobPods("b", 6, "1", 4)...)
	pods = append(pods, st.MakePod("ns", "a-be").Job("a").Obj()) // requests nothing
	jobs := func() []*api.JobInfo {
		return []*api.JobInfo{st.MakeJob("ns", "a").Queue("a").Obj(), st.MakeJob("ns", "b").Queue("b").Obj()}
	}
	ssn, snap := open(t, gpuNodes(2), pods, jobs(), qa, qb) // 16 GPUs: 8 each
	_, attrs := proportion.Attrs(ssn)
	perTask := int64(4)
	fits := attrs["a"].Deserved.Scalar(st.GPU) / perTask
	if fits != 2 {
		t.Fatalf("setup: queue a deserves %v", attrs["a"].Deserved)
	}

	var gpuTasks []*api.TaskInfo
	var be *api.TaskInfo
	for _, task := range snap.Jobs["ns/a"].PendingTasks() {
		if task.Name == "a-be" {
			be = task
		} else {
			gpuTasks = append(gpuTasks, task)
		}
	}
	stmt := ssn.Statement()
	for i := range fits {
		if !ssn.Allocatable(qa, gpuTasks[i]) {
			t.Fatalf("task %d of %d refused below the share", i, fits)
		}
		if err := stmt.Allocate(gpuTasks[i], snap.NodeList[0]); err != nil {
			t.Fatal(err)
		}
	}
	if ssn.Allocatable(qa, gpuTasks[fits]) {
		t.Error("a queue at its share takes another GPU task")
	}
	if !ssn.Allocatable(qa, be) {
		t.Error("a pod that requests nothing is refused by an overused queue")
	}
	if !ssn.Allocatable(qb, snap.Jobs["ns/b"].PendingTasks()[0]) {
		t.Error("queue b is refused because of queue a")
	}
	stmt.Discard()
	if !ssn.Allocatable(qa, gpuTasks[fits]) {
		t.Error("Discard did not give the share back")
	}

	// A capability on pods limits even pods that request nothing.
	capped := queue("a", 1)
	capped.Capability = api.Resource{Pods: 1}
	running := st.MakePod("ns", "a-run").Job("a").Node("n0").Phase(corev1.PodRunning).Obj()
	ssn, snap = open(t, gpuNodes(2), append(pods, running), jobs(), capped, qb)
	for _, task := range snap.Jobs["ns/a"].PendingTasks() {
		if task.Name == "a-be" && ssn.Allocatable(capped, task) {
			t.Error("a queue at its pod capability takes another pod")
		}
	}
}

// The queue furthest below its deserved share goes first, and the order
// follows placements.
func TestQueueOrder(t *testing.T) {
	qa, qb := queue("a", 1), queue("b", 3)
	pods := append(jobPods("a", 10, "1", 4), jobPods("b", 10, "1", 4)...)
	jobs := []*api.JobInfo{st.MakeJob("ns", "a").Queue("a").Obj(), st.MakeJob("ns", "b").Queue("b").Obj()}
	ssn, snap := open(t, gpuNodes(4), pods, jobs, qa, qb) // a deserves 8 GPUs, b 24
	if ssn.QueueCompare(qa, qb) >= 0 {
		t.Error("equal (zero) shares are not broken by name")
	}
	stmt := ssn.Statement()
	// a gets 4 of its 8 (share 1/2); b 4 of its 24 (1/6): b goes first.
	_ = stmt.Allocate(snap.Jobs["ns/a"].PendingTasks()[0], snap.NodeList[0])
	_ = stmt.Allocate(snap.Jobs["ns/b"].PendingTasks()[0], snap.NodeList[1])
	if ssn.QueueCompare(qb, qa) >= 0 {
		t.Error("the queue further below its share does not go first")
	}
	stmt.Discard()
	if ssn.QueueCompare(qa, qb) >= 0 {
		t.Error("order did not follow the discard")
	}
}

// Admission budget: held plus admitted-but-unplaced plus the new need must
// stay within deserved and capability; jobs admitted in earlier cycles
// (Inqueue) and this session's admissions count, a revoked admission not.
func TestEnqueueable(t *testing.T) {
	gpus := func(n int64) *api.Resource {
		return &api.Resource{MilliCPU: 1000 * n / 4, Scalars: map[corev1.ResourceName]int64{st.GPU: n}}
	}
	capped := queue("a", 1)
	capped.Capability = api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: 12}}
	jobs := func() []*api.JobInfo {
		inq := st.MakeJob("ns", "inq").Queue("a").MinMember(2).Obj()
		inq.Phase = api.JobInqueue
		return []*api.JobInfo{inq, st.MakeJob("ns", "run").Queue("a").Obj(), st.MakeJob("ns", "new").Queue("a").Obj()}
	}
	pods := append(jobPods("inq", 2, "1", 4), st.MakePod("ns", "run").Job("run").Req("1", "").GPU(4).Node("n0").Phase(corev1.PodRunning).Obj())
	pods = append(pods, jobPods("new", 6, "1", 4)...)
	ssn, snap := open(t, gpuNodes(4), pods, jobs(), capped)
	_, attrs := proportion.Attrs(ssn)
	if held, res := attrs["a"].Allocated.Scalar(st.GPU), attrs["a"].Reserved.Scalar(st.GPU); held != 4 || res != 8 {
		t.Fatalf("queue a holds %d GPUs and reserves %d, want 4 and the Inqueue gang's 8", held, res)
	}
	job := snap.Jobs["ns/new"]
	// 4 held + 8 reserved = 12 = capability: nothing more.
	r := ssn.JobEnqueueable(job, gpus(4))
	if r == nil || !strings.Contains(r.Message, "capability") {
		t.Fatalf("over capability: %+v", r)
	}
	if r := ssn.JobEnqueueable(job, &api.Resource{MilliCPU: 1000}); r != nil {
		t.Errorf("a CPU-only need is refused for GPUs: %v", r.Message)
	}

	// Without the capability the share decides: a deserves its request
	// (4 + 8 + 24 = 36 > 32 GPUs: the cluster).
	ssn, snap = open(t, gpuNodes(4), pods, jobs(), queue("a", 1))
	_, attrs = proportion.Attrs(ssn)
	room := attrs["a"].Deserved.Scalar(st.GPU) - 12
	if r := ssn.JobEnqueueable(snap.Jobs["ns/new"], gpus(room)); r != nil {
		t.Errorf("need %d within the share refused: %s", room, r.Message)
	}
	if r := ssn.JobEnqueueable(snap.Jobs["ns/new"], gpus(room+4)); r == nil || !strings.Contains(r.Message, "share") {
		t.Errorf("need past the share: %+v", r)
	}
	// An admission counts against the next.
	ssn.JobEnqueued(snap.Jobs["ns/new"], gpus(room))
	if r := ssn.JobEnqueueable(snap.Jobs["ns/new"], gpus(4)); r == nil {
		t.Error("the budget did not count the admission")
	}
	// An earlier admission taken back no longer counts (its 8 GPUs), and
	// its undoing counts it again.
	undo := ssn.RevokeAdmission(snap.Jobs["ns/inq"])
	if r := ssn.JobEnqueueable(snap.Jobs["ns/new"], gpus(8)); r != nil {
		t.Errorf("the revoked admission still counts: %s", r.Message)
	}
	undo()
	if r := ssn.JobEnqueueable(snap.Jobs["ns/new"], gpus(4)); r == nil {
		t.Error("the undone revocation is not counted again")
	}
}

// A queue's answer follows every change of what it holds and has
// admitted within the session, although it remembers its last refusal:
// the same need asked again after a change is judged anew.
func TestEnqueueableAfterAChange(t *testing.T) {
	gpus := func(n int64) *api.Resource { // GPUs alone: the GPU share decides
		return &api.Resource{Scalars: map[corev1.ResourceName]int64{st.GPU: n}}
	}
	// Queue a deserves 32 GPUs (the cluster), holds 4 (run) and has 8
	// admitted (inq): room for 20 more.
	const room = 20
	setup := func(t *testing.T) (*framework.Session, *api.Snapshot) {
		inq := st.MakeJob("ns", "inq").Queue("a").MinMember(2).Obj()
		inq.Phase = api.JobInqueue
		jobs := []*api.JobInfo{inq, st.MakeJob("ns", "run").Queue("a").Obj(), st.MakeJob("ns", "new").Queue("a").Obj()}
		pods := append(jobPods("inq", 2, "1", 4), st.MakePod("ns", "run").Job("run").Req("1", "").GPU(4).Node("n0").Phase(corev1.PodRunning).Obj())
		pods = append(pods, jobPods("new", 6, "1", 4)...)
		return open(t, gpuNodes(4), pods, jobs, queue("a", 1))
	}
	placeNew := func(ssn *framework.Session, snap *api.Snapshot) *framework.Statement {
		stmt := ssn.Statement()
		if err := stmt.Allocate(snap.Jobs["ns/new"].PendingTasks()[0], snap.Nodes["n1"]); err != nil {
			t.Fatal(err)
		}
		return stmt
	}
	tests := []struct {
		name string
		// before runs ahead of the first question; it returns what change
		// then does, or change does it alone.
		before              func(*framework.Session, *api.Snapshot) *framework.Statement
		need                int64
		change              func(*framework.Session, *api.Snapshot, *framework.Statement)
		wantFirst, wantThen string // "" for admitted, else a part of the refusal
	}{
		{
			name: "an admission taken back",
			need: room + 4,
			change: func(ssn *framework.Session, snap *api.Snapshot, _ *framework.Statement) {
				ssn.RevokeAdmission(snap.Jobs["ns/inq"])
			},
			wantFirst: "has 8 admitted",
			wantThen:  "",
		},
		{
			name:      "a placement given back",
			before:    placeNew,
			need:      room,
			change:    func(_ *framework.Session, _ *api.Snapshot, stmt *framework.Statement) { stmt.Discard() },
			wantFirst: "holds 8",
			wantThen:  "",
		},
		{
			name: "a placement",
			need: room + 4,
			change: func(ssn *framework.Session, snap *api.Snapshot, _ *framework.Statement) {
				placeNew(ssn, snap)
			},
			wantFirst: "holds 4",
			wantThen:  "holds 8",
		},
		{
			name: "an admission",
			need: room + 4,
			change: func(ssn *framework.Session, snap *api.Snapshot, _ *framework.Statement) {
				ssn.JobEnqueued(snap.Jobs["ns/new"], gpus(4))
			},
			wantFirst: "has 8 admitted",
			wantThen:  "has 12 admitted",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ssn, snap := setup(t)
			var stmt *framework.Statement
			if tc.before != nil {
				stmt = tc.before(ssn, snap)
			}
			check := func(when, want string) {
				t.Helper()
				r := ssn.JobEnqueueable(snap.Jobs["ns/new"], gpus(tc.need))
				switch {
				case want == "" && r != nil:
					t.Errorf("%s: %d GPUs refused: %s", when, tc.need, r.Message)
				case want != "" && (r == nil || !strings.Contains(r.Message, want)):
					t.Errorf("%s: %d GPUs answered %+v, want a refusal saying %q", when, tc.need, r, want)
				}
			}
			check("first", tc.wantFirst)
			check("asked again", tc.wantFirst)
			tc.change(ssn, snap, stmt)
			check("after the change", tc.wantThen)
		})
	}
}
