package engine

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

func TestSetCondition(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	cases := []struct {
		name string
		// steps are applied in order, each at t0 except the last at t1.
		steps []kubeflowv1.JobConditionType
		// want maps each condition type to its status after the steps.
		want map[kubeflowv1.JobConditionType]corev1.ConditionStatus
	}{
		{
			name:  "restarting clears running",
			steps: []kubeflowv1.JobConditionType{ConditionRunning, ConditionRestarting},
			want:  map[kubeflowv1.JobConditionType]corev1.ConditionStatus{ConditionRunning: corev1.ConditionFalse, ConditionRestarting: corev1.ConditionTrue},
		},
		{
			name:  "running again clears restarting",
			steps: []kubeflowv1.JobConditionType{ConditionRunning, ConditionRestarting, ConditionRunning},
			want:  map[kubeflowv1.JobConditionType]corev1.ConditionStatus{ConditionRunning: corev1.ConditionTrue, ConditionRestarting: corev1.ConditionFalse},
		},
		{
			name:  "success clears running",
			steps: []kubeflowv1.JobConditionType{ConditionCreated, ConditionRunning, ConditionSucceeded},
			want: map[kubeflowv1.JobConditionType]corev1.ConditionStatus{
				ConditionCreated: corev1.ConditionTrue, ConditionRunning: corev1.ConditionFalse, ConditionSucceeded: corev1.ConditionTrue,
			},
		},
		{
			name:  "suspension clears running and restarting",
			steps: []kubeflowv1.JobConditionType{ConditionRestarting, ConditionSuspended},
			want:  map[kubeflowv1.JobConditionType]corev1.ConditionStatus{ConditionRestarting: corev1.ConditionFalse, ConditionSuspended: corev1.ConditionTrue},
		},
		{
			name:  "a condition that never held is not added when another excludes it",
			steps: []kubeflowv1.JobConditionType{ConditionFailed},
			want:  map[kubeflowv1.JobConditionType]corev1.ConditionStatus{ConditionFailed: corev1.ConditionTrue},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := &kubeflowv1.JobStatus{}
			for i, step := range tc.steps {
				at := t0
				if i == len(tc.steps)-1 {
					at = t1
				}
				setCondition(status, step, corev1.ConditionTrue, string(step)+"Reason", "msg", at)
			}
			if len(status.Conditions) != len(tc.want) {
				t.Fatalf("conditions = %+v, want exactly %v", status.Conditions, tc.want)
			}
			for ctype, want := range tc.want {
				c := findCondition(status, ctype)
				if c == nil || c.Status != want {
					t.Errorf("%s = %+v, want %s", ctype, c, want)
				}
			}
		})
	}
}

func TestSetConditionTimes(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	status := &kubeflowv1.JobStatus{}
	setCondition(status, ConditionRunning, corev1.ConditionTrue, "R", "first", t0)
	setCondition(status, ConditionRunning, corev1.ConditionTrue, "R", "second", t1)
	c := findCondition(status, ConditionRunning)
	if !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("transition time moved without a status change: %v", c.LastTransitionTime)
	}
	if !c.LastUpdateTime.Equal(&t1) || c.Message != "second" {
		t.Errorf("update not recorded: %+v", c)
	}
	setCondition(status, ConditionRunning, corev1.ConditionFalse, "R", "second", t1)
	if c := findCondition(status, ConditionRunning); !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("transition time did not move on a status change: %v", c.LastTransitionTime)
	}
}

func TestStateOf(t *testing.T) {
	type cond struct {
		ctype  kubeflowv1.JobConditionType
		status corev1.ConditionStatus
	}
	cases := []struct {
		name  string
		conds []cond
		want  kubeflowv1.JobState
	}{
		{name: "nothing yet", want: ""},
		{name: "created", conds: []cond{{ConditionCreated, corev1.ConditionTrue}}, want: kubeflowv1.JobStateCreated},
		{
			name:  "a gang not placed is pending, though GangScheduled is the last condition",
			conds: []cond{{ConditionCreated, corev1.ConditionTrue}, {ConditionGangScheduled, corev1.ConditionFalse}},
			want:  kubeflowv1.JobStateGangPending,
		},
		{
			name:  "running",
			conds: []cond{{ConditionCreated, corev1.ConditionTrue}, {ConditionGangScheduled, corev1.ConditionTrue}, {ConditionRunning, corev1.ConditionTrue}},
			want:  kubeflowv1.JobStateRunning,
		},
		{
			name:  "running with a member lost: still running",
			conds: []cond{{ConditionCreated, corev1.ConditionTrue}, {ConditionRunning, corev1.ConditionTrue}, {ConditionGangScheduled, corev1.ConditionFalse}},
			want:  kubeflowv1.JobStateRunning,
		},
		{
			name:  "restarting",
			conds: []cond{{ConditionCreated, corev1.ConditionTrue}, {ConditionRunning, corev1.ConditionFalse}, {ConditionRestarting, corev1.ConditionTrue}},
			want:  kubeflowv1.JobStateRestarting,
		},
		{
			name:  "suspended",
			conds: []cond{{ConditionCreated, corev1.ConditionTrue}, {ConditionSuspended, corev1.ConditionTrue}},
			want:  kubeflowv1.JobStateSuspended,
		},
		{
			name:  "failed wins over everything",
			conds: []cond{{ConditionRunning, corev1.ConditionTrue}, {ConditionFailed, corev1.ConditionTrue}, {ConditionSucceeded, corev1.ConditionTrue}},
			want:  kubeflowv1.JobStateFailed,
		},
		{
			name:  "succeeded",
			conds: []cond{{ConditionCreated, corev1.ConditionTrue}, {ConditionSucceeded, corev1.ConditionTrue}, {ConditionGangScheduled, corev1.ConditionFalse}},
			want:  kubeflowv1.JobStateSucceeded,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &kubeflowv1.JobStatus{}
			for _, c := range tc.conds {
				st.Conditions = append(st.Conditions, kubeflowv1.JobCondition{Type: c.ctype, Status: c.status})
			}
			if got := stateOf(st); got != tc.want {
				t.Errorf("stateOf = %q, want %q", got, tc.want)
			}
		})
	}
}
