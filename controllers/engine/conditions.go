package engine

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// Condition types, as upstream names them.
const (
	ConditionCreated    = kubeflowv1.JobConditionType("Created")
	ConditionRunning    = kubeflowv1.JobConditionType("Running")
	ConditionRestarting = kubeflowv1.JobConditionType("Restarting")
	ConditionSucceeded  = kubeflowv1.JobConditionType("Succeeded")
	ConditionFailed     = kubeflowv1.JobConditionType("Failed")
	ConditionSuspended  = kubeflowv1.JobConditionType("Suspended")
)

// Reasons that are not "<Kind><Condition>".
const (
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonResumed              = "Resumed"
)

// conditionsExcludedBy lists, for a condition that becomes true, the
// conditions that become false with it: a job is in one of these states.
var conditionsExcludedBy = map[kubeflowv1.JobConditionType][]kubeflowv1.JobConditionType{
	ConditionRunning:    {ConditionRestarting},
	ConditionRestarting: {ConditionRunning},
	ConditionSucceeded:  {ConditionRunning, ConditionRestarting, ConditionGangScheduled},
	ConditionFailed:     {ConditionRunning, ConditionRestarting, ConditionGangScheduled},
	ConditionSuspended:  {ConditionRunning, ConditionRestarting, ConditionGangScheduled},
}

// setCondition sets a condition; the transition time moves only when the
// status changes, and conditions that cannot hold at the same time as a true
// one are set to false.
func setCondition(status *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType, value corev1.ConditionStatus, reason, message string, now metav1.Time) {
	upsertCondition(status, ctype, value, reason, message, now)
	if value != corev1.ConditionTrue {
		return
	}
	for _, other := range conditionsExcludedBy[ctype] {
		if c := findCondition(status, other); c != nil && c.Status == corev1.ConditionTrue {
			upsertCondition(status, other, corev1.ConditionFalse, reason, message, now)
		}
	}
}

func upsertCondition(status *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType, value corev1.ConditionStatus, reason, message string, now metav1.Time) {
	if c := findCondition(status, ctype); c != nil {
		if c.Status != value {
			c.LastTransitionTime = now
		}
		if c.Status != value || c.Reason != reason || c.Message != message {
			c.LastUpdateTime = now
		}
		c.Status, c.Reason, c.Message = value, reason, message
		return
	}
	status.Conditions = append(status.Conditions, kubeflowv1.JobCondition{
		Type: ctype, Status: value, Reason: reason, Message: message,
		LastUpdateTime: now, LastTransitionTime: now,
	})
}

func findCondition(status *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType) *kubeflowv1.JobCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == ctype {
			return &status.Conditions[i]
		}
	}
	return nil
}

// IsConditionTrue reports whether the job status has ctype set to true.
func IsConditionTrue(status *kubeflowv1.JobStatus, ctype kubeflowv1.JobConditionType) bool {
	c := findCondition(status, ctype)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsFinished reports whether the job has succeeded or failed for good.
func IsFinished(status *kubeflowv1.JobStatus) bool {
	return IsConditionTrue(status, ConditionSucceeded) || IsConditionTrue(status, ConditionFailed)
}

// stateOf is the job's state in one word (status.state): the first true
// condition of Failed, Succeeded, Suspended, Restarting and Running; else
// GangPending while GangScheduled is false; else Created once created.
func stateOf(status *kubeflowv1.JobStatus) kubeflowv1.JobState {
	for _, s := range []struct {
		ctype kubeflowv1.JobConditionType
		state kubeflowv1.JobState
	}{
		{ConditionFailed, kubeflowv1.JobStateFailed},
		{ConditionSucceeded, kubeflowv1.JobStateSucceeded},
		{ConditionSuspended, kubeflowv1.JobStateSuspended},
		{ConditionRestarting, kubeflowv1.JobStateRestarting},
		{ConditionRunning, kubeflowv1.JobStateRunning},
	} {
		if c := findCondition(status, s.ctype); c != nil && c.Status == corev1.ConditionTrue {
			return s.state
		}
	}
	if c := findCondition(status, ConditionGangScheduled); c != nil && c.Status == corev1.ConditionFalse {
		return kubeflowv1.JobStateGangPending
	}
	if c := findCondition(status, ConditionCreated); c != nil && c.Status == corev1.ConditionTrue {
		return kubeflowv1.JobStateCreated
	}
	return ""
}
