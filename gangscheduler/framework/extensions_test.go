package framework_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// hooks registers every new extension point with recording functions.
type hooks struct {
	events      *[]string
	refuseQueue api.QueueID
	refuseJob   api.JobID
	enqueued    *[]api.JobID
}

func (hooks) Name() string { return "hooks" }
func (h hooks) OnSessionOpen(ssn *framework.Session) {
	ssn.AddEventHandler(framework.EventHandler{
		AllocateFunc:   func(t *api.TaskInfo) { *h.events = append(*h.events, "+"+t.Name+"@"+t.NodeName) },
		DeallocateFunc: func(t *api.TaskInfo) { *h.events = append(*h.events, "-"+t.Name+"@"+t.NodeName) },
	})
	ssn.AddEventHandler(framework.EventHandler{}) // nil funcs are skipped
	ssn.AddAllocatableFn(func(q *api.QueueInfo, _ *api.TaskInfo) bool { return q.Name != h.refuseQueue })
	ssn.AddJobEnqueueableFn(func(j *api.JobInfo, _ *api.Resource) *framework.ValidateResult {
		if j.UID == h.refuseJob {
			return &framework.ValidateResult{Reason: "No", Message: "refused"}
		}
		return nil
	})
	ssn.AddJobEnqueuedFn(func(j *api.JobInfo, _ *api.Resource) { *h.enqueued = append(*h.enqueued, j.UID) })
}

// Allocate and Discard fire events (after the task moved), Commit does not.
func TestEventsAndHooks(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(1, "4"),
		[]*corev1.Pod{st.MakePod("ns", "p0").Job("j").Req("1", "").Obj(), st.MakePod("ns", "p1").Job("j").Req("1", "").Obj()},
		[]*api.JobInfo{st.MakeJob("ns", "j").Obj(), st.MakeJob("ns", "k").Obj()})
	var events []string
	var enqueued []api.JobID
	ssn := framework.OpenSession(snap, hooks{events: &events, refuseQueue: "closed", refuseJob: "ns/k", enqueued: &enqueued})
	tasks := snap.Jobs["ns/j"].PendingTasks()
	n := snap.NodeList[0]

	stmt := ssn.Statement()
	_ = stmt.Allocate(tasks[0], n)
	_ = stmt.Allocate(tasks[1], n)
	stmt.Discard()
	stmt = ssn.Statement()
	_ = stmt.Allocate(tasks[0], n)
	stmt.Commit()
	want := []string{"+p0@n00", "+p1@n00", "-p1@", "-p0@", "+p0@n00"}
	if !slices.Equal(events, want) {
		t.Errorf("events = %v, want %v", events, want)
	}

	if !ssn.Allocatable(st.MakeQueue("default"), tasks[1]) || ssn.Allocatable(st.MakeQueue("closed"), tasks[1]) {
		t.Error("Allocatable does not follow the registered check")
	}
	if plain := framework.OpenSession(snap); !plain.Allocatable(st.MakeQueue("closed"), tasks[1]) ||
		plain.JobEnqueueable(snap.Jobs["ns/k"], &api.Resource{}) != nil {
		t.Error("with no hook registered, everything must be allocatable and enqueueable")
	}
	if ssn.JobEnqueueable(snap.Jobs["ns/j"], &api.Resource{}) != nil {
		t.Error("job j refused")
	}
	if r := ssn.JobEnqueueable(snap.Jobs["ns/k"], &api.Resource{}); r == nil || r.Reason != "No" {
		t.Errorf("job k: %+v, want refused", r)
	}
	ssn.JobEnqueued(snap.Jobs["ns/j"], &api.Resource{})
	if !slices.Equal(enqueued, []api.JobID{"ns/j"}) {
		t.Errorf("enqueued = %v", enqueued)
	}
}

