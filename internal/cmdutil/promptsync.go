package cmdutil

import (
	"context"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PromptSync makes a manager's cache report itself synced as soon as its
// informers have listed everything, for a manager's NewCache option.
//
// controller-runtime's WaitForCacheSync, which the manager waits on before
// it starts any runnable, is client-go's: it asks every informer whether
// it has synced once at once and then every 100 ms. A scheduler whose
// informers list the cluster in 110 ms starts scheduling at 200 ms. This
// cache first waits on the informers it handed out (GetInformer,
// GetInformerForKind) through their HasSyncedChecker, which wakes the
// moment each has synced, and only then asks the cache itself, whose
// first look then finds them synced. An informer made some other way (a
// cached client's first read of a kind) is still waited for, at the poll's
// pace. An informer handed out and then removed (RemoveInformer) before it
// synced would hold the wait until its context ends: the scheduler removes
// none.
func PromptSync(newCache ctrlcache.NewCacheFunc) ctrlcache.NewCacheFunc {
	return func(cfg *rest.Config, opts ctrlcache.Options) (ctrlcache.Cache, error) {
		c, err := newCache(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &promptSync{Cache: c}, nil
	}
}

type promptSync struct {
	ctrlcache.Cache

	mu sync.Mutex
	// checkers are the sync checkers of the informers handed out, one per
	// informer however often it is asked for.
	checkers map[ctrlcache.Informer]toolscache.DoneChecker
}

// syncChecker is what client-go's shared informers offer beside HasSynced.
type syncChecker interface {
	HasSyncedChecker() toolscache.DoneChecker
}

func (c *promptSync) note(inf ctrlcache.Informer) {
	if s, ok := inf.(syncChecker); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.checkers == nil {
			c.checkers = map[ctrlcache.Informer]toolscache.DoneChecker{}
		}
		c.checkers[inf] = s.HasSyncedChecker()
	}
}

func (c *promptSync) GetInformer(ctx context.Context, obj client.Object, opts ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err == nil {
		c.note(inf)
	}
	return inf, err
}

func (c *promptSync) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err == nil {
		c.note(inf)
	}
	return inf, err
}

func (c *promptSync) WaitForCacheSync(ctx context.Context) bool {
	c.mu.Lock()
	checkers := slices.Collect(maps.Values(c.checkers))
	c.mu.Unlock()
	if !toolscache.WaitFor(ctx, "", checkers...) {
		return false
	}
	return c.Cache.WaitForCacheSync(ctx)
}
