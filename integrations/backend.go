// Package integrations holds the gang backends behind one interface: the
// PodGroup each job gets, how its pods are marked for the backend's
// scheduler, and what the backend says back. The operator selects one with
// --gang-scheduler-name.
package integrations

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// Backend places a job's pods as one gang through a scheduler's PodGroup.
type Backend interface {
	// Name is the --gang-scheduler-name value that selects the backend.
	Name() string
	// SchedulerName is the spec.schedulerName the job's pods get.
	SchedulerName() string
	// PodGroupType is an empty PodGroup of the backend, for watches.
	PodGroupType() client.Object
	// CheckInstalled fails, naming what to install, when the cluster does
	// not serve the backend's PodGroup. The message does not name the flag
	// or annotation that chose the backend; the caller adds that.
	CheckInstalled(mapper meta.RESTMapper) error
	// SyncPodGroup creates or updates the job's PodGroup (named after the
	// job, controlled by owner) from spec and reports the backend's verdict.
	SyncPodGroup(ctx context.Context, c client.Client, owner metav1.Object, ref metav1.OwnerReference, spec GangSpec) (GangState, error)
	// DeletePodGroup removes the job's PodGroup, if any, so that a finished
	// or suspended job holds no queue capacity.
	DeletePodGroup(ctx context.Context, c client.Client, owner metav1.Object) error
	// DecoratePod marks a pod as a member of the job's gang with a role and
	// sends it to SchedulerName, unless the pod chose a scheduler itself.
	DecoratePod(pod *corev1.Pod, group, role string)
}

// Companions is a Backend that keeps objects of more kinds than its
// PodGroup per job (kube-scheduler's Workload), all owned by the job, so
// that the operator watches them too and a deleted one is made again.
type Companions interface {
	CompanionTypes() []client.Object
}

// TopologyReader is a Backend whose verdict on a job's topology policy
// reads the Topology object the policy names (Volcano's keeps a rule only
// at a level that Topology has): the operator looks at the jobs that name
// a Topology again when it changes, so that a job refused for a level the
// Topology lacked runs once the level is added.
type TopologyReader interface {
	ReadsTopology() bool
}

// ReadsTopology reports whether b's verdict on a job reads its Topology.
func ReadsTopology(b Backend) bool {
	r, ok := b.(TopologyReader)
	return ok && r.ReadsTopology()
}

// OwnedTypes are every kind of object b keeps per job: its PodGroup first.
func OwnedTypes(b Backend) []client.Object {
	types := []client.Object{b.PodGroupType()}
	if c, ok := b.(Companions); ok {
		types = append(types, c.CompanionTypes()...)
	}
	return types
}

// GangState is what the backend says of a job's PodGroup.
type GangState struct {
	// Admitted is true once the backend has admitted the gang (Volcano's
	// Inqueue or later; backends without admission always admit). The
	// engine creates no pods before, unless the operator runs with
	// --wait-for-podgroup-admission=false.
	Admitted bool
	// Phase is the PodGroup's phase in the backend's words.
	Phase string
	// Unschedulable explains, when the backend says so, why the gang does
	// not run yet ("worker: 0/8 nodes have 4 free nvidia.com/gpu"). The
	// engine shows it on the job verbatim, roles and all.
	Unschedulable string
}

// WaitError is SyncPodGroup's answer while the backend cannot write the
// job's PodGroup yet, for a reason outside the job that will pass (the
// HyperNodes a required topology rule needs are not generated yet). The
// engine creates no pod, shows the message on the job's GangScheduled
// condition, and looks again after RetryAfter.
type WaitError struct {
	Message    string
	RetryAfter time.Duration
}

func (e *WaitError) Error() string { return e.Message }

// The pod annotations every PodGroup-based backend reads: the Coscheduling
// KEP's group name, and Volcano's task-spec, which keys the scheduler's
// predicate cache by role so a CPU-only master never shares answers with
// its GPU workers.
const (
	GroupNameAnnotation = schedulingv1alpha1.PodGroupNameAnnotation
	TaskSpecAnnotation  = schedulingv1alpha1.TaskSpecAnnotation
)

// Annotate sets the group-name and task-spec annotations on a pod.
func Annotate(pod *corev1.Pod, group, role string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[GroupNameAnnotation] = group
	pod.Annotations[TaskSpecAnnotation] = role
}