// The admission gate: off, every job may be allocated; on, only admitted
// ones (phase past Pending, or admitted by the session), unless the session
// revoked the admission. A gang that ran and has no member left on a node
// (preempted whole) is admitted afresh.
func TestAdmissionGate(t *testing.T) {
	mk := func(name string, phase api.JobPhase) *api.JobInfo {
		j := st.MakeJob("ns", name).Obj()
		j.Phase = phase
		return j
	}
	jobs := []*api.JobInfo{
		mk("unset", ""), mk("pending", api.JobPending), mk("inqueue", api.JobInqueue), mk("running", api.JobRunning),
		mk("unknown", api.JobUnknown), mk("lost-all", api.JobRunning), mk("lost-all-unknown", api.JobUnknown),
	}
	pods := []*corev1.Pod{
		st.MakePod("ns", "running-0").Job("running").Node("n00").Phase(corev1.PodRunning).Obj(),
		st.MakePod("ns", "unknown-0").Job("unknown").Node("n00").Phase(corev1.PodRunning).Obj(),
		st.MakePod("ns", "unknown-1").Job("unknown").Obj(),
		st.MakePod("ns", "lost-all-0").Job("lost-all").Obj(),
		st.MakePod("ns", "lost-all-unknown-0").Job("lost-all-unknown").Obj(),
	}
	ssn := framework.OpenSession(st.MustSnapshot([]*corev1.Node{st.MakeNode("n00").Obj()}, pods, jobs))
	for _, j := range jobs {
		if !ssn.MayAllocate(j) {
			t.Errorf("gate off: %s may not be allocated", j.Name)
		}
	}
	ssn.EnableAdmission()
	if !ssn.AdmissionEnabled() {
		t.Fatal("gate not on")
	}
	ssn.Admit(jobs[1])
	want := map[string]bool{"unset": false, "pending": true, "inqueue": true, "running": true,
		"unknown": true, "lost-all": false, "lost-all-unknown": false}
	for _, j := range jobs {
		if got := ssn.MayAllocate(j); got != want[j.Name] {
			t.Errorf("gate on: MayAllocate(%s) = %v, want %v", j.Name, got, want[j.Name])
		}
	}

	// Revoked: this session's admission and an earlier one are taken
	// back; only the earlier one is for the commit to write back. A gang
	// with a member on a node stays admitted whoever put it there.
	var undo []func()
	for _, j := range []*api.JobInfo{jobs[1], jobs[2], jobs[4]} {
		undo = append(undo, ssn.RevokeAdmission(j))
	}
	want["pending"], want["inqueue"] = false, false
	for _, j := range jobs {
		if got := ssn.MayAllocate(j); got != want[j.Name] {
			t.Errorf("revoked: MayAllocate(%s) = %v, want %v", j.Name, got, want[j.Name])
		}
	}
	if got := ssn.Revoked(); !slices.Equal(got, []api.JobID{"ns/inqueue"}) {
		t.Errorf("Revoked() = %v, want [ns/inqueue]", got)
	}
	if got := ssn.Admitted(); len(got) != 0 {
		t.Errorf("Admitted() = %v after the revocation, want none", got)
	}
	if ssn.Revocable(jobs[2]) || ssn.Revocable(jobs[4]) || ssn.Revocable(jobs[0]) {
		t.Error("Revocable: a revoked admission, one of a gang on a node, or none")
	}

	// Undone, each is as it was: this session's admission listed again,
	// the earlier one no longer revoked.
	for _, u := range undo {
		u()
	}
	want["pending"], want["inqueue"] = true, true
	for _, j := range jobs {
		if got := ssn.MayAllocate(j); got != want[j.Name] {
			t.Errorf("undone: MayAllocate(%s) = %v, want %v", j.Name, got, want[j.Name])
		}
	}
	if got, rev := ssn.Admitted(), ssn.Revoked(); !slices.Equal(got, []api.JobID{"ns/pending"}) || len(rev) != 0 {
		t.Errorf("undone: Admitted() = %v, Revoked() = %v; want [ns/pending] and none", got, rev)
	}
}

// MinimalGang takes each role's minimum first (in task order), then fills
// minMember with the first remaining tasks, counting placed tasks.
func TestMinimalGang(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pod := func(name, role string, age int, running bool) *corev1.Pod {
		p := st.MakePod("ns", name).Job("j").Role(role).Req("1", "").Created(t0.Add(time.Duration(age) * time.Second))
		if running {
			p.Node("n00").Phase(corev1.PodRunning)
		}
		return p.Obj()
	}
	// Task order: older first. Workers are older than the master, so a
	// plain "first minMember" would leave the master out.
	pods := []*corev1.Pod{
		pod("w0", "worker", 0, false), pod("w1", "worker", 1, false), pod("w2", "worker", 2, false),
		pod("ps0", "ps", 3, false), pod("m0", "master", 4, false),
	}
	tests := []struct {
		name    string
		job     *api.JobInfo
		running []*corev1.Pod
		want    []string
		ok      bool
	}{
		{"minMember only", st.MakeJob("ns", "j").MinMember(2).Obj(), nil, []string{"w0", "w1"}, true},
		{"role minimum first", st.MakeJob("ns", "j").MinMember(3).MinTaskMember("master", 1).Obj(), nil, []string{"w0", "w1", "m0"}, true},
		{"two roles", st.MakeJob("ns", "j").MinMember(3).MinTaskMember("master", 1).MinTaskMember("ps", 1).Obj(), nil, []string{"w0", "ps0", "m0"}, true},
		{"running members count", st.MakeJob("ns", "j").MinMember(3).MinTaskMember("master", 1).Obj(),
			[]*corev1.Pod{pod("m-run", "master", 9, true), pod("w-run", "worker", 9, true)}, []string{"w0"}, true},
		{"already met", st.MakeJob("ns", "j").MinMember(1).Obj(), []*corev1.Pod{pod("w-run", "worker", 9, true)}, []string{}, true},
		{"too few pods", st.MakeJob("ns", "j").MinMember(6).Obj(), nil, []string{"w0", "w1", "w2", "ps0", "m0"}, false},
		{"role short", st.MakeJob("ns", "j").MinMember(2).MinTaskMember("master", 2).Obj(), nil, []string{"w0", "m0"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := st.MustSnapshot(cpuNodes(1, "64"), append(slices.Clone(pods), tt.running...), []*api.JobInfo{tt.job})
			ssn := framework.OpenSession(snap)
			tasks, ok := ssn.MinimalGang(snap.Jobs["ns/j"])
			got := []string{}
			for _, task := range tasks {
				got = append(got, task.Name)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) || ok != tt.ok {
				t.Errorf("MinimalGang = %v, %v; want %v, %v", got, ok, want, tt.ok)
			}
			need := ssn.MinimalNeed(snap.Jobs["ns/j"])
			if tt.ok && need.MilliCPU != int64(1000*len(tt.want)) {
				t.Errorf("MinimalNeed cpu = %dm, want %dm", need.MilliCPU, 1000*len(tt.want))
			}
		})
	}

	// Without pods, the need is minResources.
	j := st.MakeJob("ns", "podless").MinMember(4).Obj()
	j.MinResources = api.Resource{MilliCPU: 7000, Scalars: map[corev1.ResourceName]int64{st.GPU: 8}}
	snap := st.MustSnapshot(cpuNodes(1, "4"), nil, []*api.JobInfo{j})
	if need := framework.OpenSession(snap).MinimalNeed(j); !need.Equal(&j.MinResources) {
		t.Errorf("podless need = %v, want minResources %v", need, j.MinResources)
	}
}

