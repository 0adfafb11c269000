package framework

import (
	"fmt"
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Eviction is a pod to delete: a committed Statement.Evict or Reclaim. The
// task is Releasing in the session and still on Node: a deleted pod holds
// its node's resources until it is gone.
type Eviction struct {
	Task *api.TaskInfo
	Node string
	// Cause says why the pod goes: preemption or a partial gang's reclaim.
	Cause EvictionCause
	// Reason is for people, e.g. "Preempted by gang ns/name"; the scheduler
	// puts it on the pod's event.
	Reason string
}

// EvictionCause is why the scheduler deletes a pod.
type EvictionCause int

const (
	// CausePreemption: the pod's gang makes room for a gang of higher
	// priority (the preempt action).
	CausePreemption EvictionCause = iota
	// CauseReclaim: the pod's gang was left partial and could not be
	// completed (PartialGangs), or its other members were preempted.
	CauseReclaim
)

// evictOp is one tentative eviction: what Discard needs to put it back.
type evictOp struct {
	task *api.TaskInfo
	// node is nil for a task on a node the session does not have (deleted
	// since it was bound): it holds no room the session counts.
	node   *api.NodeInfo
	prev   api.TaskStatus
	cause  EvictionCause
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
	return s.evict(task, CausePreemption, reason)
}

// Reclaim is Evict for a member of a partial gang (CauseReclaim). Unlike a
// preemption victim, the task may be bound to a node the session does not
// have (deleted since): it is deleted all the same, and frees no room.
func (s *Statement) Reclaim(task *api.TaskInfo, reason string) error {
	return s.evict(task, CauseReclaim, reason)
}

func (s *Statement) evict(task *api.TaskInfo, cause EvictionCause, reason string) error {
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
	node, known := s.ssn.Nodes[task.NodeName]
	switch {
	case known && node.Tasks[task.UID] != task:
		return fmt.Errorf("evict %s: not on its node in this session", task.Key())
	case !known && cause != CauseReclaim:
		return fmt.Errorf("evict %s: not on a node of this session", task.Key())
	case known:
		if err := node.RemoveTask(task); err != nil {
			return err
		}
		s.ssn.nodeChanged(node)
	default:
		node = nil
	}
	s.evicts = append(s.evicts, evictOp{task: task, node: node, prev: task.Status, cause: cause, reason: reason})
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
		if op.node != nil {
			if err := op.node.AddTask(op.task); err != nil {
				panic(fmt.Sprintf("statement: restore eviction: %v", err))
			}
			s.ssn.nodeChanged(op.node)
		}
		if !commit {
			op.task.Status = op.prev
		}
		s.ssn.fireAllocate(op.task)
	}
	if commit {
		for _, op := range s.evicts {
			if op.prev != api.Releasing { // already being deleted: nothing to do
				s.ssn.evictions = append(s.ssn.evictions, Eviction{Task: op.task, Node: op.task.NodeName, Cause: op.cause, Reason: op.reason})
			}
		}
	}
	s.evicts = nil
}
