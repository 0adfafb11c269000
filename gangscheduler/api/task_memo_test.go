package api_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// A snapshot built with a TaskMemo has the tasks of one built afresh, cycle
// after cycle, as pods are replaced, bound and deleted; and its tasks are
// its own: a session's changes to one do not reach the next snapshot.
func TestTaskMemo(t *testing.T) {
	node := st.MakeNode("n1").Capacity("8", "32Gi", 4).Obj()
	job := func() []*api.JobInfo { return []*api.JobInfo{st.MakeJob("ns", "j").MinMember(2).Obj()} }
	pending := st.MakePod("ns", "w0").Job("j").Req("1", "1Gi").GPU(1).Obj()
	other := st.MakePod("ns", "w1").Job("j").Req("2", "1Gi").GPU(1).Obj()
	bigger := st.MakePod("ns", "w1").Job("j").Req("3", "1Gi").GPU(2).Obj()
	bigger.UID = other.UID // the same pod, a new object: its spec changed
	bound := pending.DeepCopy()
	bound.Spec.NodeName = "n1"
	running := st.MakePod("other", "r").Req("1", "").Node("n1").Phase(corev1.PodRunning).Obj()

	cycles := [][]*corev1.Pod{
		{pending, other, running},
		{pending, other, running}, // unchanged: every task from the memo
		{bound, bigger, running},  // w0 bound, w1 replaced
		{bound},                   // w1 and r deleted
	}
	var memo api.TaskMemo
	var last *api.Snapshot
	for i, pods := range cycles {
		got, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{node}, Pods: pods, Jobs: job(), JobOf: st.JobOf, Tasks: &memo})
		if err != nil {
			t.Fatal(err)
		}
		want, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{node}, Pods: pods, Jobs: job(), JobOf: st.JobOf})
		if err != nil {
			t.Fatal(err)
		}
		gj, wj := got.Jobs["ns/j"], want.Jobs["ns/j"]
		if len(gj.Tasks) != len(wj.Tasks) {
			t.Fatalf("cycle %d: %d tasks, want %d", i, len(gj.Tasks), len(wj.Tasks))
		}
		for _, w := range wj.Tasks {
			g := taskOf(gj, w.UID)
			if g == nil || g.Pod != w.Pod || g.Status != w.Status || g.NodeName != w.NodeName || !g.Resreq.Equal(&w.Resreq) ||
				g.ClassSignature != w.ClassSignature || len(g.ScalarRequests) != len(w.ScalarRequests) {
				t.Errorf("cycle %d, task %s: %+v, want %+v", i, w.Name, g, w)
			}
			if last != nil && taskOf(last.Jobs["ns/j"], w.UID) == g {
				t.Errorf("cycle %d, task %s: the same TaskInfo as the last snapshot's", i, w.Name)
			}
		}
		n := got.Nodes["n1"]
		if w := want.Nodes["n1"]; !n.Idle.Equal(&w.Idle) || len(n.Tasks) != len(w.Tasks) {
			t.Errorf("cycle %d: node idle %v with %d tasks, want %v with %d", i, n.Idle, len(n.Tasks), w.Idle, len(w.Tasks))
		}
		if memo.Len() != len(pods) {
			t.Errorf("cycle %d: memo holds %d pods, want %d", i, memo.Len(), len(pods))
		}
		// What a session does to a task: the next snapshot must not see it.
		for _, task := range gj.Tasks {
			if task.Status == api.Pending {
				task.Status, task.NodeName = api.Allocated, "n1"
			}
		}
		last = got
	}
}

// A TaskMemo asks JobOf once per pod object: again for a pod's new object,
// never for one it saw in the last snapshot.
func TestTaskMemoAsksJobOfOncePerPodObject(t *testing.T) {
	node := st.MakeNode("n1").Capacity("8", "32Gi", 4).Obj()
	w0 := st.MakePod("ns", "w0").Job("j").Req("1", "1Gi").Obj()
	w1 := st.MakePod("ns", "w1").Job("j").Req("1", "1Gi").Obj()
	w1Bound := w1.DeepCopy()
	w1Bound.Spec.NodeName = "n1"
	asked := map[*corev1.Pod]int{}
	jobOf := func(pod *corev1.Pod) (api.JobID, bool) {
		asked[pod]++
		return st.JobOf(pod)
	}
	var memo api.TaskMemo
	for i, pods := range [][]*corev1.Pod{{w0, w1}, {w0, w1}, {w0, w1Bound}} {
		snap, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{node}, Pods: pods, JobOf: jobOf, Tasks: &memo,
			Jobs: []*api.JobInfo{st.MakeJob("ns", "j").MinMember(2).Obj()}})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(snap.Jobs["ns/j"].Tasks); got != 2 {
			t.Errorf("cycle %d: the job has %d tasks, want 2", i, got)
		}
	}
	want := map[*corev1.Pod]int{w0: 1, w1: 1, w1Bound: 1}
	for pod, n := range want {
		if asked[pod] != n {
			t.Errorf("JobOf asked %d times for %s (node %q), want %d", asked[pod], pod.Name, pod.Spec.NodeName, n)
		}
	}
}

// taskOf returns job's task of uid, nil if it has none.
func taskOf(job *api.JobInfo, uid api.TaskID) *api.TaskInfo {
	for _, t := range job.Tasks {
		if t.UID == uid {
			return t
		}
	}
	return nil
}

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

