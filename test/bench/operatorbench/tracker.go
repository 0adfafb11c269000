package operatorbench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podState is what the tracker keeps of a pod.
type podState struct {
	uid     types.UID
	job     string // the name of its controller
	running bool
}

// tracker watches the namespace's pods and PodGroups and notes when they
// first were all there, and all Running. It watches (never lists in a
// loop), so that it costs the API server little while the operators work.
type tracker struct {
	jobs, pods int

	mu                   sync.Mutex
	podsSeen             map[string]podState
	groups               map[string]bool
	createdAt, runningAt time.Time
	running              chan struct{}
	// changed is signalled on every pod event, for the restart probe.
	changed chan struct{}
}

func newTracker(jobs, pods int) *tracker {
	return &tracker{jobs: jobs, pods: pods, podsSeen: map[string]podState{}, groups: map[string]bool{},
		running: make(chan struct{}), changed: make(chan struct{}, 1)}
}

// start runs the informers until ctx ends and waits for their first sync.
func (t *tracker) start(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, c Combination, ns string) error {
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	podInf := pods.Core().V1().Pods().Informer()
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.onPod,
		UpdateFunc: func(_, obj any) { t.onPod(obj) },
		DeleteFunc: t.onPodDeleted,
	}); err != nil {
		return err
	}
	groups := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	pgInf := groups.ForResource(c.podGroups()).Informer()
	if _, err := pgInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.onGroup(obj, true) },
		DeleteFunc: func(obj any) { t.onGroup(obj, false) },
	}); err != nil {
		return err
	}
	pods.Start(ctx.Done())
	groups.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, pgInf.HasSynced) {
		return fmt.Errorf("the tracker's informers did not sync: %w", ctx.Err())
	}
	return nil
}

func (t *tracker) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	st := podState{uid: p.UID, running: p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil}
	if ref := metav1.GetControllerOf(p); ref != nil {
		st.job = ref.Name
	}
	t.mu.Lock()
	t.podsSeen[p.Name] = st
	t.update()
	t.mu.Unlock()
	t.signal()
}

func (t *tracker) onPodDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		t.mu.Lock()
		delete(t.podsSeen, p.Name)
		t.mu.Unlock()
		t.signal()
	}
}

func (t *tracker) onGroup(obj any, exists bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return
	}
	t.mu.Lock()
	if exists {
		t.groups[m.GetName()] = true
	} else {
		delete(t.groups, m.GetName())
	}
	t.update()
	t.mu.Unlock()
}

func (t *tracker) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// update notes the first moments the goals were reached; t.mu is held.
func (t *tracker) update() {
	now := time.Now()
	if t.createdAt.IsZero() && len(t.podsSeen) >= t.pods && len(t.groups) >= t.jobs {
		t.createdAt = now
	}
	if !t.runningAt.IsZero() || len(t.podsSeen) < t.pods {
		return
	}
	for _, p := range t.podsSeen {
		if !p.running {
			return
		}
	}
	t.runningAt = now
	close(t.running)
}

// times returns when every pod and PodGroup first existed and when every
// pod first ran (zero: not yet).
func (t *tracker) times() (created, running time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.createdAt, t.runningAt
}

// progress says how far the run got, for an error.
func (t *tracker) progress() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	running := 0
	for _, p := range t.podsSeen {
		if p.running {
			running++
		}
	}
	return fmt.Sprintf("%d of %d pods exist, %d Running; %d of %d PodGroups", len(t.podsSeen), t.pods, running, len(t.groups), t.jobs)
}

// jobPods returns the pods whose controller is job, by name.
func (t *tracker) jobPods(job string) map[string]podState {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]podState{}
	for name, p := range t.podsSeen {
		if p.job == job {
			out[name] = p
		}
	}
	return out
}
