// Package cache is the scheduler's view of the cluster, fed by informers:
// every node, every pod (all schedulers' pods, terminating ones included,
// since all of them take room on their nodes), PriorityClasses, namespaces
// (their labels, for pod affinity's namespaceSelector), the storage objects
// the volume rules read (PersistentVolumeClaims, PersistentVolumes,
// StorageClasses, CSINodes), and Troupe's PodGroups and Queues. Snapshot
// turns it into one cycle's api.Snapshot; Assume and Forget keep pods this
// scheduler bound from being placed again before the informer shows them
// bound.
package cache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Cache is the informer-fed cluster state of one scheduler.
type Cache struct {
	informers ctrlcache.Cache
	// nodes, pods and podGroups are the stores of their informers, when the
	// informers expose them (client-go's shared informers do): the snapshot
	// then takes their objects without the shallow copy a List makes of
	// each. An unchanged object also stays the same pointer from cycle to
	// cycle, which is how the builder's memos know it unchanged (through a
	// List every object would look changed, and be converted every cycle).
	nodes, pods, podGroups toolscache.Store
	assumed                *assumedPods
	now                    func() time.Time
	changed                chan struct{}
	// podEvents receives after any pod event since the last receive:
	// AwaitBound's wake-up.
	podEvents chan struct{}
	// primer derives each pod's task as the pod informer delivers it, for
	// the builder's memo (api.TaskPrimer); podsPrimed says the pod handler
	// has handled the informer's initial list.
	primer     *api.TaskPrimer
	podsPrimed func() bool
	// storage looks the storage objects up in their informers' stores,
	// nil when some informer exposes none (each snapshot then lists them).
	storage *storeSource

	// nodeEvents counts the node informer's events. A snapshot that sees
	// the count its last one saw knows the nodes unchanged, and takes them
	// from the builder's memo without listing the nodes.
	nodeEvents atomic.Uint64

	// mu serialises snapshots: the builder carries state between them.
	mu      sync.Mutex
	builder Builder
	// builtNodeEvents is nodeEvents as the last snapshot read it, and
	// built says that snapshot succeeded (so the memo holds its nodes).
	builtNodeEvents uint64
	built           bool
}

// Options configure a Cache.
type Options struct {
	// SchedulerName is the spec.schedulerName of the pods this scheduler
	// places.
	SchedulerName string
	// AssumedTTL bounds how long a bound pod the informer does not show
	// bound yet is trusted; 0 means two minutes.
	AssumedTTL time.Duration
}

// watched are the kinds the scheduler reads; each has an informer.
func watched() []client.Object {
	return []client.Object{
		&corev1.Node{}, &corev1.Pod{}, &schedulingv1.PriorityClass{}, &corev1.Namespace{},
		&schedulingv1alpha1.PodGroup{}, &schedulingv1alpha1.Queue{}, &schedulingv1alpha1.Topology{},
		&corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}, &storagev1.StorageClass{}, &storagev1.CSINode{},
	}
}

// New returns a cache over informers (a controller-runtime cache, usually
// the manager's; its scheme must know the scheduling.troupe.dev types).
// The informers are created here, so that they start with the manager's
// cache.
func New(ctx context.Context, informers ctrlcache.Cache, opts Options) (*Cache, error) {
	ttl := opts.AssumedTTL
	if ttl == 0 {
		ttl = assumedTTL
	}
	c := newCache(opts.SchedulerName, ttl)
	c.informers = informers
	var storage storeSource
	for _, obj := range watched() {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("informer for %T: %w", obj, err)
		}
		onEvent := c.notify
		onUpdate := func(any, any) { onEvent() }
		switch obj.(type) {
		case *corev1.Node:
			onEvent = func() { c.nodeEvents.Add(1); c.notify() }
		case *schedulingv1alpha1.PodGroup, *schedulingv1alpha1.Queue:
			onUpdate = c.statusUpdated
		}
		handler := toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { onEvent() },
			UpdateFunc: onUpdate,
			DeleteFunc: func(any) { onEvent() },
		}
		if _, ok := obj.(*corev1.Pod); ok {
			handler = c.podHandler()
		}
		reg, err := inf.AddEventHandler(handler)
		if err != nil {
			return nil, fmt.Errorf("event handler for %T: %w", obj, err)
		}
		if _, ok := obj.(*corev1.Pod); ok {
			c.podsPrimed = reg.HasSynced
		}
		if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
			switch obj.(type) {
			case *corev1.Node:
				c.nodes = s.GetStore()
			case *corev1.Pod:
				c.pods = s.GetStore()
			case *schedulingv1alpha1.PodGroup:
				c.podGroups = s.GetStore()
			case *corev1.PersistentVolumeClaim:
				storage.pvcs = s.GetStore()
			case *corev1.PersistentVolume:
				storage.pvs = s.GetStore()
			case *storagev1.StorageClass:
				storage.classes = s.GetStore()
			case *storagev1.CSINode:
				storage.csiNodes = s.GetStore()
			}
		}
	}
	if storage.pvcs != nil && storage.pvs != nil && storage.classes != nil && storage.csiNodes != nil {
		c.storage = &storage
	}
	return c, nil
}

