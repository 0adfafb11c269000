package cache

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

func TestAssumedPods(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	pending := func(name string) *corev1.Pod { return st.MakePod("ns", name).Obj() }
	cases := []struct {
		name string
		// pods as the informer shows them at apply time
		pods []*corev1.Pod
		at   time.Duration
		// wantNode is the node each pod reads as bound to, by name
		wantNode map[string]string
		// wantLeft is how many assumptions remain
		wantLeft int
	}{
		{
			name:     "pending in the informer: shown on the assumed node",
			pods:     []*corev1.Pod{pending("a"), pending("other")},
			wantNode: map[string]string{"a": "n1", "other": ""},
			wantLeft: 1,
		},
		{
			name:     "the informer shows it bound: its node wins, the assumption goes",
			pods:     []*corev1.Pod{st.MakePod("ns", "a").Node("n2").Obj()},
			wantNode: map[string]string{"a": "n2"},
			wantLeft: 0,
		},
		{
			name:     "the pod is gone: the assumption goes",
			pods:     []*corev1.Pod{pending("other")},
			wantNode: map[string]string{"other": ""},
			wantLeft: 0,
		},
		{
			name:     "expired: pending again",
			pods:     []*corev1.Pod{pending("a")},
			at:       time.Minute + time.Second,
			wantNode: map[string]string{"a": ""},
			wantLeft: 0,
		},
		{
			name:     "not expired yet",
			pods:     []*corev1.Pod{pending("a")},
			at:       time.Minute,
			wantNode: map[string]string{"a": "n1"},
			wantLeft: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAssumedPods(time.Minute)
			a.assume(types.UID("ns/a"), "n1", t0)
			out := a.apply(tc.pods, t0.Add(tc.at))
			for i, pod := range out {
				if got, want := pod.Spec.NodeName, tc.wantNode[pod.Name]; got != want {
					t.Errorf("%s on %q, want %q", pod.Name, got, want)
				}
				if tc.pods[i].Name == "a" && tc.wantNode["a"] == "n1" && tc.pods[i].Spec.NodeName != "" {
					t.Error("apply changed the informer's pod instead of a copy")
				}
			}
			if got := a.len(); got != tc.wantLeft {
				t.Errorf("%d assumptions left, want %d", got, tc.wantLeft)
			}
		})
	}
}

func TestForget(t *testing.T) {
	a := newAssumedPods(time.Minute)
	now := time.Now()
	a.assume("ns/a", "n1", now)
	a.forget("ns/a")
	if out := a.apply([]*corev1.Pod{st.MakePod("ns", "a").Obj()}, now); out[0].Spec.NodeName != "" {
		t.Errorf("a forgotten pod still reads as bound to %q", out[0].Spec.NodeName)
	}
}

// A deleted pod reads as terminating on its node until the informer shows
// it terminating, or gone, or the assumption expires; the informer's object
// is never changed.
func TestAssumedDeleted(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	running := st.MakePod("ns", "a").Node("n1").Phase(corev1.PodRunning).Obj()
	cases := []struct {
		name         string
		pods         []*corev1.Pod
		at           time.Duration
		wantDeleting bool
		wantLeft     int
	}{
		{name: "the informer still shows it running", pods: []*corev1.Pod{running}, wantDeleting: true, wantLeft: 1},
		{name: "the informer shows it terminating", pods: []*corev1.Pod{st.MakePod("ns", "a").Node("n1").Terminating().Obj()}, wantDeleting: true},
		{name: "gone", pods: []*corev1.Pod{}},
		{name: "expired", pods: []*corev1.Pod{running}, at: time.Minute + time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAssumedPods(time.Minute)
			a.assumeDeleted("ns/a", "n1", t0)
			out := a.apply(tc.pods, t0.Add(tc.at))
			if len(out) > 0 {
				if got := out[0].DeletionTimestamp != nil; got != tc.wantDeleting {
					t.Errorf("terminating = %v, want %v", got, tc.wantDeleting)
				}
				if out[0].Spec.NodeName != "n1" {
					t.Errorf("on %q, want n1", out[0].Spec.NodeName)
				}
			}
			if running.DeletionTimestamp != nil {
				t.Fatal("apply changed the informer's pod instead of a copy")
			}
			if got := a.len(); got != tc.wantLeft {
				t.Errorf("%d assumptions left, want %d", got, tc.wantLeft)
			}
		})
	}

	// A pod whose bind is assumed too (the informer shows it pending) is
	// terminating on the node it was assumed bound to.
	a := newAssumedPods(time.Minute)
	a.assume("ns/a", "n1", t0)
	a.assumeDeleted("ns/a", "n1", t0)
	out := a.apply([]*corev1.Pod{st.MakePod("ns", "a").Obj()}, t0)
	if out[0].Spec.NodeName != "n1" || out[0].DeletionTimestamp == nil {
		t.Errorf("on %q, terminating %v; want terminating on n1", out[0].Spec.NodeName, out[0].DeletionTimestamp != nil)
	}
}

// apply shows an assumed pod as the same copy from one cycle to the next
// while the informer holds the same object, so the builder's memo derives
// its task once, and as a new copy of a new object.
func TestAssumedViewStable(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		assume func(a *assumedPods)
		pod    *corev1.Pod
	}{
		{name: "bound", assume: func(a *assumedPods) { a.assume("ns/a", "n1", t0) }, pod: st.MakePod("ns", "a").Obj()},
		{name: "deleted", assume: func(a *assumedPods) { a.assumeDeleted("ns/a", "n1", t0) },
			pod: st.MakePod("ns", "a").Node("n1").Phase(corev1.PodRunning).Obj()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAssumedPods(time.Minute)
			tc.assume(a)
			first := a.apply([]*corev1.Pod{tc.pod}, t0)[0]
			if first == tc.pod {
				t.Fatal("apply showed the informer's object, not a copy")
			}
			if again := a.apply([]*corev1.Pod{tc.pod}, t0.Add(time.Second))[0]; again != first {
				t.Error("the next cycle got a new copy of the same object")
			}
			replaced := tc.pod.DeepCopy()
			replaced.Labels = map[string]string{"changed": "yes"}
			next := a.apply([]*corev1.Pod{replaced}, t0.Add(2*time.Second))[0]
			if next == first || next.Labels["changed"] != "yes" || next.Spec.NodeName != "n1" {
				t.Errorf("a new object of the pod is shown as %p on %q with labels %v; want a new copy on n1 with its labels",
					next, next.Spec.NodeName, next.Labels)
			}
			if (next.DeletionTimestamp != nil) != (tc.name == "deleted") {
				t.Errorf("terminating = %v", next.DeletionTimestamp != nil)
			}
		})
	}
}
