package api

import "k8s.io/apimachinery/pkg/types"

// TaskID identifies a task: the pod's UID.
type TaskID types.UID

// JobID identifies a job (one PodGroup): "namespace/name".
type JobID string

// NewJobID returns the JobID of the PodGroup namespace/name.
func NewJobID(namespace, name string) JobID {
	return JobID(namespace + "/" + name)
}

// QueueID identifies a queue by name.
type QueueID string

// TaskRoleAnnotation holds a pod's role in its gang (its replica type:
// Master, Worker, PS, Launcher, ...). The operator sets it on every pod; the
// name is Volcano's, so pods read the same under either scheduler.
const TaskRoleAnnotation = "volcano.sh/task-spec"

// TaskStatus is where a task stands in the scheduling life cycle.
type TaskStatus int

const (
	// Pending: not yet on a node; the scheduler may place it.
	Pending TaskStatus = iota
	// Allocated: placed on a node by this session, not yet bound.
	Allocated
	// Bound: the pod has a node (spec.nodeName) but is not running yet.
	Bound
	// Running: the pod runs on its node.
	Running
	// Succeeded: the pod completed; it holds no node resources.
	Succeeded
	// Failed: the pod failed; it holds no node resources.
	Failed
	// Releasing: the pod is being deleted but still holds its node's
	// resources until it is gone.
	Releasing
	// Gated: not on a node, and spec.schedulingGates is not empty. The API
	// server refuses to bind such a pod, so no action places it, and it
	// does not count toward its gang's minimum until its last gate is
	// removed (gates can only be removed after creation, never added).
	Gated
)

var taskStatusNames = [...]string{"Pending", "Allocated", "Bound", "Running", "Succeeded", "Failed", "Releasing", "Gated"}

func (s TaskStatus) String() string {
	if s < 0 || int(s) >= len(taskStatusNames) {
		return "Unknown"
	}
	return taskStatusNames[s]
}

// OccupiesNode reports whether a task in this status holds resources on its
// node. Terminal pods do not (kube-scheduler ignores them too); terminating
// ones do until they are gone.
func (s TaskStatus) OccupiesNode() bool {
	switch s {
	case Allocated, Bound, Running, Releasing:
		return true
	}
	return false
}

// CountsTowardReady reports whether a task in this status counts toward its
// gang's minMember: it has, or is about to get, a node and is not leaving.
func (s TaskStatus) CountsTowardReady() bool {
	switch s {
	case Allocated, Bound, Running:
		return true
	}
	return false
}

// CountsTowardMinimum reports whether a task in this status counts toward
// its gang's minMember and minTaskMember: placed (CountsTowardReady) or
// done. A member that succeeded has done its part; a gang whose other
// member is recreated needs only that one placed, as Volcano counts it.
// Succeeded tasks hold no node, so what a gang occupies is still
// CountsTowardReady's.
func (s TaskStatus) CountsTowardMinimum() bool {
	return s == Succeeded || s.CountsTowardReady()
}

// CanBecomeReady reports whether a task in this status counts now or could
// count after this scheduler places it. A gang is only worth trying when
// enough of its tasks can.
func (s TaskStatus) CanBecomeReady() bool {
	return s == Pending || s.CountsTowardMinimum()
}

// JobPhase is a PodGroup's phase, in the PodGroup API's words.
type JobPhase string

// The phases the scheduler reads and writes.
const (
	JobPending JobPhase = "Pending"
	JobInqueue JobPhase = "Inqueue"
	JobRunning JobPhase = "Running"
	JobUnknown JobPhase = "Unknown"
)
