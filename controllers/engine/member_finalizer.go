package engine

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
)

// Members of a gang-restarted job carry kubeflowv1.GangMemberFinalizer from
// their creation, so that no member leaves unjudged.
//
// A member the operator deletes itself is released with its deletion: it
// deletes only what a stored decision (a restart, the job's verdict, a
// replacement counted in the status) or the spec (a scale-down, a suspend)
// calls for. A pass releases the members that someone else is deleting only
// after it has judged them and its status write has stored what it
// decided: a restart, the member replaced alone, or nothing (an event the
// policy does not restart on). A pass that stopped before judging them (its
// cache behind its own writes, a gang not admitted) or whose status write
// failed (a stale job) releases none, and a later pass judges them again.
// Every pod that is released is one whose loss is already accounted for,
// which is what the restart counts and "no member created twice in a
// generation" rest on.
//
// The cost is one write per member at its end (the release), and a
// member's object outlives its containers until the operator releases it:
// pods of a job deleted while no operator runs stay Terminating until one
// does (docs/jobs.md says how to release them by hand).

// releasePatch removes the finalizer by value, without a resourceVersion,
// as the Job controller removes its tracking finalizer: the release is
// idempotent, and the member's other fields may change meanwhile.
var releasePatch = client.RawPatch(types.StrategicMergePatchType,
	fmt.Appendf(nil, `{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, kubeflowv1.GangMemberFinalizer))

// trackMember puts the finalizer on a new pod of a gang-restarted job.
func trackMember(pod *corev1.Pod) {
	if !slices.Contains(pod.Finalizers, kubeflowv1.GangMemberFinalizer) {
		pod.Finalizers = append(pod.Finalizers, kubeflowv1.GangMemberFinalizer)
	}
}

func isTracked(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, kubeflowv1.GangMemberFinalizer)
}

// releaseMembers removes the finalizer from the pods that match and carry
// it.
func (r *Reconciler) releaseMembers(ctx context.Context, pods []*corev1.Pod, match func(*corev1.Pod) bool) error {
	for _, p := range pods {
		if !match(p) {
			continue
		}
		if err := r.release(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) release(ctx context.Context, pod *corev1.Pod) error {
	if !isTracked(pod) {
		return nil
	}
	if err := r.client.Patch(ctx, pod, releasePatch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release pod %s: %w", pod.Name, err)
	}
	return nil
}

// releaseOrphans releases every member of a job that is gone or being
// deleted: nothing is left to account its members' ends to, and the
// garbage collector (a foreground deletion waits for them) must be able
// to remove them.
func (r *Reconciler) releaseOrphans(ctx context.Context, job types.NamespacedName) error {
	var list corev1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingLabels{
		kubeflowv1.OperatorNameLabel: r.fw.ControllerName(),
		kubeflowv1.JobNameLabel:      job.Name,
	}); err != nil {
		return fmt.Errorf("list pods of deleted job: %w", err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	kind := r.fw.GroupVersionKind().Kind
	return r.releaseMembers(ctx, pods, func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.Kind == kind && ref.Name == job.Name
	})
}
