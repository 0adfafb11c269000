// Package actions holds the steps of a scheduling cycle. Each implements
// framework.Action and runs on a session, in this order (Pipeline):
//
//   - enqueue admits Pending gangs whose whole minimal gang fits node by
//     node and within their queue's share and capability;
//   - allocate places admitted gangs all-or-nothing;
//   - backfill places pods that request nothing where they fit, without
//     ever forming a gang.
//
// Preempt (optional, not in Pipeline) evicts whole lower-priority gangs for
// a starving gang; it goes after enqueue and before allocate.
package actions

import (
	"fmt"
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Reasons allocate records (framework.Unschedulable), in the PodGroup API's
// words.
const (
	ReasonNotEnoughResources = "NotEnoughResources"
	ReasonQueueNotFound      = "QueueNotFound"
	ReasonQueueClosed        = "QueueClosed"
)

// Allocate places gangs all-or-nothing. Queue by queue and job by job in
// the session's order, it places every pending task of a job in one
// statement (each task on its best feasible node; the minimal gang's
// first, see minimalFirst) and commits the statement only if the job is
// then ready; otherwise it discards it, so the gang binds nothing and what
// it took is free for the next job.
//
// When the enqueue action ran earlier in the session (the admission gate,
// framework.Session.EnableAdmission), only admitted jobs are tried. Every
// task must also fit its queue (framework.Session.Allocatable: the
// proportion plugin's share and capability), or it is not placed.
//
// Partial gangs go first (api.JobInfo.Partial: some members bound or
// running, the gang not whole, as a failed bind, a scheduler killed in
// the middle of a commit or a lost member leaves one), in job order,
// before every queue and every other gang: what their bound members hold
// is wasted until they are whole, and a gang that waits behind the others
// in fair-share order (it already holds resources, so its share sorts it
// last) would hold it for good while newer gangs take what it needs. One
// that cannot be completed is reclaimed by PartialGangs.
type Allocate struct{}

// NewAllocate returns the allocate action.
func NewAllocate() *Allocate { return &Allocate{} }

// Name is "allocate".
func (*Allocate) Name() string { return "allocate" }

// Execute runs allocate on the session.
func (a *Allocate) Execute(ssn *framework.Session) {
	noPending := func(job *api.JobInfo) bool { return !job.HasPendingTasks() }
	admit := func(job *api.JobInfo) bool {
		if !ssn.MayAllocate(job) {
			return false // enqueue ran and did not admit it; it recorded why
		}
		if r := ssn.JobValid(job); r != nil {
			ssn.RecordUnschedulable(job.UID, r.Reason, r.Message)
			return false
		}
		return true
	}
	refused := newRefusals(ssn)
	// A partial gang whose queue is gone or closed is left to the walk,
	// which records why; a closed queue keeps what runs, and PartialGangs
	// reclaims what cannot be completed.
	tried := map[*api.JobInfo]bool{}
	for _, job := range partialFirst(ssn) {
		if q, ok := ssn.Queues[job.Queue]; ok && q.IsOpen() {
			tried[job] = true
			if admit(job) {
				a.allocateJob(ssn, refused, q, job)
			}
		}
	}
	skip := func(job *api.JobInfo) bool { return noPending(job) || tried[job] }
	walk := newQueueWalk(ssn, skip, admit)
	for queue, job, ok := walk.next(); ok; queue, job, ok = walk.next() {
		a.allocateJob(ssn, refused, queue, job)
	}
}

// allocateTopologyJob places a gang with a topology policy: every pending
// task, the covered ones by the topology search, all or nothing.
func (a *Allocate) allocateTopologyJob(ssn *framework.Session, queue *api.QueueInfo, job *api.JobInfo, tasks []*api.TaskInfo) {
	pl := placeWithTopology(ssn, queue, job, tasks)
	if pl.stmt == nil {
		ssn.RecordUnschedulable(job.UID, pl.reason, pl.message)
		if pl.roomWouldHelp {
			hold(ssn, job, tasks)
		}
		return
	}
	if ssn.JobReady(job) {
		pl.stmt.Commit()
		ssn.RecordTopology(job.UID, pl.outcome)
		return
	}
	pl.stmt.Discard()
	ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources,
		fmt.Sprintf("gang not ready with its %d pending pods placed (minMember %d): nothing bound", len(tasks), job.MinMember))
}

