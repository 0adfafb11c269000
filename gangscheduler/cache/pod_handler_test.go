package cache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// The pod handler keeps the primer in step with the informer's events, so
// a cycle after them derives no task itself: an added pod is primed, an
// updated one primed anew (its new object's entry replacing the old's), a
// resync's same object not derived again, and a deleted one forgotten,
// whether the deletion delivers its last state or a tombstone. Each event
// wakes the loop.
func TestPodHandlerPrimes(t *testing.T) {
	c := newCache("troupe-scheduler", time.Minute)
	primer := c.primer
	h := c.podHandler()
	node := st.MakeNode("n1").Capacity("8", "32Gi", 0).Obj()
	w0 := gangPod("w0", "troupe-scheduler", "pg").Obj()
	w1 := gangPod("w1", "troupe-scheduler", "pg").Obj()
	w1Bound := w1.DeepCopy()
	w1Bound.Spec.NodeName = "n1"
	gone := gangPod("gone", "troupe-scheduler", "pg").Obj()
	late := gangPod("late", "troupe-scheduler", "pg").Obj()

	for _, step := range []struct {
		name       string
		event      func()
		pods       []*corev1.Pod
		wantPrimed uint64
		wantHeld   int
	}{
		{name: "three added", event: func() { h.OnAdd(w0, false); h.OnAdd(w1, false); h.OnAdd(gone, false) },
			pods: []*corev1.Pod{w0, w1, gone}, wantPrimed: 3},
		{name: "one bound: a new object", event: func() { h.OnUpdate(w1, w1Bound) },
			pods: []*corev1.Pod{w0, w1Bound, gone}, wantPrimed: 4},
		{name: "a resync of the same object", event: func() { h.OnUpdate(w0, w0) },
			pods: []*corev1.Pod{w0, w1Bound, gone}, wantPrimed: 4},
		// A deletion delivers the pod's last state decoded anew: not the
		// object the informer held.
		{name: "one deleted before any cycle listed its new object",
			event: func() {
				again := gone.DeepCopy()
				h.OnUpdate(gone, again)
				h.OnDelete(again.DeepCopy())
			},
			pods: []*corev1.Pod{w0, w1Bound}, wantPrimed: 5},
		{name: "one deleted as a tombstone before any cycle listed it",
			event: func() {
				h.OnAdd(late, false)
				h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/late", Obj: late.DeepCopy()})
			},
			pods: []*corev1.Pod{w0, w1Bound}, wantPrimed: 6},
	} {
		step.event()
		select {
		case <-c.changed:
		default:
			t.Errorf("%s: the loop was not woken", step.name)
		}
		if got := primer.Primed(); got != step.wantPrimed {
			t.Errorf("%s: %d pod objects primed, want %d", step.name, got, step.wantPrimed)
		}
		objs := Objects{Nodes: []*corev1.Node{node}, Pods: step.pods, PodGroups: []*schedulingv1alpha1.PodGroup{podGroup(nil)}}
		got, want := buildBoth(t, &c.builder, objs)
		if n, w := len(got.Snapshot.Jobs["ns/pg"].Tasks), len(want.Snapshot.Jobs["ns/pg"].Tasks); n != w {
			t.Errorf("%s: %d tasks, want %d", step.name, n, w)
		}
		if _, inCycles := c.TasksDerived(); inCycles != 0 {
			t.Errorf("%s: the cycles derived %d tasks themselves", step.name, inCycles)
		}
		if held := primer.Len(); held != step.wantHeld {
			t.Errorf("%s: the primer holds %d objects after the cycle, want %d", step.name, held, step.wantHeld)
		}
		got.Snapshot.Release()
	}
}

// syncedInformers are informers that have listed everything: only
// WaitForCacheSync is called.
type syncedInformers struct{ ctrlcache.Cache }

func (syncedInformers) WaitForCacheSync(context.Context) bool { return true }

// WaitForSync returns only once the pod handler has handled the informer's
// initial list, so that the first cycle finds every pod primed; and false
// if ctx ends first.
func TestWaitForSyncWaitsForThePodHandler(t *testing.T) {
	var handled atomic.Bool
	c := &Cache{informers: syncedInformers{}, podsPrimed: handled.Load}
	done := make(chan bool, 1)
	go func() { done <- c.WaitForSync(context.Background()) }()
	select {
	case <-done:
		t.Fatal("WaitForSync returned before the pod handler had handled the initial list")
	case <-time.After(50 * time.Millisecond):
	}
	handled.Store(true)
	if !<-done {
		t.Error("WaitForSync reported not synced")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if (&Cache{informers: syncedInformers{}, podsPrimed: func() bool { return false }}).WaitForSync(ctx) {
		t.Error("WaitForSync reported synced with its context ended and the handler behind")
	}
}
