package drf_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/drf"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/priority"
)

// running returns n running pods of job on node n0, each with cpu and gpus.
func running(job string, n int, cpu string, gpus int64) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		p := st.MakePod("ns", fmt.Sprintf("%s-run-%d", job, i)).Job(job).Req(cpu, "1Gi").Node("n0").Phase(corev1.PodRunning)
		if gpus > 0 {
			p.GPU(gpus)
		}
		pods = append(pods, p.Obj())
	}
	return pods
}

// Jobs in order under the plugins: priority first, then dominant share
// (lower first), then age. The dominant share is the largest of the per-
// resource shares: "gpu-heavy" holds little CPU but half the GPUs.
func TestJobOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	nodes := []*corev1.Node{st.MakeNode("n0").Capacity("100", "1000Gi", 8).Obj()}
	var pods []*corev1.Pod
	pods = append(pods, running("big", 4, "10", 0)...)      // 40% cpu
	pods = append(pods, running("small", 1, "10", 0)...)    // 10% cpu
	pods = append(pods, running("gpu-heavy", 1, "1", 4)...) // 1% cpu, 50% gpu
	pods = append(pods, running("urgent-big", 6, "10", 0)...)
	jobs := func() []*api.JobInfo {
		return []*api.JobInfo{
			st.MakeJob("ns", "big").Created(t0).Obj(), // oldest: would go first by age
			st.MakeJob("ns", "small").Created(t0.Add(time.Minute)).Obj(),
			st.MakeJob("ns", "gpu-heavy").Created(t0.Add(2 * time.Minute)).Obj(),
			st.MakeJob("ns", "idle").Created(t0.Add(3 * time.Minute)).Obj(),
			st.MakeJob("ns", "urgent-big").Priority(10).Created(t0.Add(4 * time.Minute)).Obj(),
		}
	}
	order := func(plugins ...framework.Plugin) []string {
		snap := st.MustSnapshot(nodes, pods, jobs())
		ssn := framework.OpenSession(snap, plugins...)
		var js []*api.JobInfo
		for _, j := range snap.Jobs {
			js = append(js, j)
		}
		slices.SortFunc(js, ssn.JobCompare)
		var names []string
		for _, j := range js {
			names = append(names, j.Name)
		}
		return names
	}
	want := []string{"urgent-big", "idle", "small", "big", "gpu-heavy"}
	if got := order(priority.New(), drf.New(drf.Config{})); !slices.Equal(got, want) {
		t.Errorf("priority, drf: %v, want %v", got, want)
	}
	// drf abstains between priorities, so its place in the list does not
	// matter.
	if got := order(drf.New(drf.Config{}), priority.New()); !slices.Equal(got, want) {
		t.Errorf("drf, priority: %v, want %v", got, want)
	}
	// The control: without drf, age decides.
	if got, want := order(priority.New()), []string{"urgent-big", "big", "small", "gpu-heavy", "idle"}; !slices.Equal(got, want) {
		t.Errorf("priority alone: %v, want %v", got, want)
	}
}

// The share follows placements and discards in the session.
func TestShareFollowsSession(t *testing.T) {
	nodes := []*corev1.Node{st.MakeNode("n0").Capacity("10", "100Gi", 0).Obj()}
	pods := append(running("a", 1, "3", 0),
		st.MakePod("ns", "b-0").Job("b").Req("2", "").Obj(), st.MakePod("ns", "b-1").Job("b").Req("2", "").Obj())
	snap := st.MustSnapshot(nodes, pods, []*api.JobInfo{st.MakeJob("ns", "a").Obj(), st.MakeJob("ns", "b").Obj()})
	ssn := framework.OpenSession(snap, drf.New(drf.Config{}))
	a, b := snap.Jobs["ns/a"], snap.Jobs["ns/b"]
	if got := drf.Share(ssn, a); math.Abs(got-0.3) > 1e-12 {
		t.Errorf("a's share = %v, want 0.3", got)
	}
	if ssn.JobCompare(b, a) >= 0 {
		t.Fatal("b holds nothing and does not go first")
	}
	stmt := ssn.Statement()
	for _, task := range b.PendingTasks() {
		_ = stmt.Allocate(task, snap.NodeList[0])
	}
	if ssn.JobCompare(a, b) >= 0 { // b now holds 40%
		t.Error("the order did not follow b's placements")
	}
	stmt.Discard()
	if ssn.JobCompare(b, a) >= 0 {
		t.Error("the order did not follow the discard")
	}
}