// partialFirst returns the partial gangs with pending members, in job
// order: those allocate tries before any other.
func partialFirst(ssn *framework.Session) []*api.JobInfo {
	var out []*api.JobInfo
	for _, job := range ssn.Jobs {
		if job.HasPendingTasks() && job.Partial() {
			out = append(out, job)
		}
	}
	slices.SortFunc(out, ssn.JobCompare)
	return out
}

// minimalFirst orders tasks (job's pending tasks, in the session's task
// order) with the job's minimal gang (framework.Session.MinimalGang) first,
// each part in task order: the members the gang cannot be ready without
// are placed before the extras take room they need. Otherwise a master
// placed first could take the host port or the node a required worker
// needs, and the gang would not be ready where its minimum fits (as
// preempt's and enqueue's trials, which place the minimal gang, find).
// For a gang without minTaskMember the minimal gang is a prefix of tasks
// already, and the order is unchanged.
func minimalFirst(ssn *framework.Session, job *api.JobInfo, tasks []*api.TaskInfo) []*api.TaskInfo {
	if len(job.MinTaskMember) == 0 {
		return tasks // the minimal gang is a prefix: nothing to search
	}
	minimal, ok := ssn.MinimalGang(job)
	if !ok || len(minimal) == 0 || len(minimal) == len(tasks) {
		return tasks
	}
	in := make(map[*api.TaskInfo]bool, len(minimal))
	for _, t := range minimal {
		in[t] = true
	}
	out := slices.Clone(minimal)
	for _, t := range tasks {
		if !in[t] {
			out = append(out, t)
		}
	}
	return out
}

// allocateJob tries to place job's pending tasks as one gang, unless a
// gang of its shape was refused earlier in the pass.
func (a *Allocate) allocateJob(ssn *framework.Session, refused *refusals, queue *api.QueueInfo, job *api.JobInfo) {
	tasks := ssn.PendingTasks(job)
	if job.Topology != nil {
		a.allocateTopologyJob(ssn, queue, job, tasks)
		return
	}
	tasks = minimalFirst(ssn, job, tasks)
	if msg, ok := refused.lookup(queue.Name, job, tasks); ok {
		ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, msg)
		return
	}

	stmt := ssn.Statement()
	ready := job.ReadyCount()
	// A task that found no node means none for the next task of its fit
	// key either, unless its rules can be met by placements (FitKey): the
	// statement only fills nodes, and the key fixes every input of the
	// predicates. So the key's other tasks are skipped, not searched again.
	failed := map[framework.FitKey]bool{}
	// The first task that found no room, and why.
	var firstPod *api.TaskInfo
	var firstFailure string
	// queueShort: some task found its queue's share spent, which no hold
	// of nodes can help.
	queueShort := false
	for i, task := range tasks {
		if ready+int32(stmt.Len())+int32(len(tasks)-i) < job.MinMember {
			break // even placing every remaining task cannot make the gang
		}
		cls := ssn.ClassOf(task)
		key, monotone := ssn.FitKey(cls, task)
		if monotone && failed[key] {
			continue
		}
		// The queue only fills up as the statement goes on, and the class
		// fixes the request, so a refusal holds for the key too.
		if !ssn.Allocatable(queue, task) {
			queueShort = true
			if monotone {
				failed[key] = true
			}
			if firstPod == nil {
				firstPod, firstFailure = task, fmt.Sprintf("queue %q has no share or capability left for it", queue.Name)
			}
			continue
		}
		node := ssn.BestNode(cls, task)
		if node == nil {
			if monotone {
				failed[key] = true
			}
			if firstPod == nil {
				firstPod, firstFailure = task, ssn.Diagnose(task).String()
			}
			continue
		}
		if err := stmt.Allocate(task, node); err != nil {
			// Cannot happen for a pending task of this session; keep going
			// without it rather than abort the cycle.
			if firstPod == nil {
				firstPod, firstFailure = task, err.Error()
			}
			continue
		}
	}

	placed := stmt.Len()
	if placed > 0 && ssn.JobReady(job) {
		stmt.Commit()
		if firstPod != nil {
			ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, refusalMessage("some pods were not placed: ", firstPod, firstFailure))
		}
		return
	}
	stmt.Discard()
	prefix := "no pod could be placed"
	if placed > 0 {
		prefix = fmt.Sprintf("gang not ready with %d pods placed (%d already running or bound, minMember %d): nothing bound",
			placed, ready, job.MinMember)
	}
	if firstPod != nil {
		prefix += "; "
	}
	ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, refused.record(queue.Name, job, tasks, prefix, firstPod, firstFailure))
	if firstPod != nil && !queueShort {
		hold(ssn, job, tasks)
	}
}
