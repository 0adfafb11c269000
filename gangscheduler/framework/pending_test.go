package framework_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

func names(tasks []*api.TaskInfo) string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

// TestSessionPendingTasks: the session lists a job's pending tasks in its
// task order, gives the same list again while they stay pending, and a new
// one, of the tasks pending now, once a placement or its discard changed
// them, leaving the list handed out before as it was.
func TestSessionPendingTasks(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(2, "8"),
		[]*corev1.Pod{
			st.MakePod("ns", "a").Job("j").Req("1", "").Obj(),
			st.MakePod("ns", "b").Job("j").Req("1", "").Obj(),
			st.MakePod("ns", "c").Job("j").Req("1", "").Obj(),
			st.MakePod("ns", "run").Job("j").Req("1", "").Node("n00").Phase(corev1.PodRunning).Obj(),
		},
		[]*api.JobInfo{st.MakeJob("ns", "j").MinMember(2).Obj()})
	ssn := framework.OpenSession(snap)
	// The session's order, not the name order PendingTasks of the job keeps.
	ssn.AddTaskOrderFn(func(l, r *api.TaskInfo) int { return strings.Compare(r.Name, l.Name) })
	job := snap.Jobs["ns/j"]

	first := ssn.PendingTasks(job)
	if got := names(first); got != "c,b,a" {
		t.Fatalf("pending tasks: got %s, want c,b,a", got)
	}
	if again := ssn.PendingTasks(job); &again[0] != &first[0] {
		t.Errorf("asked again with nothing changed: got a new list, want the one kept")
	}

	stmt := ssn.Statement()
	if err := stmt.Allocate(first[1], snap.Nodes["n01"]); err != nil {
		t.Fatal(err)
	}
	if got := names(ssn.PendingTasks(job)); got != "c,a" {
		t.Errorf("after b was placed: got %s, want c,a", got)
	}
	if got := names(first); got != "c,b,a" {
		t.Errorf("the list handed out before changed: %s", got)
	}
	stmt.Discard()
	if got := names(ssn.PendingTasks(job)); got != "c,b,a" {
		t.Errorf("after the placement was discarded: got %s, want c,b,a", got)
	}
}