// With no job order registered, older jobs go first, then by UID.
func TestJobCompareAgeFallback(t *testing.T) {
	t0 := time.Unix(1000, 0)
	older := st.MakeJob("ns", "z-older").Created(t0).Obj()
	newer := st.MakeJob("ns", "a-newer").Created(t0.Add(time.Second)).Obj()
	ssn := framework.OpenSession(st.MustSnapshot(nil, nil, nil))
	if ssn.JobCompare(older, newer) >= 0 || ssn.JobCompare(newer, older) <= 0 {
		t.Error("the older job does not go first")
	}
	same := st.MakeJob("ns", "b").Created(t0).Obj()
	if ssn.JobCompare(same, older) >= 0 {
		t.Error("equal age is not broken by name")
	}
}

// Reserve takes, on the node, as much of the task's request as is idle,
// and tells the handlers of an allocation of that amount by a stand-in of
// the task: of its job (so queue and job shares count it), on the node (so
// the rules between pods count it there), with the task's pod and a UID of
// its own (so the handlers that keep pods by UID do not take it for the
// task), nominated on the node. ReleaseHolds gives it all back.
func TestReserveTellsHandlersOfAStandIn(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(1, "4"),
		[]*corev1.Pod{
			st.MakePod("ns", "busy").Job("other").Req("3", "").Node("n00").Phase(corev1.PodRunning).Obj(),
			st.MakePod("ns", "p0").Job("j").Req("2", "").Obj(),
		},
		[]*api.JobInfo{st.MakeJob("ns", "j").Obj(), st.MakeJob("ns", "other").Obj()})
	type event struct {
		sign     string
		uid      api.TaskID
		job      api.JobID
		node     string
		milliCPU int64
	}
	var events []event
	record := func(sign string) func(*api.TaskInfo) {
		return func(t *api.TaskInfo) {
			events = append(events, event{sign, t.UID, t.Job, t.NodeName, t.Resreq.MilliCPU})
		}
	}
	ssn := framework.OpenSession(snap, handlerPlugin{framework.EventHandler{AllocateFunc: record("+"), DeallocateFunc: record("-")}})
	task := snap.Jobs["ns/j"].PendingTasks()[0]
	n := snap.NodeList[0]

	ssn.Reserve([]framework.Decision{{Task: task, Node: n.Name}})
	if n.Idle.MilliCPU != 0 {
		t.Errorf("idle after the reservation: %dm CPU, want 0 (1 of the 2 asked was idle)", n.Idle.MilliCPU)
	}
	if len(n.StandIns) != 1 || n.StandIns[0].Pod != task.Pod || n.StandIns[0].UID != events[0].uid {
		t.Errorf("stand-ins on the node: %v, want the stand-in of %s", n.StandIns, task.Key())
	}
	ssn.ReleaseHolds()
	if n.Idle.MilliCPU != 1000 {
		t.Errorf("idle after ReleaseHolds: %dm CPU, want 1000m", n.Idle.MilliCPU)
	}
	if len(n.StandIns) != 0 || n.Reserved() {
		t.Errorf("after ReleaseHolds: stand-ins %v, reserved %t; want neither", n.StandIns, n.Reserved())
	}
	if len(events) != 2 {
		t.Fatalf("events %+v, want an allocation and its undoing", events)
	}
	for i, sign := range []string{"+", "-"} {
		e := events[i]
		if e.sign != sign || e.job != "ns/j" || e.node != n.Name || e.milliCPU != 1000 || e.uid == task.UID || e.uid != events[0].uid {
			t.Errorf("event %d = %+v; want %s of a stand-in of ns/j, on %s, 1000m CPU, a UID not the task's, the same both times", i, e, sign, n.Name)
		}
	}
}

// handlerPlugin registers one event handler.
type handlerPlugin struct{ h framework.EventHandler }

func (handlerPlugin) Name() string                           { return "handler" }
func (p handlerPlugin) OnSessionOpen(ssn *framework.Session) { ssn.AddEventHandler(p.h) }
