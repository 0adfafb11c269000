package binder

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/internal/parallel"
)

// Event reason and action of a preemption, kube-scheduler's words.
const (
	ReasonPreempted  = "Preempted"
	ActionPreempting = "Preempting"
)

// Evict deletes every evicted pod and returns one error (nil on success)
// per eviction, in the same order. It records a Preempted event, with the
// eviction's reason, on each pod it deleted and once on the PodGroup of
// each gang that lost pods (podGroups, by job; a gang missing there gets
// no PodGroup event).
//
// The deletion is graceful (the pod's own termination grace period: the
// workload may checkpoint), and carries the UID the session saw as a
// precondition, so that a pod deleted and recreated under the same name
// since the snapshot is not the one that goes. A pod already gone is no
// error: what the eviction wanted is done.
func (b *Binder) Evict(ctx context.Context, evictions []framework.Eviction, podGroups map[api.JobID]*schedulingv1alpha1.PodGroup) []error {
	errs := make([]error, len(evictions))
	parallel.ForEach(len(evictions), b.workers, func(i int) { errs[i] = b.evict(ctx, evictions[i]) })

	// One event per victim gang, in eviction order (deterministic).
	deleted := map[api.JobID]int{}
	var order []framework.Eviction
	for i, e := range evictions {
		if errs[i] != nil {
			continue
		}
		if deleted[e.Task.Job] == 0 {
			order = append(order, e)
		}
		deleted[e.Task.Job]++
	}
	for _, e := range order {
		if pg := podGroups[e.Task.Job]; pg != nil {
			b.recorder.Eventf(pg, nil, corev1.EventTypeWarning, ReasonPreempted, ActionPreempting,
				"%s: %d of its pods deleted", e.Reason, deleted[e.Task.Job])
		}
	}
	return errs
}

func (b *Binder) evict(ctx context.Context, e framework.Eviction) error {
	pod := e.Task.Pod
	// A bare pod: the informer's object is shared and must not be handed
	// to code that may write into it.
	victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	uid := pod.UID
	err := b.client.Delete(ctx, victim, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	b.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonPreempted, ActionPreempting, "%s", e.Reason)
	return nil
}
