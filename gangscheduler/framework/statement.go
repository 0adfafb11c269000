package framework

import (
	"errors"
	"fmt"
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Statement groups tentative placements so they stand or fall together: a
// gang's tasks are allocated one by one in a statement, then the whole
// statement is committed (the gang is ready) or discarded (it is not, and
// every resource it took goes back for the next job).
//
// Allocate changes the session's accounting at once, so later placements in
// the same session see the node as fuller. A statement is used once: after
// Commit or Discard it accepts nothing more.
type Statement struct {
	ssn *Session
	ops []Decision
	// evicts are tentative evictions (evict.go).
	evicts []evictOp
	closed bool
}

// ErrStatementClosed is returned by Allocate after Commit or Discard.
var ErrStatementClosed = errors.New("statement already committed or discarded")

// Allocate places a pending task on node tentatively: the node takes the
// task's resources and ports, the task becomes Allocated there. It does not
// check predicates; the caller chose the node with them.
func (s *Statement) Allocate(task *api.TaskInfo, node *api.NodeInfo) error {
	return s.AllocateLabelled(task, node, nil)
}

// AllocateLabelled is Allocate with labels for the pod's bind (see
// Decision.Labels).
func (s *Statement) AllocateLabelled(task *api.TaskInfo, node *api.NodeInfo, labels map[string]string) error {
	if s.closed {
		return ErrStatementClosed
	}
	if task.Status != api.Pending {
		return fmt.Errorf("allocate %s: task is %v, not Pending", task.Key(), task.Status)
	}
	if n, ok := s.ssn.Nodes[node.Name]; !ok || n != node {
		return fmt.Errorf("allocate %s: node %s is not in this session", task.Key(), node.Name)
	}
	task.NodeName = node.Name
	task.Status = api.Allocated
	if err := node.AddTask(task); err != nil {
		task.NodeName, task.Status = "", api.Pending
		return err
	}
	s.ssn.nodeChanged(node)
	s.ops = append(s.ops, Decision{Task: task, Node: node.Name, Labels: labels})
	s.ssn.fireAllocate(task)
	return nil
}

// Discard undoes every placement of the statement, newest first, then
// every eviction.
func (s *Statement) Discard() {
	if s.closed {
		return
	}
	s.closed = true
	for i := len(s.ops) - 1; i >= 0; i-- {
		op := s.ops[i]
		// The node and the task were checked by Allocate and nothing else
		// moves a task out of Allocated, so this cannot fail.
		node := s.ssn.Nodes[op.Node]
		if err := node.RemoveTask(op.Task); err != nil {
			panic(fmt.Sprintf("statement discard: %v", err))
		}
		s.ssn.nodeChanged(node)
		op.Task.NodeName, op.Task.Status = "", api.Pending
		s.ssn.fireDeallocate(op.Task)
	}
	s.ops = nil
	s.restoreEvictions(false)
}

// Commit keeps the placements and returns them as decisions to bind, in the
// order they were made. The session also keeps them (Session.Bindings), and
// the evictions (Session.Evictions; see Evict).
func (s *Statement) Commit() []Decision {
	if s.closed {
		return nil
	}
	s.closed = true
	s.ssn.bindings = append(s.ssn.bindings, s.ops...)
	s.restoreEvictions(true)
	if s.ssn.onCommit != nil && len(s.ops) > 0 {
		s.ssn.onCommit(slices.Clone(s.ops))
	}
	return slices.Clone(s.ops)
}

// Placements are the statement's placements so far, oldest first; the
// caller must not change them.
func (s *Statement) Placements() []Decision { return s.ops }

// Len is the number of placements so far.
func (s *Statement) Len() int { return len(s.ops) }
