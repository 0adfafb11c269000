package framework_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Nominations lists each task whose nominated node the session changes,
// once, in the order first changed, with the last node asked: none for a
// task nominated there already, or nominated back to where it was.
func TestNominations(t *testing.T) {
	snap := st.MustSnapshot(cpuNodes(2, "4"), []*corev1.Pod{
		st.MakePod("ns", "p0").Job("j").Req("1", "").Obj(),
		st.MakePod("ns", "p1").Job("j").Req("1", "").Nominated("n00").Obj(),
		st.MakePod("ns", "p2").Job("j").Req("1", "").Nominated("n00").Obj(),
		st.MakePod("ns", "p3").Job("j").Req("1", "").Obj(),
	}, []*api.JobInfo{st.MakeJob("ns", "j").Obj()})
	ssn := framework.OpenSession(snap)
	task := map[string]*api.TaskInfo{}
	for _, tk := range snap.Jobs["ns/j"].Tasks {
		task[tk.Name] = tk
	}
	ssn.Nominate([]framework.Decision{
		{Task: task["p0"], Node: "n00"}, // new
		{Task: task["p1"], Node: "n00"}, // there already
		{Task: task["p2"], Node: ""},    // cleared
		{Task: task["p3"], Node: "n00"}, // changed twice, back to none
	})
	ssn.Nominate([]framework.Decision{{Task: task["p0"], Node: "n01"}, {Task: task["p3"], Node: ""}})
	var got []string
	for _, d := range ssn.Nominations() {
		got = append(got, d.Task.Name+"->"+d.Node)
	}
	if want := []string{"p0->n01", "p2->"}; !slices.Equal(got, want) {
		t.Errorf("nominations %v, want %v", got, want)
	}
}
