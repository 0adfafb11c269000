package bench

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	"github.com/troupe-ml/troupe/test/bench/measure"
)

// deleter ends S3's gangs: hold after a gang is bound whole, it deletes
// its pods and its PodGroup, as a job that finished and was cleaned up.
// Its API writes are counted, so that they are not charged to the placer.
type deleter struct {
	ctx      context.Context
	c        *cluster
	hold     time.Duration
	podGroup func() client.Object

	mu      sync.Mutex
	closed  bool
	pending map[*time.Timer]bool
	wg      sync.WaitGroup
	counts  measure.Writes
}

// newDeleter deletes gangs hold after they are scheduled; podGroup returns
// an empty PodGroup of the run's dialect, or nil when it has none.
func newDeleter(ctx context.Context, c *cluster, hold time.Duration, podGroup func() client.Object) *deleter {
	return &deleter{ctx: ctx, c: c, hold: hold, podGroup: podGroup, pending: map[*time.Timer]bool{}, counts: measure.Writes{}}
}

// schedule deletes gang after the hold, unless the deleter is closed by
// then.
func (d *deleter) schedule(gang string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d.hold, func() {
		defer d.wg.Done()
		d.mu.Lock()
		delete(d.pending, t)
		d.mu.Unlock()
		d.delete(gang)
	})
	d.pending[t] = true
}

// close cancels the deletions not due yet and waits for those under way.
func (d *deleter) close() {
	d.mu.Lock()
	d.closed = true
	for t := range d.pending {
		if t.Stop() {
			d.wg.Done()
		}
	}
	d.pending = nil
	d.mu.Unlock()
	d.wg.Wait()
}

func (d *deleter) delete(gang string) {
	err := d.c.client.DeleteAllOf(d.ctx, &corev1.Pod{}, client.InNamespace(namespace),
		client.MatchingLabels{kubeflowv1.JobNameLabel: gang},
		&client.DeleteAllOfOptions{DeleteOptions: client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}})
	// The API server counts a collection delete under verb DELETE.
	d.count("DELETE pods")
	if err != nil {
		return // the run's end shows the gang's pods still there
	}
	pg := d.podGroup()
	if pg == nil {
		return
	}
	pg.SetNamespace(namespace)
	pg.SetName(gang)
	_ = d.c.client.Delete(d.ctx, pg)
	d.count("DELETE podgroups")
}

func (d *deleter) count(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[key]++
}

// writes are the API writes the deleter made.
func (d *deleter) writes() measure.Writes {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := measure.Writes{}
	for k, v := range d.counts {
		out[k] = v
	}
	return out
}
