package framework

import (
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// ReasonHeld is the fit reason of a node that would have the room but
// holds it for a gang that waits longer (Hold).
const ReasonHeld Reason = "node(s) held for a gang that waits longer"

// HoldFn says whether a job that cannot be placed now is one that may
// hold nodes (Session.MayHold).
type HoldFn func(job *api.JobInfo) bool

// AddHoldFn registers a hold rule: a job may hold nodes when every rule
// agrees, and none does without one.
func (ssn *Session) AddHoldFn(fn HoldFn) { ssn.holdFns = append(ssn.holdFns, fn) }

// SetHoldLimit sets the most jobs that hold nodes in the session (1
// unless set).
func (ssn *Session) SetHoldLimit(n int) { ssn.holdLimit = n }

// HoldLimit is the most jobs that may hold nodes in the session.
func (ssn *Session) HoldLimit() int {
	if ssn.holdLimit < 1 {
		return 1
	}
	return ssn.holdLimit
}

// MayHold says whether job, which could not be placed, may hold the nodes
// it lacks from the jobs after it in this session: it holds some already,
// or every hold rule agrees and fewer than HoldLimit jobs hold. Without a
// hold rule (the reservation plugin) no job may. Asking takes nothing:
// only Hold counts against the limit.
func (ssn *Session) MayHold(job *api.JobInfo) bool {
	if len(ssn.holdFns) == 0 {
		return false
	}
	if _, ok := ssn.holds[job.UID]; ok {
		return true
	}
	if len(ssn.holds) >= ssn.HoldLimit() {
		return false
	}
	for _, fn := range ssn.holdFns {
		if !fn(job) {
			return false
		}
	}
	return true
}

// Hold keeps nodes for job for the rest of the session: what is idle on
// each is no longer there for any other task (api.NodeInfo.Hold), so the
// jobs that come after job in the session, which are younger or of lower
// priority, cannot take the room it waits for. A node held already stays
// with its holder. Nothing is written anywhere: the next session starts
// from the snapshot, where the job, if it still waits, comes before the
// others again and holds again.
func (ssn *Session) Hold(job *api.JobInfo, nodes []*api.NodeInfo) {
	for _, n := range nodes {
		if n.HeldFor != "" {
			continue
		}
		n.Hold(job.UID)
		ssn.nodeChanged(n)
		if ssn.holds == nil {
			ssn.holds = map[api.JobID][]*api.NodeInfo{}
		}
		ssn.holds[job.UID] = append(ssn.holds[job.UID], n)
	}
}

// Reserve keeps, for the rest of the session, the room a gang counts on
// that is free already while the rest of it is still leaving: on each
// placement's node, its task's requests as far as they are idle, and its
// host ports (api.NodeInfo.Reserve), and the same amount in the gang's
// queue (the event handlers are told of an allocation of it, so that the
// queue-share plugins count it; the part still held by leaving pods is
// counted there already, as theirs). No other task is placed on that
// room, and the tasks placed after it are checked as if the task were on
// its node (api.NodeInfo.AddStandIn): a pod its required anti-affinity
// selects, or whose own selects it, stays off. Nothing is written
// anywhere; the next session reserves again if the gang still waits.
func (ssn *Session) Reserve(placements []Decision) {
	for _, d := range placements {
		node := ssn.Nodes[d.Node]
		if node == nil {
			continue
		}
		taken := node.Reserve(&d.Task.Resreq, d.Task.HostPorts)
		// The task's stand-in, on the node and asking what was taken:
		// the handlers count it, the queue-share ones in the queue, the
		// ones of the rules between pods (affinity, spread, volumes) on
		// the node, for the tasks placed after it.
		standIn := d.Task.StandInOn(node.Name, taken)
		node.AddStandIn(standIn)
		ssn.nodeChanged(node)
		ssn.reserved = append(ssn.reserved, node)
		ssn.reservedTasks = append(ssn.reservedTasks, standIn)
		ssn.fireAllocate(standIn)
	}
}

// ReleaseHolds gives every held or reserved node its idle resources back,
// for what reads the nodes after the decisions (diagnoses): a holder is
// not short of what it holds, and a gang kept off a held node is told so
// by its own finding. Holds keeps listing what was held.
func (ssn *Session) ReleaseHolds() {
	for _, nodes := range ssn.holds {
		for _, n := range nodes {
			ssn.release(n)
		}
	}
	for _, n := range ssn.reserved {
		ssn.release(n)
	}
	for _, t := range ssn.reservedTasks {
		ssn.fireDeallocate(t)
	}
	ssn.reserved, ssn.reservedTasks = nil, nil
}

func (ssn *Session) release(n *api.NodeInfo) {
	if n.HeldFor != "" || n.Reserved() {
		n.Unhold()
		ssn.nodeChanged(n)
	}
}

// Holds returns the nodes each job holds in this session, by name, sorted.
func (ssn *Session) Holds() map[api.JobID][]string {
	out := make(map[api.JobID][]string, len(ssn.holds))
	for id, nodes := range ssn.holds {
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		out[id] = slices.Sorted(slices.Values(names))
	}
	return out
}

// StaticFit says whether task could run on node as far as the predicates
// that do not read the node's load tell: its selectors, affinity to
// nodes, taints. A node where it does could take it once enough is idle.
func (ssn *Session) StaticFit(cls *Class, task *api.TaskInfo, node *api.NodeInfo) bool {
	return ssn.staticStatus(cls, task, node).Fit
}

// heldFrom turns a status of a node that task does not fit because the
// node is held for another job into ReasonHeld, for diagnoses.
func heldFrom(task *api.TaskInfo, node *api.NodeInfo, s Status) Status {
	if !s.Fit && s.Reason == ReasonInsufficient && node.HeldFor != "" && node.HeldFor != task.Job {
		return Unfit(ReasonHeld)
	}
	return s
}
