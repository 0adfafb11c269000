package engine

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

func failedPod(reason string, exit map[string]int32) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Name = "job-worker-0"
	pod.Status.Phase = corev1.PodFailed
	pod.Status.Reason = reason
	for name, code := range exit {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:  name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}},
		})
	}
	return pod
}

func TestOnPodFailed(t *testing.T) {
	cases := []struct {
		name    string
		policy  kubeflowv1.RestartPolicy
		pod     *corev1.Pod
		want    failureAction
		wantMsg string
	}{
		{"Never fails the job", "Never", failedPod("", map[string]int32{"tensorflow": 137}), failJob, "restartPolicy Never"},
		{"OnFailure replaces an evicted pod", "OnFailure", failedPod("Evicted", nil), recreatePod, "Evicted"},
		{"Always replaces a lost pod", "Always", failedPod("NodeLost", nil), recreatePod, "NodeLost"},
		{"ExitCode 1 is permanent", "ExitCode", failedPod("", map[string]int32{"tensorflow": 1}), failJob, "permanent code 1"},
		{"ExitCode 127 is permanent", "ExitCode", failedPod("", map[string]int32{"tensorflow": 127}), failJob, "permanent code 127"},
		{"ExitCode 128 is retried", "ExitCode", failedPod("", map[string]int32{"tensorflow": 128}), recreatePod, "retryable code 128"},
		{"ExitCode 137 (SIGKILL, OOM) is retried", "ExitCode", failedPod("", map[string]int32{"tensorflow": 137}), recreatePod, "retryable code 137"},
		{"ExitCode reads the main container, not a sidecar", "ExitCode", failedPod("", map[string]int32{"sidecar": 1, "tensorflow": 143}), recreatePod, "retryable code 143"},
		{"ExitCode without an exit (evicted) is retried", "ExitCode", failedPod("Evicted", nil), recreatePod, "before container tensorflow exited"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := onPodFailed(tc.policy, tc.pod, "tensorflow")
			if got != tc.want {
				t.Errorf("action = %v, want %v (%s)", got, tc.want, msg)
			}
			if !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("message %q does not contain %q", msg, tc.wantMsg)
			}
		})
	}
}

func TestPodRestartPolicy(t *testing.T) {
	for policy, want := range map[kubeflowv1.RestartPolicy]corev1.RestartPolicy{
		"Always":    corev1.RestartPolicyAlways,
		"OnFailure": corev1.RestartPolicyOnFailure,
		"Never":     corev1.RestartPolicyNever,
		"ExitCode":  corev1.RestartPolicyNever,
	} {
		if got := podRestartPolicy(policy); got != want {
			t.Errorf("podRestartPolicy(%s) = %s, want %s", policy, got, want)
		}
	}
}
