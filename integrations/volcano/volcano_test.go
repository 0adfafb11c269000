package volcano

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestState(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0)) }
	unschedulable := func(sec int64, msg string) volcanov1beta1.PodGroupCondition {
		return volcanov1beta1.PodGroupCondition{Type: volcanov1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue, LastTransitionTime: at(sec), Message: msg}
	}
	scheduled := func(sec int64) volcanov1beta1.PodGroupCondition {
		return volcanov1beta1.PodGroupCondition{Type: volcanov1beta1.PodGroupScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(sec)}
	}
	const msg = "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"
	cases := []struct {
		name              string
		phase             volcanov1beta1.PodGroupPhase
		conditions        []volcanov1beta1.PodGroupCondition
		wantAdmitted      bool
		wantUnschedulable string
	}{
		{name: "new: the scheduler has not seen it", phase: "", wantAdmitted: false},
		{name: "pending: not admitted", phase: volcanov1beta1.PodGroupPending, wantAdmitted: false},
		{name: "inqueue: admitted before its pods exist", phase: volcanov1beta1.PodGroupInqueue, wantAdmitted: true},
		{name: "running", phase: volcanov1beta1.PodGroupRunning, wantAdmitted: true},
		{name: "unknown: some members cannot be placed", phase: volcanov1beta1.PodGroupUnknown, wantAdmitted: true},
		{name: "completed", phase: volcanov1beta1.PodGroupCompleted, wantAdmitted: true},
		{
			name: "inqueue and unschedulable", phase: volcanov1beta1.PodGroupInqueue,
			conditions:   []volcanov1beta1.PodGroupCondition{unschedulable(10, msg)},
			wantAdmitted: true, wantUnschedulable: msg,
		},
		{
			name: "a later Scheduled outdates Unschedulable, which Volcano never sets False", phase: volcanov1beta1.PodGroupInqueue,
			conditions:   []volcanov1beta1.PodGroupCondition{unschedulable(10, msg), scheduled(20)},
			wantAdmitted: true,
		},
		{
			name: "a later Unschedulable outdates Scheduled", phase: volcanov1beta1.PodGroupUnknown,
			conditions:   []volcanov1beta1.PodGroupCondition{scheduled(10), unschedulable(20, msg)},
			wantAdmitted: true, wantUnschedulable: msg,
		},
		{
			name: "on a tie Scheduled wins", phase: volcanov1beta1.PodGroupInqueue,
			conditions:   []volcanov1beta1.PodGroupCondition{unschedulable(10, msg), scheduled(10)},
			wantAdmitted: true,
		},
		{
			name: "a running gang is not unschedulable", phase: volcanov1beta1.PodGroupRunning,
			conditions:   []volcanov1beta1.PodGroupCondition{unschedulable(10, msg)},
			wantAdmitted: true,
		},
		{
			name: "pending with a verdict", phase: volcanov1beta1.PodGroupPending,
			conditions:        []volcanov1beta1.PodGroupCondition{unschedulable(10, msg)},
			wantUnschedulable: msg,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pg := &volcanov1beta1.PodGroup{Status: volcanov1beta1.PodGroupStatus{Phase: tc.phase, Conditions: tc.conditions}}
			got := state(pg)
			if got.Admitted != tc.wantAdmitted || got.Unschedulable != tc.wantUnschedulable || got.Phase != string(tc.phase) {
				t.Errorf("state = %+v, want admitted %v, unschedulable %q", got, tc.wantAdmitted, tc.wantUnschedulable)
			}
		})
	}
}
