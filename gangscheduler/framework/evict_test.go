package framework_test

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Evict frees a task's room tentatively; Discard restores the node and the
// task exactly; Commit records the eviction and leaves the task on its node
// as Releasing. Handlers hear every move.
func TestStatementEvict(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(1, "4"),
		[]*corev1.Pod{
			st.MakePod("ns", "run").Job("low").Req("2", "1Gi").HostPort("", "", 80).Node("n00").Phase(corev1.PodRunning).Obj(),
			st.MakePod("ns", "bound").Job("low").Req("1", "").Node("n00").Obj(),
			st.MakePod("ns", "going").Job("low").Req("1", "").Node("n00").Phase(corev1.PodRunning).Terminating().Obj(),
			st.MakePod("ns", "new").Job("high").Req("2", "").HostPort("", "", 80).Obj(),
		},
		[]*api.JobInfo{st.MakeJob("ns", "low").Obj(), st.MakeJob("ns", "high").Obj()})
	var events []string
	var enqueued []api.JobID
	ssn := framework.OpenSession(snap, hooks{events: &events, enqueued: &enqueued})
	n := snap.NodeList[0]
	low, high := snap.Jobs["ns/low"], snap.Jobs["ns/high"]
	task := func(j *api.JobInfo, name string) *api.TaskInfo {
		for _, t := range j.Tasks {
			if t.Name == name {
				return t
			}
		}
		panic(name)
	}
	run, bound, going, pending := task(low, "run"), task(low, "bound"), task(low, "going"), task(high, "new")
	idle, used := n.Idle.Clone(), n.Used.Clone()
	if pending.FitsIn(&n.Idle) || !n.PortsConflict(pending.HostPorts) {
		t.Fatal("setup: the pending pod must not fit before the eviction")
	}

	stmt := ssn.Statement()
	if err := stmt.Evict(pending, "x"); err == nil {
		t.Error("evicting a pending task is not an error")
	}
	for _, tk := range []*api.TaskInfo{run, bound} {
		if err := stmt.Evict(tk, "preempted"); err != nil {
			t.Fatal(err)
		}
	}
	if err := stmt.Evict(run, "again"); err == nil {
		t.Error("evicting a task twice is not an error")
	}
	if run.Status != api.Releasing || bound.Status != api.Releasing || n.PortsConflict(pending.HostPorts) {
		t.Fatalf("after Evict: %v %v, port conflict %v", run.Status, bound.Status, n.PortsConflict(pending.HostPorts))
	}
	if err := stmt.Allocate(pending, n); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Evict(pending, "x"); err == nil {
		t.Error("evicting a task allocated in this session is not an error")
	}
	stmt.Discard()
	if !n.Idle.Equal(&idle) || !n.Used.Equal(&used) || len(n.Tasks) != 3 || !n.PortsConflict(pending.HostPorts) {
		t.Errorf("Discard did not restore the node: idle %v (want %v), %d tasks", n.Idle, idle, len(n.Tasks))
	}
	if run.Status != api.Running || bound.Status != api.Bound || pending.Status != api.Pending {
		t.Errorf("Discard left statuses %v %v %v", run.Status, bound.Status, pending.Status)
	}
	if err := stmt.Evict(run, "x"); !errors.Is(err, framework.ErrStatementClosed) {
		t.Errorf("Evict after Discard = %v, want ErrStatementClosed", err)
	}

	events = nil
	stmt = ssn.Statement()
	for _, tk := range []*api.TaskInfo{run, going} {
		if err := stmt.Evict(tk, "preempted"); err != nil {
			t.Fatal(err)
		}
	}
	if stmt.Evicted() != 2 {
		t.Errorf("Evicted = %d, want 2", stmt.Evicted())
	}
	stmt.Commit()
	if !n.Idle.Equal(&idle) || len(n.Tasks) != 3 {
		t.Errorf("a committed eviction must keep holding its node until the pod is gone: idle %v, want %v", n.Idle, idle)
	}
	if run.Status != api.Releasing || going.Status != api.Releasing {
		t.Errorf("committed evictions are %v and %v, want Releasing", run.Status, going.Status)
	}
	got := ssn.Evictions()
	if len(got) != 1 || got[0].Task != run || got[0].Node != "n00" || got[0].Reason != "preempted" {
		t.Errorf("Evictions = %+v, want only run on n00: a pod already terminating is not evicted again", got)
	}
	want := []string{"-run@n00", "-going@n00", "+going@n00", "+run@n00"}
	if !slices.Equal(events, want) {
		t.Errorf("events = %v, want %v", events, want)
	}
	if len(ssn.Bindings()) != 0 {
		t.Error("an eviction produced a binding")
	}
}
