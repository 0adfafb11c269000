package actions_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins"
)

// Which pods request nothing, by the Kubernetes request rules.
func TestRequestsNothing(t *testing.T) {
	zero := resource.MustParse("0")
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"BestEffort", st.MakePod("ns", "p").Obj(), true},
		{"explicit zero requests", st.MakePod("ns", "p").Req("0", "0").Request(st.GPU, "0").Obj(), true},
		{"cpu request", st.MakePod("ns", "p").Req("100m", "").Obj(), false},
		{"GPU limit only (defaulted to a request)", st.MakePod("ns", "p").Limit(st.GPU, "1").Defaulted().Obj(), false},
		{"init container request", st.MakePod("ns", "p").InitContainer("init", false, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}).Obj(), false},
		{"sidecar request", st.MakePod("ns", "p").InitContainer("side", true, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}).Obj(), false},
		{"pod overhead", st.MakePod("ns", "p").Overhead(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}).Obj(), false},
		{"zero overhead", st.MakePod("ns", "p").Overhead(corev1.ResourceList{corev1.ResourceCPU: zero}).Obj(), true},
	}
	for _, tt := range tests {
		if got := actions.RequestsNothing(api.NewTaskInfo("ns/j", tt.pod)); got != tt.want {
			t.Errorf("%s: RequestsNothing = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Backfill places pods that request nothing: of single-member jobs,
// admitted or not, and extra pods of gangs already formed. It never places
// a pod of a multi-member gang that is not formed, admitted or not, nor a
// pod that requests anything. No allocate runs here, so every placement is
// backfill's.
func TestBackfill(t *testing.T) {
	be := func(name, job string) *corev1.Pod { return st.MakePod("ns", name).Job(job).Obj() }
	nodes := []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj(), st.MakeNode("n2").Capacity("4", "16Gi", 0).Label("pool", "x").Obj()}
	c := cluster{
		nodes: nodes,
		pods: []*corev1.Pod{
			be("single-0", "single"),                 // single-member, admitted by enqueue
			be("refused-single-0", "refused-single"), // single-member, refused admission
			be("refused-gang-0", "refused-gang"), be("refused-gang-1", "refused-gang"),
			be("be-gang-0", "be-gang"), be("be-gang-1", "be-gang"), // admitted, multi-member
			// admitted gang whose requesting member cannot fit: no member
			// may be placed
			be("mixed-0", "mixed"), be("mixed-1", "mixed"),
			st.MakePod("ns", "mixed-big").Job("mixed").Req("16", "").Obj(),
			// formed gang: two running, one extra pending
			st.MakePod("ns", "formed-0").Job("formed").Node("n1").Phase(corev1.PodRunning).Obj(),
			st.MakePod("ns", "formed-1").Job("formed").Node("n1").Phase(corev1.PodRunning).Obj(),
			be("formed-extra", "formed"),
			// a role minimum that one pod meets: the master alone readies
			// the job, the worker (tried first, by name) alone does not
			st.MakePod("ns", "roles-a-worker").Job("roles").Role("worker").Obj(),
			st.MakePod("ns", "roles-z-master").Job("roles").Role("master").Obj(),
			// formed, its PodGroup still Pending (a commit whose status
			// write was lost) and refused by the admission check: members
			// on nodes make it admitted whatever its phase says, so its
			// extra pod is placed as any formed gang's
			st.MakePod("ns", "refused-formed-0").Job("refused-formed").Node("n1").Phase(corev1.PodRunning).Obj(),
			st.MakePod("ns", "refused-formed-1").Job("refused-formed").Node("n1").Phase(corev1.PodRunning).Obj(),
			be("refused-formed-extra", "refused-formed"),
			st.MakePod("ns", "cpu-0").Job("cpu").Req("1", "").Obj(),                         // requests something
			st.MakePod("ns", "nowhere-0").Job("nowhere").NodeSelector("pool", "none").Obj(), // fits no node
		},
		jobs: []*api.JobInfo{
			withPhase(st.MakeJob("ns", "single").Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "refused-single").Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "refused-gang").MinMember(2).Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "be-gang").MinMember(2).Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "mixed").MinMember(3).Obj(), api.JobInqueue),
			withPhase(st.MakeJob("ns", "formed").MinMember(2).Obj(), api.JobRunning),
			withPhase(st.MakeJob("ns", "roles").MinMember(1).MinTaskMember("master", 1).Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "refused-formed").MinMember(2).Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "cpu").Obj(), api.JobPending),
			withPhase(st.MakeJob("ns", "nowhere").Obj(), api.JobPending),
		},
	}
	ps := append(plugins.WithQueueShare(), refuse{"ns/refused-single", "ns/refused-gang", "ns/refused-formed"})
	ssn := run(t, c, ps, actions.NewEnqueue(), actions.NewBackfill())
	checkInvariants(t, c, ssn.Bindings())

	var got []string
	for _, d := range ssn.Bindings() {
		got = append(got, d.Task.Name)
	}
	slices.Sort(got)
	want := []string{"formed-extra", "refused-formed-extra", "refused-single-0", "roles-z-master", "single-0"}
	if !slices.Equal(got, want) {
		t.Errorf("backfill placed %v, want %v", got, want)
	}
	// The gangs it must not touch are untouched, and admitted ones stay
	// admitted for allocate to place whole.
	for _, id := range []api.JobID{"ns/refused-gang", "ns/be-gang", "ns/mixed"} {
		for _, task := range ssn.Jobs[id].Tasks {
			if task.Status != api.Pending && task.Status != api.Running {
				t.Errorf("%s: member %s is %v", id, task.Name, task.Status)
			}
		}
	}
	if !ssn.IsAdmitted(ssn.Jobs["ns/be-gang"]) {
		t.Error("setup: be-gang was not admitted, so the test does not show backfill leaves admitted gangs alone")
	}
	// A single-member job it placed is admitted with its pod.
	if !ssn.IsAdmitted(ssn.Jobs["ns/refused-single"]) {
		t.Error("refused-single got its pod but stays Pending")
	}

	// The control: allocate after enqueue places the admitted zero-request
	// gang whole, so it is backfill's rule, not the cluster, that held it.
	ssn = run(t, c, ps, actions.Pipeline()...)
	checkInvariants(t, c, ssn.Bindings())
	if n := len(placed(ssn)["ns/be-gang"]); n != 2 {
		t.Errorf("the pipeline placed %d of be-gang, want both by allocate", n)
	}
	if n := len(placed(ssn)["ns/refused-gang"]); n != 0 {
		t.Errorf("the pipeline placed %d of the refused gang", n)
	}
}