// newCache is a Cache without its informers: the state New starts them
// with, the builder's memo taking the pod handler's primed tasks.
func newCache(schedulerName string, assumedTTL time.Duration) *Cache {
	c := &Cache{
		assumed:   newAssumedPods(assumedTTL),
		now:       time.Now,
		changed:   make(chan struct{}, 1),
		podEvents: make(chan struct{}, 1),
		primer:    api.NewTaskPrimer(JobOf(schedulerName)),
		builder:   Builder{SchedulerName: schedulerName},
	}
	c.builder.tasks.Primer = c.primer
	return c
}

// Changed receives after any watched object was added, updated or deleted
// since the last receive. Any number of changes make one receive: a cycle
// reads the whole state anyway.
func (c *Cache) Changed() <-chan struct{} { return c.changed }

// notify runs on the informers' goroutines and must not block them.
func (c *Cache) notify() { signal(c.changed) }

// statusUpdated handles a PodGroup's or Queue's update: it wakes the loop
// unless only the status changed. The scheduler writes those statuses,
// and reads its own decisions before they land (status.Writer), so their
// echo changes nothing a cycle decides; a status anyone else wrote is read
// by the next cycle the loop runs anyway (at most the scheduler's
// MaxIdlePeriod later).
func (c *Cache) statusUpdated(oldObj, newObj any) {
	old, okOld := oldObj.(client.Object)
	obj, okNew := newObj.(client.Object)
	if okOld && okNew && old.GetGeneration() == obj.GetGeneration() &&
		maps.Equal(old.GetLabels(), obj.GetLabels()) && maps.Equal(old.GetAnnotations(), obj.GetAnnotations()) &&
		old.GetDeletionTimestamp().Equal(obj.GetDeletionTimestamp()) && slices.Equal(old.GetFinalizers(), obj.GetFinalizers()) &&
		equality.Semantic.DeepEqual(old.GetOwnerReferences(), obj.GetOwnerReferences()) {
		return
	}
	c.notify()
}

// podHandler handles the pod informer's events: each new pod object's task
// is derived (primed) before the loop is woken for it, so the cycle the
// event wakes finds it made (a new object's entry replaces its old one's),
// and a deleted pod is forgotten. Every event wakes AwaitBound.
func (c *Cache) podHandler() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				c.primer.Prime(pod)
			}
			signal(c.podEvents)
			c.notify()
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, _ := oldObj.(*corev1.Pod)
			pod, ok := newObj.(*corev1.Pod)
			// A resync delivers the same object again: nothing to derive.
			if ok && old != pod {
				c.primer.Prime(pod)
			}
			c.podUpdated(old, pod)
		},
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				c.primer.Forget(pod)
			}
			signal(c.podEvents)
			c.notify()
		},
	}
}

// podUpdated handles a pod's update: it wakes AwaitBound, and the loop
// unless the update only shows a bind this scheduler made, to the node
// it assumed: the snapshots have counted that pod there since the bind
// was dispatched, so no cycle can decide differently for it. A burst of
// binds would otherwise run a cycle per MinCyclePeriod for its own echo.
// Either pod may be nil (an object of another type).
func (c *Cache) podUpdated(old, pod *corev1.Pod) {
	signal(c.podEvents)
	if old != nil && pod != nil && old.Spec.NodeName == "" && pod.Spec.NodeName != "" && c.assumed.bindsTo(pod.UID, pod.Spec.NodeName) {
		return
	}
	c.notify()
}

