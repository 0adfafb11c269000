package bench

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// deleter ends S3's gangs: hold after a gang is bound whole, it deletes
// its pods and its PodGroup, as a job that finished and was cleaned up.
// Its API writes are counted, so that they are not charged to the placer.
//
// It deletes each pod by name, as a job controller or the garbage
// collector does, finding a gang's pods in the harness's informer
// (gangIndex). A collection delete by label has the API server list every
// pod of the namespace for each gang (a selector is not an index): at
// 5000 nodes that list is 18 MB, and when a wave of gangs ended together
// those lists reached etcd thousands of times and ran it out of memory.
type deleter struct {
	ctx      context.Context
	c        *cluster
	hold     time.Duration
	pods     toolscache.Indexer
	podGroup func() client.Object

	mu      sync.Mutex
	closed  bool
	pending map[*time.Timer]bool
	wg      sync.WaitGroup
	counts  measure.Writes
}

// newDeleter deletes gangs hold after they are scheduled, finding their
// pods in pods, an informer's indexer with gangIndex (indexPodsByGang);
// podGroup returns an empty PodGroup of the run's dialect, or nil when it
// has none.
func newDeleter(ctx context.Context, c *cluster, hold time.Duration, pods toolscache.Indexer, podGroup func() client.Object) *deleter {
	return &deleter{ctx: ctx, c: c, hold: hold, pods: pods, podGroup: podGroup, pending: map[*time.Timer]bool{}, counts: measure.Writes{}}
}

// gangIndex indexes the harness's pods by their gang (scenario.GangOf).
const gangIndex = "gang"

// indexPodsByGang adds gangIndex to a pod informer, before it starts.
func indexPodsByGang(pods toolscache.SharedIndexInformer) error {
	return pods.AddIndexers(toolscache.Indexers{gangIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		return []string{scenario.GangOf(pod)}, nil
	}})
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

// delete deletes the gang's pods the informer holds, then its PodGroup.
// A gang is deleted once it is bound whole, so the informer has seen all
// its pods.
func (d *deleter) delete(gang string) {
	objs, err := d.pods.ByIndex(gangIndex, gang)
	if err != nil {
		return // not indexed: the run's end shows the gang's pods still there
	}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		err := d.c.client.Delete(d.ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
		d.count("DELETE pods")
		if err != nil && !apierrors.IsNotFound(err) {
			return // the run's end shows the gang's pods still there
		}
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