// Without enqueue (the gate off), backfill treats every job as admitted but
// still never forms a multi-member gang.
func TestBackfillAlone(t *testing.T) {
	c := cluster{
		nodes: []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()},
		pods: []*corev1.Pod{
			st.MakePod("ns", "g-0").Job("g").Obj(), st.MakePod("ns", "g-1").Job("g").Obj(),
			st.MakePod("ns", "s-0").Job("s").Obj(),
		},
		jobs: []*api.JobInfo{st.MakeJob("ns", "g").MinMember(2).Obj(), st.MakeJob("ns", "s").Obj()},
	}
	ssn := run(t, c, plugins.Default(), actions.NewBackfill())
	checkInvariants(t, c, ssn.Bindings())
	if got := placed(ssn); len(got) != 1 || got["ns/s"]["s-0"] != "n1" {
		t.Errorf("placed %v, want only s-0", got)
	}
	if len(ssn.Admitted()) != 0 {
		t.Errorf("backfill admitted %v with the gate off", ssn.Admitted())
	}
}

// notReady is a readiness rule beside the gang plugin's: the named jobs
// are never ready.
type notReady []api.JobID

func (notReady) Name() string { return "not-ready" }
func (n notReady) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobReadyFn(func(j *api.JobInfo) bool { return !slices.Contains(n, j.UID) })
}

// Backfill asks the session's readiness rules, not only the gang rule: a
// single-member job that another rule holds back gets nothing.
func TestBackfillAsksJobReady(t *testing.T) {
	c := cluster{
		nodes: []*corev1.Node{st.MakeNode("n1").Capacity("4", "16Gi", 0).Obj()},
		pods:  []*corev1.Pod{st.MakePod("ns", "held-0").Job("held").Obj(), st.MakePod("ns", "free-0").Job("free").Obj()},
		jobs:  []*api.JobInfo{st.MakeJob("ns", "held").Obj(), st.MakeJob("ns", "free").Obj()},
	}
	ssn := run(t, c, append(plugins.Default(), notReady{"ns/held"}), actions.NewBackfill())
	if got := placed(ssn); len(got) != 1 || len(got["ns/free"]) != 1 {
		t.Errorf("placed %v, want only free-0", got)
	}
}

var _ framework.Action = actions.NewBackfill()