// signal makes a receive on ch ready, without blocking: ch has room for
// one, and any number of signals before the receive make one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// AwaitBound waits until the pod informer shows every one of pods bound to
// a node, or gone (deleted, or replaced by a pod of another UID), for at
// most timeout or until ctx ends, and returns how many it did not see so.
// Only one caller may wait at a time (the scheduling loop).
//
// The scheduler waits so before it writes a cycle's statuses: its own
// informer showing its binds is a sign that the API server has sent them
// to its other watchers too (a kubelet, a job's operator), and a burst of
// status writes begun sooner takes the API server's time from sending
// them (on 2 cores, 500 PodGroup status patches at 256 in flight right
// after 2000 binds delayed the last bind's watch event by about 0.9 s). Binds land in
// about the order they were sent, so pods is read front to back and each
// event rechecks only from the first pod not yet seen.
//
// Without a pod store (an informer that exposes none) it returns at once,
// having seen nothing.
func (c *Cache) AwaitBound(ctx context.Context, pods []*corev1.Pod, timeout time.Duration) (unseen int) {
	if c.pods == nil || len(pods) == 0 {
		return len(pods)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		for len(pods) > 0 && c.shownBound(pods[0]) {
			pods = pods[1:]
		}
		if len(pods) == 0 {
			return 0
		}
		select {
		case <-c.podEvents:
		case <-deadline.C:
			return len(pods)
		case <-ctx.Done():
			return len(pods)
		}
	}
}

// AwaitObject waits until the informers hold an object of obj's kind and
// key (obj receives it), polling every 10 ms, for at most timeout or until
// ctx ends; false if they never did. It is for start-up only: the
// scheduler's own writes that its first cycle must see.
func (c *Cache) AwaitObject(ctx context.Context, obj client.Object, timeout time.Duration) bool {
	key := client.ObjectKeyFromObject(obj)
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return c.informers.Get(ctx, key, obj) == nil, nil
	})
	return err == nil
}

// shownBound says whether the pod store shows pod bound, or shows it gone.
func (c *Cache) shownBound(pod *corev1.Pod) bool {
	obj, exists, err := c.pods.GetByKey(pod.Namespace + "/" + pod.Name)
	if err != nil || !exists {
		return true
	}
	shown, ok := obj.(*corev1.Pod)
	return !ok || shown.UID != pod.UID || shown.Spec.NodeName != ""
}

// WaitForSync blocks until every informer has listed its objects, so that
// the first snapshot is complete, and the pod handler has derived the
// tasks of the pods listed, so that the first cycle does not; false if ctx
// ended first.
func (c *Cache) WaitForSync(ctx context.Context) bool {
	if !c.informers.WaitForCacheSync(ctx) {
		return false
	}
	// client-go's WaitForCacheSync polls every 100 ms; the handler is
	// usually a few ms behind the store.
	err := wait.PollUntilContextCancel(ctx, 2*time.Millisecond, true, func(context.Context) (bool, error) {
		return c.podsPrimed(), nil
	})
	return err == nil
}

// TasksDerived is how many pod objects the pod handler derived tasks of
// (primed), and how many tasks the cycles' snapshots derived themselves
// (neither carried from an earlier cycle nor primed).
func (c *Cache) TasksDerived() (primed, inCycles uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.primer.Primed(), c.builder.TasksDerived()
}

// Snapshot builds one cycle's state from what the informers hold now, with
// assumed pods shown bound. The objects are the informers' own (no deep
// copy: a cycle reads every pod in the cluster), so the state's PodGroups,
// Queues and the tasks' pods must not be modified.
func (c *Cache) Snapshot(ctx context.Context) (*State, error) {
	var (
		nodes corev1.NodeList
		pods  corev1.PodList
		pcs   schedulingv1.PriorityClassList
		nss   corev1.NamespaceList
		tops  schedulingv1alpha1.TopologyList
		pgs   schedulingv1alpha1.PodGroupList
		qs    schedulingv1alpha1.QueueList
	)
	// Read before the nodes are: an event after this read makes the next
	// snapshot list them again.
	nodeEvents := c.nodeEvents.Load()
	c.mu.Lock()
	nodesUnchanged := c.built && nodeEvents == c.builtNodeEvents
	c.mu.Unlock()
	lists := []client.ObjectList{&pcs, &qs, &nss, &tops}
	if c.podGroups == nil {
		lists = append(lists, &pgs)
	}
	if c.nodes == nil && !nodesUnchanged {
		lists = append(lists, &nodes)
	}
	if c.pods == nil {
		lists = append(lists, &pods)
	}
	for _, list := range lists {
		if err := c.informers.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list %T: %w", list, err)
		}
	}
	storage, err := c.storageSource(ctx)
	if err != nil {
		return nil, err
	}
	objs := Objects{
		NodesUnchanged:  nodesUnchanged,
		Storage:         storage,
		Pods:            c.assumed.apply(fromStore(c.pods, pods.Items), c.now()),
		PriorityClasses: ptrs(pcs.Items),
		Namespaces:      ptrs(nss.Items),
		Topologies:      ptrs(tops.Items),
		PodGroups:       fromStore(c.podGroups, pgs.Items),
		Queues:          ptrs(qs.Items),
	}
	if !nodesUnchanged {
		objs.Nodes = fromStore(c.nodes, nodes.Items)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.builder.Build(objs)
	c.builtNodeEvents, c.built = nodeEvents, err == nil
	return st, err
}

