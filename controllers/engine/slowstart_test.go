package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestSlowStart(t *testing.T) {
	errRefused := errors.New("refused")
	cases := []struct {
		name  string
		items int
		fail  func(item int) bool
		// wantBatches are the items create was called with, batch by
		// batch; wantResults the results returned.
		wantBatches [][]int
		wantResults []string
		wantErr     bool
	}{
		{name: "none", items: 0, wantBatches: nil, wantResults: []string{}},
		{name: "one", items: 1, wantBatches: [][]int{{0}}, wantResults: []string{"r0"}},
		{
			name: "batches double from one; the last takes what is left", items: 9,
			wantBatches: [][]int{{0}, {1, 2}, {3, 4, 5, 6}, {7, 8}},
			wantResults: []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"},
		},
		{
			name: "a refused first create stops everything after it", items: 8, fail: func(int) bool { return true },
			wantBatches: [][]int{{0}}, wantResults: make([]string, 8), wantErr: true,
		},
		{
			name: "a failure in a batch: the rest of the batch is made, no later batch", items: 8, fail: func(i int) bool { return i == 4 },
			wantBatches: [][]int{{0}, {1, 2}, {3, 4, 5, 6}},
			wantResults: []string{"r0", "r1", "r2", "r3", "", "r5", "r6", ""}, wantErr: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]int, tc.items)
			for i := range items {
				items[i] = i
			}
			// batchOf is the range of items of i's batch: 1, 2, 4, ...
			batchOf := func(i int) (lo, hi int) {
				for lo, size := 0, 1; ; lo, size = lo+size, size*2 {
					if i < lo+size {
						return lo, min(lo+size, tc.items)
					}
				}
			}
			started := make([]chan struct{}, tc.items)
			for i := range started {
				started[i] = make(chan struct{})
			}
			var (
				mu    sync.Mutex
				calls []int
			)
			results, err := slowStart(context.Background(), items, func(_ context.Context, i int) (string, error) {
				mu.Lock()
				calls = append(calls, i)
				mu.Unlock()
				close(started[i])
				// Every call of a batch starts before any of them returns.
				lo, hi := batchOf(i)
				for j := lo; j < hi; j++ {
					select {
					case <-started[j]:
					case <-time.After(30 * time.Second):
						t.Errorf("item %d: item %d of its batch never started beside it", i, j)
						return "", errRefused
					}
				}
				if tc.fail != nil && tc.fail(i) {
					return "", fmt.Errorf("item %d: %w", i, errRefused)
				}
				return fmt.Sprintf("r%d", i), nil
			})
			slices.Sort(calls)
			var batches [][]int
			for _, c := range calls {
				if lo, _ := batchOf(c); len(batches) == 0 || batches[len(batches)-1][0] != lo {
					batches = append(batches, nil)
				}
				batches[len(batches)-1] = append(batches[len(batches)-1], c)
			}
			if !slices.EqualFunc(batches, tc.wantBatches, slices.Equal) {
				t.Errorf("batches %v, want %v", batches, tc.wantBatches)
			}
			if !slices.Equal(results, tc.wantResults) {
				t.Errorf("results %q, want %q", results, tc.wantResults)
			}
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, errRefused)) {
				t.Errorf("error %v, want one: %v", err, tc.wantErr)
			}
		})
	}
}
