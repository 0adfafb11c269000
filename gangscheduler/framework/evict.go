package framework

import (
	"fmt"
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Eviction is a pod to delete: a committed Statement.Evict. The task is
// Releasing in the session and still on Node: a deleted pod holds its
// node's resources until it is gone.
type Eviction struct {
	Task *api.TaskInfo
	Node string
	// Reason is for people, e.g. "Preempted by gang ns/name"; the scheduler
	// puts it on the pod's event.
	Reason string
}

// evictOp is one tentative eviction: what Discard needs to put it back.
type evictOp struct {
	task   *api.TaskInfo
	node   *api.NodeInfo
	prev   api.TaskStatus
	reason string
}

// Evict removes a task that occupies a node (Bound, Running, or already
// Releasing) from the session's accounting tentatively, so that later
// placements in the session see its resources and host ports free: the
// "what if it were gone" that preemption asks. The task becomes Releasing.
// Event handlers hear of it as a deallocation.
//
// Discard puts it back as it was. Commit records an eviction
// (Session.Evictions) for a task that was not already Releasing, and puts
// the task back on its node as Releasing: the pod keeps its resources
// until its deletion completes, and the next snapshot will count it the
// same way, so no action later in the session may place anything there.
// Handlers hear of that as an allocation.
func (s *Statement) Evict(task *api.TaskInfo, reason string) error {
	if s.closed {
		return ErrStatementClosed
	}
	switch task.Status {
	case api.Bound, api.Running, api.Releasing:
	default:
		// Allocated tasks are this session's own placements: undoing them
		// is Discard's job, not an eviction's.
		return fmt.Errorf("evict %s: task is %v, not Bound, Running or Releasing", task.Key(), task.Status)
	}
	node, ok := s.ssn.Nodes[task.NodeName]
	if !ok || node.Tasks[task.UID] != task {
		return fmt.Errorf("evict %s: not on a node of this session", task.Key())
	}
	if err := node.RemoveTask(task); err != nil {
		return err
	}
	s.evicts = append(s.evicts, evictOp{task: task, node: node, prev: task.Status, reason: reason})
	task.Status = api.Releasing
	s.ssn.fireDeallocate(task)
	return nil
}

// Evicted is the number of tentative evictions so far.
func (s *Statement) Evicted() int { return len(s.evicts) }

// Evictions returns every committed eviction so far, in commit order.
func (ssn *Session) Evictions() []Eviction {
	return slices.Clone(ssn.evictions)
}

// restoreEvictions puts every tentatively evicted task back on its node,
// newest first. With commit, a task keeps its Releasing status and its
// eviction is recorded; otherwise it gets its status back.
func (s *Statement) restoreEvictions(commit bool) {
	for i := len(s.evicts) - 1; i >= 0; i-- {
		op := s.evicts[i]
		// Evict took the task off this very node, and nothing else puts a
		// Releasing task back, so this cannot fail.
		if err := op.node.AddTask(op.task); err != nil {
			panic(fmt.Sprintf("statement: restore eviction: %v", err))
		}
		if !commit {
			op.task.Status = op.prev
		}
		s.ssn.fireAllocate(op.task)
	}
	if commit {
		for _, op := range s.evicts {
			if op.prev != api.Releasing { // already being deleted: nothing to do
				s.ssn.evictions = append(s.ssn.evictions, Eviction{Task: op.task, Node: op.node.Name, Reason: op.reason})
			}
		}
	}
	s.evicts = nil
}
