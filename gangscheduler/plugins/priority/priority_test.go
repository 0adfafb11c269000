package priority_test

import (
	"slices"
	"testing"
	"time"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/priority"
)

func TestJobOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	jobs := []*api.JobInfo{
		st.MakeJob("ns", "c-old-low").Created(t0).Obj(),
		st.MakeJob("ns", "b-new-low").Created(t0.Add(time.Minute)).Obj(),
		st.MakeJob("ns", "a-new-low").Created(t0.Add(time.Minute)).Obj(),
		st.MakeJob("ns", "z-newest-high").Priority(100).Created(t0.Add(time.Hour)).Obj(),
		st.MakeJob("ns", "y-negative").Priority(-1).Obj(),
	}
	slices.SortFunc(jobs, priority.JobOrder)
	var got []string
	for _, j := range jobs {
		got = append(got, j.Name)
	}
	want := []string{"z-newest-high", "c-old-low", "a-new-low", "b-new-low", "y-negative"}
	if !slices.Equal(got, want) {
		t.Errorf("job order = %v, want %v", got, want)
	}
}

func TestTaskOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tasks := []*api.TaskInfo{
		api.NewTaskInfo("", st.MakePod("ns", "b").Created(t0).Obj()),
		api.NewTaskInfo("", st.MakePod("ns", "a").Created(t0.Add(time.Hour)).Obj()),
		api.NewTaskInfo("", st.MakePod("ns", "z").Priority(5).Obj()),
	}
	slices.SortFunc(tasks, priority.TaskOrder)
	var got []string
	for _, task := range tasks {
		got = append(got, task.Name)
	}
	if want := []string{"z", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("task order = %v, want %v", got, want)
	}
}

// The plugin registers priority only; the session's age fallback completes
// it, so a session with the plugin orders exactly as JobOrder.
func TestSessionOrderIsJobOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	jobs := []*api.JobInfo{
		st.MakeJob("ns", "c-old-low").Created(t0).Obj(),
		st.MakeJob("ns", "b-new-low").Created(t0.Add(time.Minute)).Obj(),
		st.MakeJob("ns", "a-new-low").Created(t0.Add(time.Minute)).Obj(),
		st.MakeJob("ns", "z-newest-high").Priority(100).Created(t0.Add(time.Hour)).Obj(),
		st.MakeJob("ns", "y-negative").Priority(-1).Obj(),
	}
	ssn := framework.OpenSession(st.MustSnapshot(nil, nil, nil), priority.New())
	bySession, byFunc := slices.Clone(jobs), slices.Clone(jobs)
	slices.SortFunc(bySession, ssn.JobCompare)
	slices.SortFunc(byFunc, priority.JobOrder)
	if !slices.Equal(bySession, byFunc) {
		t.Error("a session with the plugin orders jobs differently from JobOrder")
	}
	if priority.JobPriority(jobs[0], jobs[1]) != 0 {
		t.Error("the registered order has an opinion on jobs of equal priority")
	}
	if priority.JobPriority(jobs[3], jobs[0]) >= 0 {
		t.Error("the higher priority does not go first")
	}
}