// A pod listed twice is an error, with a memo as without one: the same
// object twice, or two objects of one UID, whether the memo knows neither,
// one (the pod's old object, carried from the last snapshot) or both, in
// either order. A pod's new object listed without its old one is not: the
// memo still holds the old object's entry until that snapshot ends.
func TestSnapshotRefusesAPodListedTwice(t *testing.T) {
	node := st.MakeNode("n1").Capacity("8", "32Gi", 4).Obj()
	old := st.MakePod("ns", "w0").Job("j").Req("1", "1Gi").Obj()
	changed := old.DeepCopy() // the same pod, a new object
	changed.Labels = map[string]string{"new": "label"}
	other := st.MakePod("ns", "w1").Job("j").Req("1", "1Gi").Obj()
	renamed := st.MakePod("ns", "w2").Job("j").Req("1", "1Gi").Obj()
	renamed.UID = old.UID // another pod of the same UID

	tests := []struct {
		name string
		// before are the snapshots built first, each with no pod twice.
		before [][]*corev1.Pod
		pods   []*corev1.Pod
		twice  bool
	}{
		{name: "no pod twice", pods: []*corev1.Pod{old, other}},
		{name: "one object twice", pods: []*corev1.Pod{old, other, old}, twice: true},
		{name: "two new objects of a UID", pods: []*corev1.Pod{old, changed}, twice: true},
		{name: "two pods of a UID", pods: []*corev1.Pod{renamed, other, old}, twice: true},
		{name: "carried object, then the new one", before: [][]*corev1.Pod{{old}}, pods: []*corev1.Pod{old, changed}, twice: true},
		{name: "new object, then the carried one", before: [][]*corev1.Pod{{old}}, pods: []*corev1.Pod{changed, other, old}, twice: true},
		{name: "both carried", before: [][]*corev1.Pod{{old}, {changed}}, pods: []*corev1.Pod{changed, old}, twice: true},
		{name: "the new object alone", before: [][]*corev1.Pod{{old}}, pods: []*corev1.Pod{changed, other}},
		{name: "the new object alone, the old one dropped", before: [][]*corev1.Pod{{old}, {changed}}, pods: []*corev1.Pod{changed, other}},
		{name: "back to the old object alone", before: [][]*corev1.Pod{{old}, {changed}}, pods: []*corev1.Pod{old}},
		{name: "after a refused snapshot", before: [][]*corev1.Pod{{old, changed}}, pods: []*corev1.Pod{changed, old}, twice: true},
		{name: "after a refused snapshot, one object", before: [][]*corev1.Pod{{old, changed}}, pods: []*corev1.Pod{changed}},
	}
	build := func(memo *api.TaskMemo, pods []*corev1.Pod) error {
		_, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{node}, Pods: pods,
			Jobs: []*api.JobInfo{st.MakeJob("ns", "j").MinMember(1).Obj()}, JobOf: st.JobOf, Tasks: memo})
		return err
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := build(nil, tt.pods); (err != nil) != tt.twice {
				t.Fatalf("without a memo: error %v, want one: %v", err, tt.twice)
			}
			var memo api.TaskMemo
			for _, pods := range tt.before {
				_ = build(&memo, pods) // a refused snapshot is one of the cases
			}
			err := build(&memo, tt.pods)
			if (err != nil) != tt.twice {
				t.Fatalf("with a memo: error %v, want one: %v", err, tt.twice)
			}
		})
	}
}

// A memo finds each pod's gang in the snapshot being built as the gangs
// come and go: a pod whose gang is not listed belongs to none, and to the
// gang again once it is listed again, as in a snapshot built afresh.
func TestTaskMemoFollowsGangsListed(t *testing.T) {
	node := st.MakeNode("n1").Capacity("8", "32Gi", 4).Obj()
	pending := st.MakePod("ns", "w0").Job("j").Req("1", "1Gi").Obj()
	bound := st.MakePod("ns", "w1").Job("j").Req("1", "1Gi").Node("n1").Phase(corev1.PodRunning).Obj()
	other := st.MakePod("ns", "x0").Job("k").Req("1", "1Gi").Obj()
	jobs := func(names ...string) []*api.JobInfo {
		var out []*api.JobInfo
		for _, n := range names {
			out = append(out, st.MakeJob("ns", n).MinMember(1).Obj())
		}
		return out
	}
	cycles := [][]*api.JobInfo{jobs("j", "k"), jobs("k"), jobs(), jobs("j"), jobs("j", "k")}
	var memo api.TaskMemo
	for i, js := range cycles {
		got, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{pending, bound, other}, Jobs: js, JobOf: st.JobOf, Tasks: &memo})
		if err != nil {
			t.Fatal(err)
		}
		want, err := api.NewSnapshot(api.Cluster{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{pending, bound, other}, Jobs: jobs(jobNames(js)...), JobOf: st.JobOf})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := tasksByJob(got), tasksByJob(want); g != w {
			t.Errorf("cycle %d: tasks %s, want %s", i, g, w)
		}
		if g, w := len(got.Nodes["n1"].Tasks), len(want.Nodes["n1"].Tasks); g != w {
			t.Errorf("cycle %d: %d tasks on the node, want %d", i, g, w)
		}
	}
}

func jobNames(js []*api.JobInfo) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.Name)
	}
	return out
}

// tasksByJob is "job: task task; ..." in job order.
func tasksByJob(s *api.Snapshot) string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(s.Jobs)) {
		var names []string
		for _, t := range s.Jobs[id].Tasks {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		out = append(out, fmt.Sprintf("%s: %s", id, strings.Join(names, " ")))
	}
	return strings.Join(out, "; ")
}
