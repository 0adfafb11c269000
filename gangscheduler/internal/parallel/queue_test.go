package parallel

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

func TestQueue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		batches []int
	}{
		{name: "nothing added", workers: 4},
		{name: "one batch", workers: 4, batches: []int{10}},
		{name: "many batches", workers: 3, batches: []int{1, 5, 0, 7, 2}},
		{name: "fewer items than workers", workers: 16, batches: []int{2}},
		{name: "no worker asked for", workers: 0, batches: []int{4, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var running, peak, calls atomic.Int64
			q := NewQueue(tc.workers, func(i int) error {
				cur := running.Add(1)
				for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
				}
				defer running.Add(-1)
				calls.Add(1)
				if i%3 == 0 {
					return fmt.Errorf("item %d", i)
				}
				return nil
			})
			n := 0
			for _, b := range tc.batches {
				items := make([]int, b)
				for j := range items {
					items[j] = n
					n++
				}
				q.Add(items...)
			}
			errs := q.Wait()
			if len(errs) != n || calls.Load() != int64(n) {
				t.Fatalf("%d items: %d errors, %d calls", n, len(errs), calls.Load())
			}
			for i, err := range errs {
				if want := i%3 == 0; (err != nil) != want || (want && err.Error() != fmt.Sprintf("item %d", i)) {
					t.Errorf("error of item %d: %v", i, err)
				}
			}
			if limit := int64(max(tc.workers, 1)); peak.Load() > limit {
				t.Errorf("%d calls at once, workers %d", peak.Load(), tc.workers)
			}
		})
	}
}

// TestQueueAddDoesNotWait: an Add while every worker is busy returns at
// once; the call runs when a worker is free.
func TestQueueAddDoesNotWait(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int, 3)
	q := NewQueue(1, func(i int) error {
		started <- i
		<-release
		return nil
	})
	q.Add(0)
	if i := <-started; i != 0 {
		t.Fatalf("first call got item %d", i)
	}
	q.Add(1, 2) // the one worker is held: this must not block
	select {
	case i := <-started:
		t.Fatalf("item %d started while the only worker was busy", i)
	default:
	}
	close(release)
	if errs := q.Wait(); len(errs) != 3 || errors.Join(errs...) != nil {
		t.Fatalf("errors %v", errs)
	}
	if a, b := <-started, <-started; a != 1 || b != 2 {
		t.Errorf("items ran in order %d, %d, want 1, 2", a, b)
	}
}

func TestQueueAddAfterWaitPanics(t *testing.T) {
	q := NewQueue(2, func(int) error { return nil })
	q.Wait()
	defer func() {
		if recover() == nil {
			t.Error("Add after Wait did not panic")
		}
	}()
	q.Add(1)
}
