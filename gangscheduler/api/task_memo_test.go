package api_test

import (
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
