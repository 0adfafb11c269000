package binder

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/internal/parallel"
)

// Event reasons and actions of the scheduler's deletions: kube-scheduler's
// words for a preemption; Reclaimed for a partial gang's members.
const (
	ReasonPreempted  = "Preempted"
	ActionPreempting = "Preempting"
	ReasonReclaimed  = schedulingv1alpha1.PodGroupReasonReclaimed
	ActionReclaiming = "Reclaiming"
)

// DisruptionReasonReclaimed is the DisruptionTarget condition's reason on
// a member of a partial gang the scheduler deletes (a preemption victim
// gets kube-scheduler's PreemptionByScheduler).
const DisruptionReasonReclaimed = "PartialGangReclaimed"

// Evict deletes every evicted pod and returns one error (nil on success)
// per eviction, in the same order. It records an event on each pod it
// deleted (Preempted or Reclaimed, with the eviction's reason) and one on
// the PodGroup of each gang that lost pods (podGroups, by job; a gang
// missing there gets no PodGroup event).
//
// Each pod first gets a DisruptionTarget condition, as kube-scheduler
// gives its victims before deleting them: reason PreemptionByScheduler
// for a preemption, PartialGangReclaimed for a partial gang's member. It
// tells the pod's controller why the pod went (Troupe's operator counts
// it as a disruption, not a failure), and it tells this scheduler, should
// the deletion fail or the scheduler die before it, that the pod's gang
// is being preempted, so that the rest of it is deleted too rather than
// completed (api.TaskInfo.Preempted).
//
// The deletion is graceful (the pod's own termination grace period: the
// workload may checkpoint), and carries the UID the session saw as a
// precondition, so that a pod deleted and recreated under the same name
// since the snapshot is not the one that goes. A pod already gone is no
// error: what the eviction wanted is done.
func (b *Binder) Evict(ctx context.Context, evictions []framework.Eviction, podGroups map[api.JobID]*schedulingv1alpha1.PodGroup) []error {
	errs := make([]error, len(evictions))
	parallel.ForEach(len(evictions), b.workers, func(i int) { errs[i] = b.evict(ctx, evictions[i]) })

	// One event per gang, in eviction order (deterministic).
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
			reason, action := eventOf(e.Cause)
			b.recorder.Eventf(pg, nil, corev1.EventTypeWarning, reason, action,
				"%s: %d of its pods deleted", e.Reason, deleted[e.Task.Job])
		}
	}
	return errs
}

func eventOf(c framework.EvictionCause) (reason, action string) {
	if c == framework.CauseReclaim {
		return ReasonReclaimed, ActionReclaiming
	}
	return ReasonPreempted, ActionPreempting
}

func (b *Binder) evict(ctx context.Context, e framework.Eviction) error {
	pod := e.Task.Pod
	// A bare pod: the informer's object is shared and must not be handed
	// to code that may write into it.
	victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	if err := b.markDisruption(ctx, victim, e); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("mark %s/%s as a disruption target: %w", pod.Namespace, pod.Name, err)
	}
	uid := pod.UID
	err := b.client.Delete(ctx, victim, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	reason, action := eventOf(e.Cause)
	b.recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, action, "%s", e.Reason)
	return nil
}

// markDisruption adds the DisruptionTarget condition to the pod's status
// with a strategic merge patch, which merges conditions by type and keeps
// the others. The pod's UID in the patch makes the API server refuse it
// for a pod recreated under the same name.
func (b *Binder) markDisruption(ctx context.Context, pod *corev1.Pod, e framework.Eviction) error {
	reason := corev1.PodReasonPreemptionByScheduler
	if e.Cause == framework.CauseReclaim {
		reason = DisruptionReasonReclaimed
	}
	patch := map[string]any{
		"metadata": map[string]any{"uid": e.Task.Pod.UID},
		"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason,
			Message: b.schedulerName + ": " + e.Reason, LastTransitionTime: metav1.NewTime(time.Now()),
		}}},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return b.client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, data))
}
