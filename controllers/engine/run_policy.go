package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// pastActiveDeadline reports whether the job ran past
// activeDeadlineSeconds, counted from its start (or its last resume), and
// otherwise how long it has left.
func pastActiveDeadline(rp *kubeflowv1.RunPolicy, status *kubeflowv1.JobStatus, now time.Time) (bool, time.Duration) {
	if rp.ActiveDeadlineSeconds == nil || status.StartTime == nil {
		return false, 0
	}
	deadline := status.StartTime.Add(time.Duration(*rp.ActiveDeadlineSeconds) * time.Second)
	if !now.Before(deadline) {
		return true, 0
	}
	return false, deadline.Sub(now)
}

// restartsSoFar counts the restarts that backoffLimit limits: pods the
// engine replaced, plus in-place container restarts of pods whose replica
// policy lets the kubelet restart them.
func restartsSoFar(job Job, pods []*corev1.Pod) int32 {
	inPlace := map[string]bool{}
	for rtype, spec := range job.ReplicaSpecs() {
		p := spec.RestartPolicy
		inPlace[strings.ToLower(string(rtype))] = p == kubeflowv1.RestartPolicy("Always") || p == kubeflowv1.RestartPolicy("OnFailure")
	}
	n := job.GetJobStatus().RecreatedPods
	for _, p := range pods {
		if !isTerminating(p) && inPlace[p.Labels[kubeflowv1.ReplicaTypeLabel]] {
			n += containerRestarts(p)
		}
	}
	return n
}

// backoffLimitReachedBy reports whether more restarts would take the job
// past backoffLimit.
func backoffLimitReachedBy(job Job, pods []*corev1.Pod, more int32) (bool, string) {
	limit := job.GetRunPolicy().BackoffLimit
	if limit == nil {
		return false, ""
	}
	n := restartsSoFar(job, pods) + more
	if n <= *limit {
		return false, ""
	}
	return true, fmt.Sprintf("%s %s has failed because it has reached the specified backoff limit (%d restarts, backoffLimit %d)",
		job.GetObjectKind().GroupVersionKind().Kind, job.GetName(), n, *limit)
}

// pastBackoffLimit reports whether the restarts so far exceed backoffLimit.
func pastBackoffLimit(job Job, pods []*corev1.Pod) (bool, string) {
	return backoffLimitReachedBy(job, pods, 0)
}

func isSuspended(job Job) bool {
	s := job.GetRunPolicy().Suspend
	return s != nil && *s
}

// reconcileSuspended stops a suspended job: every pod and service goes,
// the Suspended condition says so, and the start time is cleared so that
// activeDeadlineSeconds counts again from the resume.
func (r *Reconciler) reconcileSuspended(ctx context.Context, s *scope) error {
	if err := r.deleteAll(ctx, s); err != nil {
		return err
	}
	if err := r.deleteGang(ctx, s, nil); err != nil {
		return err
	}
	status := s.status()
	for _, rs := range status.ReplicaStatuses {
		rs.Active = 0
	}
	if !IsConditionTrue(status, ConditionSuspended) {
		kind := r.fw.GroupVersionKind().Kind
		msg := fmt.Sprintf("%s %s is suspended.", kind, s.job.GetName())
		setCondition(status, ConditionSuspended, corev1.ConditionTrue, kind+"Suspended", msg, s.now)
		r.event(s.job, corev1.EventTypeNormal, kind+"Suspended", msg)
	}
	status.StartTime = nil
	return nil
}

// reconcileFinished cleans up after a job whose verdict is stored: it stops
// what must stop, applies cleanPodPolicy, and deletes the job once
// ttlSecondsAfterFinished has passed.
func (r *Reconciler) reconcileFinished(ctx context.Context, s *scope) error {
	// A deadline or an exhausted budget (backoffLimit, or a gang restart
	// budget) stops the pods that still run, as
	// batch/v1 Job does, whatever cleanPodPolicy keeps.
	if c := findCondition(s.status(), ConditionFailed); c != nil && c.Status == corev1.ConditionTrue &&
		slices.Contains([]string{ReasonDeadlineExceeded, ReasonBackoffLimitExceeded, ReasonMaxRestartsExceeded, ReasonMaxDisruptionsExceeded}, c.Reason) {
		if err := r.deletePods(ctx, s, isActive); err != nil {
			return err
		}
	}
	if err := r.deleteGang(ctx, s, nil); err != nil {
		return err
	}
	policy := kubeflowv1.CleanPodPolicy("None")
	if p := s.job.GetRunPolicy().CleanPodPolicy; p != nil {
		policy = *p
	}
	switch policy {
	case kubeflowv1.CleanPodPolicy("All"):
		if err := r.deleteAll(ctx, s); err != nil {
			return err
		}
	case kubeflowv1.CleanPodPolicy("Running"):
		if err := r.deletePods(ctx, s, isActive); err != nil {
			return err
		}
	}

	ttl := s.job.GetRunPolicy().TTLSecondsAfterFinished
	finishedAt := s.status().CompletionTime
	if ttl == nil || finishedAt == nil {
		return nil
	}
	expiry := finishedAt.Add(time.Duration(*ttl) * time.Second)
	if s.now.Time.Before(expiry) {
		s.requeueAt(expiry.Sub(s.now.Time))
		return nil
	}
	uid := s.original.GetUID()
	err := r.client.Delete(ctx, s.original, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete job after ttlSecondsAfterFinished: %w", err)
	}
	r.event(s.job, corev1.EventTypeNormal, "TTLExpired", fmt.Sprintf("Deleted %s %s: ttlSecondsAfterFinished (%ds) has passed.", r.fw.GroupVersionKind().Kind, s.job.GetName(), *ttl))
	s.deleted = true
	return nil
}
