package parallel

import "sync"

// Queue calls fn on items as they are added, at most workers at a time, in
// the order they were added. Add never waits for a call, so a producer that
// is still working out the next items (a scheduling session deciding the
// next gang) is never held up by the calls under way; Wait says that no
// more items come and returns every call's error.
type Queue[T any] struct {
	fn      func(T) error
	workers int

	mu      sync.Mutex
	more    *sync.Cond
	items   []T
	errs    []error
	next    int
	started int
	closed  bool
	wg      sync.WaitGroup
}

// NewQueue returns an empty queue that calls fn at most workers at a time.
// Its goroutines start with the first items, so an unused queue costs none.
func NewQueue[T any](workers int, fn func(T) error) *Queue[T] {
	q := &Queue[T]{fn: fn, workers: max(workers, 1)}
	q.more = sync.NewCond(&q.mu)
	return q
}

// Add queues items behind those added before. It panics after Wait.
func (q *Queue[T]) Add(items ...T) {
	if len(items) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		panic("parallel: Queue.Add after Wait")
	}
	q.items = append(q.items, items...)
	q.errs = append(q.errs, make([]error, len(items))...)
	for q.started < min(q.workers, len(q.items)) {
		q.started++
		q.wg.Add(1)
		go q.work()
	}
	q.more.Broadcast()
}

// Wait closes the queue to further items, waits until every call has
// returned, and returns their errors in the order the items were added
// (nil for a call that succeeded).
func (q *Queue[T]) Wait() []error {
	q.mu.Lock()
	q.closed = true
	q.more.Broadcast()
	q.mu.Unlock()
	q.wg.Wait()
	return q.errs
}

func (q *Queue[T]) work() {
	defer q.wg.Done()
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for q.next == len(q.items) && !q.closed {
			q.more.Wait()
		}
		if q.next == len(q.items) {
			return
		}
		i := q.next
		item := q.items[i]
		q.next++
		q.mu.Unlock()
		err := q.fn(item)
		q.mu.Lock()
		q.errs[i] = err
	}
}
