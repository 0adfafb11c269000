package engine

import (
	"context"
	"errors"
	"sync"
)

// slowStart calls create for each item, in batches of 1, 2, 4, ... items:
// the calls of a batch run at once, and a batch starts only when every
// call of the one before it succeeded. This is how kube-controller-manager's
// ReplicaSet and Job controllers create pods (slowStartBatch): a job of N
// objects takes about log2(N) round trips to the API server rather than N,
// while a create the API server refuses for every object (an exhausted
// ResourceQuota, an admission webhook) is refused once or twice, not N
// times. It returns each item's result in the order of items (the zero
// value for a call that failed or was not made) and the errors of the
// batch that failed.
func slowStart[T, R any](ctx context.Context, items []T, create func(context.Context, T) (R, error)) ([]R, error) {
	results := make([]R, len(items))
	for start, size := 0, 1; start < len(items); start, size = start+size, size*2 {
		batch := items[start:min(start+size, len(items))]
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for i, item := range batch {
			wg.Go(func() { results[start+i], errs[i] = create(ctx, item) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return results, err
		}
	}
	return results, nil
}
