package kubenative

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/troupe-ml/troupe/integrations"
)

func TestState(t *testing.T) {
	initially := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: schedulingv1beta1.PodGroupInitiallyScheduled, Status: status, Reason: reason, Message: msg}}
	}
	const msg = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
	cases := []struct {
		name       string
		conditions []metav1.Condition
		want       integrations.GangState
	}{
		{name: "new: kube-scheduler has not tried it", want: integrations.GangState{Admitted: true, Phase: "Pending"}},
		{
			name:       "unschedulable: its words",
			conditions: initially(metav1.ConditionFalse, schedulingv1beta1.PodGroupReasonUnschedulable, msg),
			want:       integrations.GangState{Admitted: true, Phase: "Unschedulable", Unschedulable: msg},
		},
		{
			name:       "a scheduler error is shown too",
			conditions: initially(metav1.ConditionFalse, schedulingv1beta1.PodGroupReasonSchedulerError, "bad affinity"),
			want:       integrations.GangState{Admitted: true, Phase: "SchedulerError", Unschedulable: "bad affinity"},
		},
		{
			name:       "scheduled, for good",
			conditions: initially(metav1.ConditionTrue, "Scheduled", ""),
			want:       integrations.GangState{Admitted: true, Phase: "Scheduled"},
		},
		{
			name:       "a disruption target alone says nothing of placement",
			conditions: []metav1.Condition{{Type: schedulingv1beta1.DisruptionTarget, Status: metav1.ConditionTrue, Reason: "PreemptionByScheduler"}},
			want:       integrations.GangState{Admitted: true, Phase: "Pending"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := State(&schedulingv1beta1.PodGroup{Status: schedulingv1beta1.PodGroupStatus{Conditions: tc.conditions}})
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecoratePod(t *testing.T) {
	cases := []struct {
		name          string
		schedulerName string
		wantScheduler string
	}{
		{name: "unset goes to default-scheduler", wantScheduler: corev1.DefaultSchedulerName},
		{name: "default-scheduler stays", schedulerName: corev1.DefaultSchedulerName, wantScheduler: corev1.DefaultSchedulerName},
		{name: "a user's own scheduler is kept", schedulerName: "mine", wantScheduler: "mine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SchedulerName: tc.schedulerName}}
			Backend{}.DecoratePod(pod, "job", "worker")
			if pod.Spec.SchedulerName != tc.wantScheduler {
				t.Errorf("schedulerName %q, want %q", pod.Spec.SchedulerName, tc.wantScheduler)
			}
			if got := pod.Spec.SchedulingGroup; got == nil || ptr.Deref(got.PodGroupName, "") != "job" {
				t.Errorf("schedulingGroup %+v, want podGroupName job", got)
			}
			if pod.Annotations[integrations.TaskSpecAnnotation] != "worker" {
				t.Errorf("annotations %v, want the role in %s", pod.Annotations, integrations.TaskSpecAnnotation)
			}
		})
	}
}
