package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// failureAction is what the replica restart policy makes of a failed pod.
type failureAction int

const (
	// failJob: the failure is permanent; the job fails.
	failJob failureAction = iota
	// recreatePod: delete the pod and create it again (counts against
	// backoffLimit).
	recreatePod
)

// IsRetryableExitCode follows upstream's ExitCode policy: codes 1-127 are
// the program's own verdict and permanent; 128 and above mean the process
// was killed by a signal (OOM, preemption, node shutdown) and are retried.
func IsRetryableExitCode(code int32) bool { return code >= 128 }

// onPodFailed decides what happens to a pod in phase Failed, and says why.
func onPodFailed(policy kubeflowv1.RestartPolicy, pod *corev1.Pod, mainContainer string) (failureAction, string) {
	switch policy {
	case kubeflowv1.RestartPolicy("Always"), kubeflowv1.RestartPolicy("OnFailure"):
		// The kubelet restarts containers itself; a failed pod means the
		// pod as a whole was lost (evicted, node lost, deadline).
		return recreatePod, fmt.Sprintf("pod %s failed (%s) under restartPolicy %s", pod.Name, podFailureReason(pod), policy)
	case kubeflowv1.RestartPolicy("ExitCode"):
		code, ok := exitCode(pod, mainContainer)
		if !ok {
			return recreatePod, fmt.Sprintf("pod %s failed before container %s exited (%s)", pod.Name, mainContainer, podFailureReason(pod))
		}
		if IsRetryableExitCode(code) {
			return recreatePod, fmt.Sprintf("pod %s: container %s exited with retryable code %d", pod.Name, mainContainer, code)
		}
		return failJob, fmt.Sprintf("pod %s: container %s exited with permanent code %d", pod.Name, mainContainer, code)
	default:
		return failJob, fmt.Sprintf("pod %s failed (%s) under restartPolicy Never", pod.Name, podFailureReason(pod))
	}
}

func podFailureReason(pod *corev1.Pod) string {
	if pod.Status.Reason != "" {
		return pod.Status.Reason
	}
	return "Failed"
}
