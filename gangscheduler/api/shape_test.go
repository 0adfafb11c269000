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
	labelled := func(job, name, role, cpu string) *api.TaskInfo {
		return api.NewTaskInfo(api.JobID("ns/"+job), st.MakePod("ns", name).Job(job).Role(role).Req(cpu, "1Gi").Labels("team", "x").Obj())
	}
	a := []*api.TaskInfo{task("a", "a-0", "master", "1"), task("a", "a-1", "worker", "4")}
	tests := []struct {
		name  string
		other []*api.TaskInfo
		// same and sameWithLabels: one shape without and with labels.
		same, sameWithLabels bool
	}{
		{name: "another job, other names, the same pods", other: []*api.TaskInfo{task("b", "b-0", "master", "1"), task("b", "b-x", "worker", "4")}, same: true, sameWithLabels: true},
		{name: "another role", other: []*api.TaskInfo{task("b", "b-0", "master", "1"), task("b", "b-1", "launcher", "4")}},
		{name: "another request", other: []*api.TaskInfo{task("b", "b-0", "master", "1"), task("b", "b-1", "worker", "5")}},
		{name: "another order", other: []*api.TaskInfo{task("b", "b-1", "worker", "4"), task("b", "b-0", "master", "1")}},
		{name: "one pod fewer", other: []*api.TaskInfo{task("b", "b-0", "master", "1")}},
		{name: "other labels", other: []*api.TaskInfo{task("b", "b-0", "master", "1"), labelled("b", "b-1", "worker", "4")}, same: true},
	}
	for _, tc := range tests {
		for _, withLabels := range []bool{false, true} {
			want := tc.same
			if withLabels {
				want = tc.sameWithLabels
			}
			sa, okA := api.Shape(a, withLabels)
			so, okO := api.Shape(tc.other, withLabels)
			if !okA || !okO {
				t.Fatalf("%s: no shape", tc.name)
			}
			if (sa == so) != want {
				t.Errorf("%s, labels %v: same = %v, want %v", tc.name, withLabels, sa == so, want)
			}
			if got := api.SameShape(a, tc.other, withLabels); got != want {
				t.Errorf("%s, labels %v: SameShape = %v, want %v", tc.name, withLabels, got, want)
			}
			ha, _ := api.ShapeHash(a, withLabels)
			ho, _ := api.ShapeHash(tc.other, withLabels)
			if want && ha != ho {
				t.Errorf("%s, labels %v: one shape, hashes %x and %x", tc.name, withLabels, ha, ho)
			}
		}
	}
	// Another scheduler's running pod gets no class.
	unclassed := api.NewTaskInfo("", st.MakePod("ns", "unclassed").Req("1", "1Gi").Node("n0").Phase(corev1.PodRunning).Obj())
	if _, ok := api.Shape([]*api.TaskInfo{unclassed}, false); ok {
		t.Error("a task without a class signature has a shape")
	}
	if _, ok := api.ShapeHash([]*api.TaskInfo{unclassed}, false); ok {
		t.Error("a task without a class signature has a shape hash")
	}
}
