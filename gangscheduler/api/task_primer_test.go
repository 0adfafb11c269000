package api_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// A snapshot whose memo has a primer takes the tasks primed for the pod
// objects it lists and derives only the others: one never primed, one
// forgotten (its object replaced), and one primed for a gang the snapshot
// does not have. Its tasks are those of a snapshot built afresh, and the
// primer gives up every entry a snapshot took.
func TestTaskPrimer(t *testing.T) {
	node := st.MakeNode("n1").Capacity("8", "32Gi", 4).Obj()
	gangPod := st.MakePod("ns", "w0").Job("j").Req("1", "1Gi").GPU(1).Obj()
	boundAlone := st.MakePod("ns", "solo").Req("2", "1Gi").Node("n1").Phase(corev1.PodRunning).Obj()
	othersPending := st.MakePod("ns", "theirs").Req("1", "1Gi").Obj() // no gang, not bound: another scheduler's
	unprimed := st.MakePod("ns", "w1").Job("j").Req("1", "1Gi").Obj()
	forgotten := st.MakePod("ns", "w2").Job("j").Req("1", "1Gi").Obj()
	noGang := st.MakePod("ns", "x0").Job("gone").Req("1", "1Gi").Node("n1").Phase(corev1.PodRunning).Obj()

	for _, tc := range []struct {
		name        string
		pods        []*corev1.Pod
		prime       []*corev1.Pod
		forget      []*corev1.Pod
		wantDerived uint64
	}{
		{name: "a gang's pod, a bound pod of no gang, another scheduler's pending pod: all primed",
			pods: []*corev1.Pod{gangPod, boundAlone, othersPending}, prime: []*corev1.Pod{gangPod, boundAlone, othersPending}},
		{name: "a pod never primed is derived",
			pods: []*corev1.Pod{gangPod, unprimed}, prime: []*corev1.Pod{gangPod}, wantDerived: 1},
		{name: "a forgotten object is derived",
			pods: []*corev1.Pod{gangPod, forgotten}, prime: []*corev1.Pod{gangPod, forgotten}, forget: []*corev1.Pod{forgotten}, wantDerived: 1},
		{name: "a bound pod primed for a gang the snapshot lacks is derived as a pod of none",
			pods: []*corev1.Pod{noGang}, prime: []*corev1.Pod{noGang}, wantDerived: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primer := api.NewTaskPrimer(st.JobOf)
			for _, pod := range tc.prime {
				primer.Prime(pod)
			}
			for _, pod := range tc.forget {
				primer.Forget(pod)
			}
			if got, want := primer.Primed(), uint64(len(tc.prime)); got != want {
				t.Errorf("Primed() = %d, want %d", got, want)
			}
			cluster := func(tasks *api.TaskMemo) api.Cluster {
				return api.Cluster{Nodes: []*corev1.Node{node}, Pods: tc.pods, JobOf: st.JobOf, Tasks: tasks,
					Jobs: []*api.JobInfo{st.MakeJob("ns", "j").MinMember(1).Obj()}}
			}
			memo := api.TaskMemo{Primer: primer}
			got, err := api.NewSnapshot(cluster(&memo))
			if err != nil {
				t.Fatal(err)
			}
			want, err := api.NewSnapshot(cluster(&api.TaskMemo{}))
			if err != nil {
				t.Fatal(err)
			}
			if memo.Derived() != tc.wantDerived {
				t.Errorf("the snapshot derived %d tasks itself, want %d", memo.Derived(), tc.wantDerived)
			}
			if primer.Len() != 0 {
				t.Errorf("the primer still holds %d entries after the snapshot", primer.Len())
			}
			sameTasks(t, got, want)
		})
	}
}

// sameTasks fails unless got and want have the same tasks, by what each
// derives from its pod, in their jobs and on their nodes.
func sameTasks(t *testing.T, got, want *api.Snapshot) {
	t.Helper()
	for id, wj := range want.Jobs {
		gj := got.Jobs[id]
		if len(gj.Tasks) != len(wj.Tasks) {
			t.Errorf("job %s: %d tasks, want %d", id, len(gj.Tasks), len(wj.Tasks))
			continue
		}
		for _, w := range wj.Tasks {
			g := taskOf(gj, w.UID)
			if g == nil || g.Job != w.Job || g.Pod != w.Pod || g.Status != w.Status || g.NodeName != w.NodeName ||
				!g.Resreq.Equal(&w.Resreq) || g.ClassSignature != w.ClassSignature {
				t.Errorf("job %s, task %s: %+v, want %+v", id, w.Name, g, w)
			}
		}
	}
	for name, wn := range want.Nodes {
		gn := got.Nodes[name]
		if !gn.Idle.Equal(&wn.Idle) || len(gn.Tasks) != len(wn.Tasks) {
			t.Errorf("node %s: idle %v with %d tasks, want %v with %d", name, gn.Idle, len(gn.Tasks), wn.Idle, len(wn.Tasks))
		}
	}
}

// Pods primed on one goroutine while snapshots are built on another, as
// the pod informer's handler and the scheduling loop do: every snapshot
// holds every pod listed, whoever derived it. (Run with -race, it also
// checks that the two share nothing unguarded.)
func TestTaskPrimerBesideSnapshots(t *testing.T) {
	node := st.MakeNode("n1").Capacity("64", "256Gi", 8).Obj()
	var pods []*corev1.Pod
	for i := range 200 {
		pods = append(pods, st.MakePod("ns", fmt.Sprintf("w%03d", i)).Job("j").Req("100m", "1Mi").Obj())
	}
	primer := api.NewTaskPrimer(st.JobOf)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, pod := range pods {
			primer.Prime(pod)
		}
	}()
	memo := api.TaskMemo{Primer: primer}
	for listed := 1; ; listed = min(listed+7, len(pods)) {
		snap, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{node}, Pods: pods[:listed], JobOf: st.JobOf, Tasks: &memo,
			Jobs: []*api.JobInfo{st.MakeJob("ns", "j").MinMember(1).Obj()}})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(snap.Jobs["ns/j"].Tasks); got != listed {
			t.Fatalf("%d pods listed, the job has %d tasks", listed, got)
		}
		if listed == len(pods) {
			break
		}
	}
	<-done
	if got := memo.Derived() + primer.Primed() - uint64(primer.Len()); got != uint64(len(pods)) {
		t.Errorf("derived %d in snapshots, primed %d, %d primed left over: %d tasks, want %d", memo.Derived(), primer.Primed(), primer.Len(), got, len(pods))
	}
}
