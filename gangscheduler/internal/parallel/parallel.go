// Package parallel runs independent API calls a few at a time.
package parallel

import "sync"

// ForEach calls fn(i) for every i in [0, n), at most workers at a time, and
// returns when all calls have. fn must be safe to call concurrently; writing
// to its own index of a slice is.
func ForEach(n, workers int, fn func(i int)) {
	workers = min(max(workers, 1), n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
