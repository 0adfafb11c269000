package parallel

import (
	"sync/atomic"
	"testing"
)

func TestForEach(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {100, 4}, {10, 0}, {3, 100}} {
		var calls, running, peak atomic.Int64
		seen := make([]int, tc.n)
		ForEach(tc.n, tc.workers, func(i int) {
			cur := running.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			seen[i]++
			calls.Add(1)
			running.Add(-1)
		})
		if calls.Load() != int64(tc.n) {
			t.Errorf("n=%d: %d calls", tc.n, calls.Load())
		}
		for i, c := range seen {
			if c != 1 {
				t.Errorf("n=%d: index %d called %d times", tc.n, i, c)
			}
		}
		if limit := int64(max(tc.workers, 1)); peak.Load() > limit {
			t.Errorf("n=%d workers=%d: %d calls at once", tc.n, tc.workers, peak.Load())
		}
	}
}