// Release ends a cycle's use of its state: the next snapshot may reuse its
// nodes. Nothing of the state may be used after.
func (c *Cache) Release(st *State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.Snapshot.Release() // its NodeMemo is the builder's
}

// storageSource returns where this snapshot looks storage objects up:
// their informers' stores, which hold every claim and volume of the
// cluster at no cost to a cycle that uses none (the snapshot reads each
// object it needs once, see api.Snapshot.PersistentVolumeClaim); or,
// without stores, the objects listed now.
func (c *Cache) storageSource(ctx context.Context) (api.StorageSource, error) {
	if c.storage != nil {
		return c.storage, nil
	}
	var (
		pvcs     corev1.PersistentVolumeClaimList
		pvs      corev1.PersistentVolumeList
		classes  storagev1.StorageClassList
		csiNodes storagev1.CSINodeList
	)
	for _, list := range []client.ObjectList{&pvcs, &pvs, &classes, &csiNodes} {
		if err := c.informers.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list %T: %w", list, err)
		}
	}
	return api.StorageObjects{
		PersistentVolumeClaims: ptrs(pvcs.Items),
		PersistentVolumes:      ptrs(pvs.Items),
		StorageClasses:         ptrs(classes.Items),
		CSINodes:               ptrs(csiNodes.Items),
	}.Index(), nil
}

// storeSource looks storage objects up in their informers' stores by the
// stores' keys (namespace/name, or the name of a cluster-scoped object).
type storeSource struct {
	pvcs, pvs, classes, csiNodes toolscache.Store
}

func (s *storeSource) PersistentVolumeClaim(namespace, name string) *corev1.PersistentVolumeClaim {
	return getByKey[corev1.PersistentVolumeClaim](s.pvcs, namespace+"/"+name)
}

func (s *storeSource) PersistentVolume(name string) *corev1.PersistentVolume {
	return getByKey[corev1.PersistentVolume](s.pvs, name)
}

func (s *storeSource) StorageClass(name string) *storagev1.StorageClass {
	return getByKey[storagev1.StorageClass](s.classes, name)
}

func (s *storeSource) CSINode(name string) *storagev1.CSINode {
	return getByKey[storagev1.CSINode](s.csiNodes, name)
}

// getByKey returns the store's object of key, nil if there is none. A
// store's lookup cannot fail (a thread-safe store's never does); should
// one, the object reads as absent, which waits rather than places.
func getByKey[T any](store toolscache.Store, key string) *T {
	obj, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

// fromStore returns the objects of store, the informer's own, or pointers
// to listed when there is no store.
func fromStore[T any](store toolscache.Store, listed []T) []*T {
	if store == nil {
		return ptrs(listed)
	}
	items := store.List()
	out := make([]*T, 0, len(items))
	for _, it := range items {
		if o, ok := it.(*T); ok {
			out = append(out, o)
		}
	}
	return out
}

// Assume records that pod is being bound to node: until the informer
// shows it bound, snapshots show it there.
func (c *Cache) Assume(pod types.UID, node string) { c.assumed.assume(pod, node, c.now()) }

// AssumeDeleted records that pod, on node, is being deleted: until the
// informer shows it terminating or gone, snapshots show it terminating
// there (it still holds the node; it no longer counts for its gang).
func (c *Cache) AssumeDeleted(pod types.UID, node string) {
	c.assumed.assumeDeleted(pod, node, c.now())
}

// Forget drops an assumption, after a failed bind: the next snapshot shows
// the pod pending again, and the next cycle places it anew.
func (c *Cache) Forget(pod types.UID) { c.assumed.forget(pod) }

// Assumed is the number of pods assumed bound and not yet seen so.
func (c *Cache) Assumed() int { return c.assumed.len() }

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
