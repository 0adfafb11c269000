package cmdutil

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// informerCache hands out one client-go informer, whose list waits for
// listed, and answers WaitForCacheSync with whether that informer had
// synced when it was asked: what client-go's immediate first look sees.
type informerCache struct {
	ctrlcache.Cache
	informer toolscache.SharedIndexInformer
	asked    atomic.Int32
	sawSync  atomic.Bool
}

func (c *informerCache) GetInformer(context.Context, client.Object, ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	return c.informer, nil
}

func (c *informerCache) WaitForCacheSync(context.Context) bool {
	c.asked.Add(1)
	c.sawSync.Store(c.informer.HasSynced())
	return true
}

func newInformerCache(listed <-chan struct{}) *informerCache {
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			select {
			case <-listed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		// client-go lists through a watch when its WatchListClient
		// feature is on: the initial events end with a bookmark.
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFake()
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				go func() {
					select {
					case <-listed:
					case <-ctx.Done():
						return
					}
					w.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
						ResourceVersion: "1", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
					}})
				}()
			}
			return w, nil
		},
	}
	return &informerCache{informer: toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})}
}

func TestPromptSyncWaitsForItsInformers(t *testing.T) {
	listed := make(chan struct{})
	inner := newInformerCache(listed)
	c, err := PromptSync(func(*rest.Config, ctrlcache.Options) (ctrlcache.Cache, error) { return inner, nil })(nil, ctrlcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 { // asked for twice, waited on once
		if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.(*promptSync).checkers); n != 1 {
		t.Fatalf("%d sync checkers for one informer, want 1", n)
	}
	go inner.informer.RunWithContext(ctx)

	synced := make(chan bool)
	go func() { synced <- c.WaitForCacheSync(ctx) }()
	// The list answers a little later: a cache that asked its inner
	// cache at once would find the informer not synced.
	time.AfterFunc(50*time.Millisecond, func() { close(listed) })
	if !<-synced {
		t.Fatal("WaitForCacheSync returned false")
	}
	if inner.asked.Load() != 1 || !inner.sawSync.Load() {
		t.Errorf("the inner cache was asked %d times, and saw the informer synced: %v; want once, after it synced", inner.asked.Load(), inner.sawSync.Load())
	}
}

func TestPromptSyncGivesUpWithItsContext(t *testing.T) {
	inner := newInformerCache(make(chan struct{})) // never lists
	c, err := PromptSync(func(*rest.Config, ctrlcache.Options) (ctrlcache.Cache, error) { return inner, nil })(nil, ctrlcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	go inner.informer.RunWithContext(ctx)
	cancel()
	if c.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync returned true with its informer never synced")
	}
	if inner.asked.Load() != 0 {
		t.Error("the inner cache was asked although the wait had ended")
	}
}
