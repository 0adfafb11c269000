package cache

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// assumedPods remembers pods this scheduler has bound (or is binding) that
// the informer may not show bound yet, and pods it has deleted that the
// informer may not show terminating yet (assumeDeleted; the same reasoning
// applies).
//
// Without it, a cycle that runs before the watch delivers the bound pod
// would see it pending again: it would place it a second time (the API
// server refuses the second bind, but the cycle has already given the
// pod's room to it instead of to another gang) and count the node as
// emptier than it is. So an assumed pod reads as bound to its node until
// the informer shows spec.nodeName (whatever node it shows wins: the API
// server's word is final), the pod is gone, or ttl passes — the last only
// so that a lost watch event cannot pin a pod forever; a pod that expires
// bound is then refused by the API server, not bound twice.
type assumedPods struct {
	mu   sync.Mutex
	ttl  time.Duration
	pods map[types.UID]assumption
}

type assumption struct {
	node  string
	since time.Time
	// deleting: the scheduler deleted the pod (preemption). Until the
	// informer shows its deletionTimestamp (or the pod gone, or ttl
	// passes), it reads as terminating on node, so the next cycle does
	// not see the victim running and evict it again.
	deleting bool
	// view is the copy apply showed of the informer's object of, kept so
	// that every cycle until the informer catches up sees the same
	// object: the builder's memo then derives the pod's task once, not
	// once per cycle while its bind is in flight (thousands at a time
	// when one cycle binds a large backlog).
	of, view *corev1.Pod
}

func newAssumedPods(ttl time.Duration) *assumedPods {
	return &assumedPods{ttl: ttl, pods: map[types.UID]assumption{}}
}

func (a *assumedPods) assume(uid types.UID, node string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods[uid] = assumption{node: node, since: now}
}

func (a *assumedPods) assumeDeleted(uid types.UID, node string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods[uid] = assumption{node: node, since: now, deleting: true}
}

func (a *assumedPods) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pods, uid)
}

// bindsTo says whether uid is assumed bound (not deleted) to node.
func (a *assumedPods) bindsTo(uid types.UID, node string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	as, ok := a.pods[uid]
	return ok && !as.deleting && as.node == node
}

func (a *assumedPods) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pods)
}

// apply returns pods with every live assumption applied: a pending pod that
// is assumed comes back as a copy bound to the assumed node, a deleted one
// as a terminating copy (the informer's object is never changed). Assumptions that are settled (the pod shows a
// node, is gone, or expired) are dropped.
func (a *assumedPods) apply(pods []*corev1.Pod, now time.Time) []*corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pods) == 0 {
		return pods
	}
	seen := make(map[types.UID]bool, len(a.pods))
	out := make([]*corev1.Pod, len(pods))
	for i, pod := range pods {
		out[i] = pod
		as, ok := a.pods[pod.UID]
		if !ok {
			continue
		}
		seen[pod.UID] = true
		if as.deleting {
			if pod.DeletionTimestamp != nil || now.Sub(as.since) > a.ttl {
				delete(a.pods, pod.UID)
				continue
			}
			out[i] = a.view(pod, as, func(deleting *corev1.Pod) {
				ts := metav1.NewTime(as.since)
				deleting.DeletionTimestamp = &ts
				if deleting.Spec.NodeName == "" { // its bind is assumed too
					deleting.Spec.NodeName = as.node
				}
			})
			continue
		}
		if pod.Spec.NodeName != "" || now.Sub(as.since) > a.ttl {
			delete(a.pods, pod.UID)
			continue
		}
		out[i] = a.view(pod, as, func(bound *corev1.Pod) { bound.Spec.NodeName = as.node })
	}
	for uid := range a.pods {
		if !seen[uid] {
			delete(a.pods, uid)
		}
	}
	return out
}

// view returns the copy of pod that as shows, made by change the first
// time pod (this object of it) is shown. A shallow copy is enough: only
// value fields change, and nothing downstream writes through the shared
// maps and slices. The caller holds a.mu.
func (a *assumedPods) view(pod *corev1.Pod, as assumption, change func(*corev1.Pod)) *corev1.Pod {
	if as.of == pod {
		return as.view
	}
	cp := *pod
	change(&cp)
	as.of, as.view = pod, &cp
	a.pods[pod.UID] = as
	return &cp
}
