package testutil

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// envtest runs no kubelet: these helpers play its part. Each reads the pod
// afresh, changes its status and writes it through the status subresource,
// retrying on conflicts with the operator's own writes. The pod passed in
// is updated to what was written.

func updatePodStatus(ctx context.Context, c client.Client, pod *corev1.Pod, mutate func(*corev1.Pod)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		mutate(pod)
		return c.Status().Update(ctx, pod)
	})
}

func containerStatuses(pod *corev1.Pod, state func() corev1.ContainerState) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, ctr := range pod.Spec.Containers {
		out = append(out, corev1.ContainerStatus{Name: ctr.Name, Image: ctr.Image, State: state()})
	}
	return out
}

// SetPodPhase moves a pod to Running, Pending or Succeeded, with container
// statuses to match.
func SetPodPhase(ctx context.Context, c client.Client, pod *corev1.Pod, phase corev1.PodPhase) error {
	return updatePodStatus(ctx, c, pod, func(p *corev1.Pod) {
		p.Status.Phase = phase
		p.Status.ContainerStatuses = containerStatuses(p, func() corev1.ContainerState {
			switch phase {
			case corev1.PodRunning:
				return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now())}}
			case corev1.PodSucceeded:
				return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
			default:
				return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			}
		})
	})
}

// FailPod moves a pod to Failed with every container exited with code.
func FailPod(ctx context.Context, c client.Client, pod *corev1.Pod, code int32) error {
	return updatePodStatus(ctx, c, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = containerStatuses(p, func() corev1.ContainerState {
			return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}
		})
	})
}

// EvictPod moves a pod to Failed as the kubelet does on eviction: reason
// Evicted and no container exit code.
func EvictPod(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	return updatePodStatus(ctx, c, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "Evicted"
		p.Status.Message = "The node was low on resource: memory."
		p.Status.ContainerStatuses = nil
	})
}

// RestartContainers records n in-place restarts of a running pod's
// containers, as the kubelet does under restartPolicy OnFailure or Always.
func RestartContainers(ctx context.Context, c client.Client, pod *corev1.Pod, n int32) error {
	return updatePodStatus(ctx, c, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = containerStatuses(p, func() corev1.ContainerState {
			return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now())}}
		})
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].RestartCount = n
		}
	})
}

// MarkUnschedulable records on a pending pod, as kube-scheduler does, that
// it fits no node: PodScheduled False, reason Unschedulable, with msg.
func MarkUnschedulable(ctx context.Context, c client.Client, pod *corev1.Pod, msg string) error {
	return updatePodStatus(ctx, c, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: msg,
			LastTransitionTime: metav1.Now(),
		}}
	})
}

// BindPod places a pod on a node through the binding subresource, as a
// scheduler does. A bound pod stays Terminating when deleted until
// something confirms its end: envtest has no kubelet to do it.
func BindPod(ctx context.Context, c client.Client, pod *corev1.Pod, node string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := c.SubResource("binding").Create(ctx, pod, binding); err != nil {
		return err
	}
	return c.Get(ctx, client.ObjectKeyFromObject(pod), pod)
}

// SetNodeReady writes a node's Ready condition as its kubelet (true) or
// the node lifecycle controller (false: the kubelet stopped posting
// status) would, with the transition at since.
func SetNodeReady(ctx context.Context, c client.Client, node *corev1.Node, ready bool, since time.Time) error {
	status, reason := corev1.ConditionTrue, "KubeletReady"
	if !ready {
		status, reason = corev1.ConditionUnknown, "NodeStatusUnknown"
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		var conds []corev1.NodeCondition
		for _, cond := range node.Status.Conditions {
			if cond.Type != corev1.NodeReady {
				conds = append(conds, cond)
			}
		}
		node.Status.Conditions = append(conds, corev1.NodeCondition{
			Type: corev1.NodeReady, Status: status, Reason: reason,
			LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
		})
		return c.Status().Update(ctx, node)
	})
}
