package status

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// QueueUsage is what a cycle found in one queue: its gangs' phases, as
// Compute set them, and what their bound and running pods request.
type QueueUsage struct {
	Pending, Inqueue, Running int32
	Allocated                 api.Resource
}

// Add counts one gang of the queue.
func (u *QueueUsage) Add(phase schedulingv1alpha1.PodGroupPhase, job *api.JobInfo) {
	switch phase {
	case schedulingv1alpha1.PodGroupPending:
		u.Pending++
	case schedulingv1alpha1.PodGroupInqueue:
		u.Inqueue++
	case schedulingv1alpha1.PodGroupRunning:
		u.Running++
	}
	for _, t := range job.Tasks {
		if t.Status.CountsTowardReady() {
			u.Allocated.Add(&t.Resreq)
		}
	}
}

// ComputeQueue is a Queue's status: the state it is acted on with (its
// spec's, Open if unset), its gangs by phase (Unknown, Failed and Finished
// gangs are in none of the counts), and what its gangs' placed pods
// request.
func ComputeQueue(q *schedulingv1alpha1.Queue, u QueueUsage) schedulingv1alpha1.QueueStatus {
	state := q.Spec.State
	if state == "" {
		state = schedulingv1alpha1.QueueStateOpen
	}
	return schedulingv1alpha1.QueueStatus{
		State:     state,
		Pending:   u.Pending,
		Inqueue:   u.Inqueue,
		Running:   u.Running,
		Allocated: resourceList(&u.Allocated),
	}
}

// resourceList converts back to the API's form, leaving out zeros and the
// pod count (a queue's capability never limits it).
func resourceList(r *api.Resource) corev1.ResourceList {
	rl := corev1.ResourceList{}
	if r.MilliCPU > 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI)
	}
	if r.Memory > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(r.Memory, resource.BinarySI)
	}
	if r.EphemeralStorage > 0 {
		rl[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(r.EphemeralStorage, resource.BinarySI)
	}
	for _, name := range r.ScalarNames() {
		if v := r.Scalars[name]; v > 0 {
			rl[name] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	if len(rl) == 0 {
		return nil
	}
	return rl
}
