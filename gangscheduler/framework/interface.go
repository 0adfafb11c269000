// Package framework is the scheduling session: a snapshot, the plugins'
// answers at each extension point, statements that place tasks tentatively,
// and the per-equivalence-class predicate cache.
//
// A session is single-threaded and never calls the API server: what it
// decides leaves it as Decisions (task, node) from committed statements.
package framework

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Reason is a short, static code saying why a task does not fit a node
// ("node(s) had untolerated taint(s)"). Predicates return constants, never
// strings built per node: a failed fit on the hot path costs nothing, and
// per-class summaries count reasons instead of concatenating messages.
type Reason string

// ReasonInsufficient is the reason of a resource shortfall; Status.Resource
// names the resource.
const ReasonInsufficient Reason = "Insufficient"

// Status is a predicate's answer. It is a small value (no pointer, no error),
// so returning it does not allocate.
type Status struct {
	Fit    bool
	Reason Reason
	// Resource is the resource that is short, for ReasonInsufficient.
	Resource corev1.ResourceName
}

// Fit is the status of a task that fits.
var Fit = Status{Fit: true}

// Unfit returns the status of a task that does not fit, for reason.
func Unfit(reason Reason) Status { return Status{Reason: reason} }

// Insufficient returns the status of a task short of resource name.
func Insufficient(name corev1.ResourceName) Status {
	return Status{Reason: ReasonInsufficient, Resource: name}
}

func (s Status) String() string {
	switch {
	case s.Fit:
		return "Fit"
	case s.Resource != "":
		return fmt.Sprintf("%s %s", s.Reason, s.Resource)
	}
	return string(s.Reason)
}

// PredicateFn says whether task may go on node.
type PredicateFn func(task *api.TaskInfo, node *api.NodeInfo) Status

// NodeOrderFn scores node for task; higher is better. Scores of all
// plugins are summed. Integers keep the sum exact and the order
// deterministic.
type NodeOrderFn func(task *api.TaskInfo, node *api.NodeInfo) int64

// CompareFn orders two values: negative if l goes first, positive if r
// does, 0 if this function has no preference.
type CompareFn[T any] func(l, r T) int

// JobOrderFn orders jobs, TaskOrderFn tasks of one job, QueueOrderFn queues.
// A task order compares only what tasks derive from their pods (priority,
// age, role, ...), never session state: the session keeps each job's
// pending tasks in that order for as long as they stay pending
// (Session.PendingTasks).
type (
	JobOrderFn   = CompareFn[*api.JobInfo]
	TaskOrderFn  = CompareFn[*api.TaskInfo]
	QueueOrderFn = CompareFn[*api.QueueInfo]
)

// JobReadyFn says whether a job's placed tasks make it ready to bind (the
// gang rule).
type JobReadyFn func(job *api.JobInfo) bool

// JobValidFn says whether a job is worth trying at all; nil means valid.
type JobValidFn func(job *api.JobInfo) *ValidateResult

// ValidateResult says why a job is not valid.
type ValidateResult struct {
	Reason  string
	Message string
}

// Plugin answers questions at extension points. OnSessionOpen registers its
// functions on the session (and may precompute per-session state).
type Plugin interface {
	Name() string
	OnSessionOpen(ssn *Session)
}

// Action is one step of a scheduling cycle (enqueue, allocate, backfill,
// preempt), run in order on one session.
type Action interface {
	Name() string
	Execute(ssn *Session)
}

// Decision is a placement to bind: the task goes to the node. Only
// committed statements produce decisions.
type Decision struct {
	Task *api.TaskInfo
	Node string
	// Labels go on the pod with its bind (the pods/binding subresource
	// merges a Binding's labels into the pod): where a topology policy put
	// it. Nil for none.
	Labels map[string]string
}
