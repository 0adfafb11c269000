package api_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

func TestShape(t *testing.T) {
	task := func(job, name, role, cpu string) *api.TaskInfo {
		return api.NewTaskInfo(api.JobID("ns/"+job), st.MakePod("ns", name).Job(job).Role(role).Req(cpu, "1Gi").Obj())
	}
	shape := func(tasks ...*api.TaskInfo) string {
		s, ok := api.Shape(tasks, false)
		if !ok {
			t.Fatalf("no shape for %v", tasks)
		}
		return s
	}
	a := shape(task("a", "a-0", "master", "1"), task("a", "a-1", "worker", "4"))
	tests := []struct {
		name  string
		other string
		same  bool
	}{
		{name: "another job, other names, the same pods", other: shape(task("b", "b-0", "master", "1"), task("b", "b-x", "worker", "4")), same: true},
		{name: "another role", other: shape(task("b", "b-0", "master", "1"), task("b", "b-1", "launcher", "4"))},
		{name: "another request", other: shape(task("b", "b-0", "master", "1"), task("b", "b-1", "worker", "5"))},
		{name: "another order", other: shape(task("b", "b-1", "worker", "4"), task("b", "b-0", "master", "1"))},
		{name: "one pod fewer", other: shape(task("b", "b-0", "master", "1"))},
	}
	for _, tc := range tests {
		if (tc.other == a) != tc.same {
			t.Errorf("%s: same = %v, want %v", tc.name, tc.other == a, tc.same)
		}
	}
	// Another scheduler's running pod gets no class.
	unclassed := api.NewTaskInfo("", st.MakePod("ns", "unclassed").Req("1", "1Gi").Node("n0").Phase(corev1.PodRunning).Obj())
	if _, ok := api.Shape([]*api.TaskInfo{unclassed}, false); ok {
		t.Error("a task without a class signature has a shape")
	}
}
