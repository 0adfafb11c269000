package measure

import (
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestCountInterruptions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	for _, tc := range []struct {
		name string
		// run drives the server's side (fake) and the watcher's (w).
		run  func(fake *watch.FakeWatcher, w watch.Interface)
		want int32
	}{
		{"stopped by the watcher", func(_ *watch.FakeWatcher, w watch.Interface) {
			w.Stop()
		}, 0},
		{"stopped by the watcher after events", func(fake *watch.FakeWatcher, w watch.Interface) {
			fake.Add(pod)
			<-w.ResultChan()
			w.Stop()
		}, 0},
		{"ended by the server", func(fake *watch.FakeWatcher, _ watch.Interface) {
			fake.Stop()
		}, 1},
		{"ended by the server after events", func(fake *watch.FakeWatcher, w watch.Interface) {
			fake.Add(pod)
			<-w.ResultChan()
			fake.Stop()
		}, 1},
		{"an error event, then the watcher stops", func(fake *watch.FakeWatcher, w watch.Interface) {
			fake.Error(&metav1.Status{Reason: metav1.StatusReasonExpired})
			<-w.ResultChan()
			w.Stop()
		}, 1},
		{"an error event, then the server ends it", func(fake *watch.FakeWatcher, w watch.Interface) {
			fake.Error(&metav1.Status{Reason: metav1.StatusReasonExpired})
			<-w.ResultChan()
			fake.Stop()
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := watch.NewFake()
			var n atomic.Int32
			w := CountInterruptions(fake, func() { n.Add(1) })
			tc.run(fake, w)
			// The wrapper closes its channel once it is done counting.
			deadline := time.After(10 * time.Second)
			for open := true; open; {
				select {
				case _, open = <-w.ResultChan():
				case <-deadline:
					t.Fatal("the wrapped watch's channel was never closed")
				}
			}
			if got := n.Load(); got != tc.want {
				t.Errorf("interruptions = %d, want %d", got, tc.want)
			}
		})
	}
}
