package actions

import (
	"fmt"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// ReasonNotEnoughPods is the PodGroup API's reason for a gang with fewer
// pods than its minimums (the gang plugin records it too).
const ReasonNotEnoughPods = "NotEnoughPods"

// Enqueue admits Pending gangs (PodGroup phase Pending, moved to Inqueue by
// the commit; framework.Session.Admit). It turns the session's admission
// gate on first, so allocate and backfill after it only place admitted
// jobs. Jobs admitted before this session (Inqueue, Running, ...) are not
// checked again.
//
// Queue by queue and job by job in the session's order (the queue order is
// asked again before every job, as in allocate), a Pending job is admitted
// only when all of these hold:
//
//  1. its queue exists and is open;
//  2. the queue can take what the job needs (framework.Session.MinimalNeed)
//     within its share and capability (framework.Session.JobEnqueueable:
//     the proportion plugin);
//  3. the job fits the cluster:
//     - a job with pods: its minimal gang (framework.Session.MinimalGang:
//     minMember tasks, every minTaskMember honoured) is placed node by node,
//     each pod on its best feasible node as allocate would choose it, in a
//     statement. All of them must fit, and the job must then be ready.
//     A gang of 2 pods x 4 GPUs is refused on 4 nodes with 2 free GPUs
//     each, although 8 GPUs are free in aggregate;
//     - a job with no pods yet (its controller waits for Inqueue before
//     creating them): minResources must fit in the cluster's aggregate
//     idle resources (each node's idle clamped at zero, every node counted,
//     cordoned and tainted ones too, less what earlier admissions of this
//     pass without pods need). This is the limitation of
//     admitting before pods exist: with no pod specs there are no
//     per-pod sizes, selectors or tolerations to place, so such a job can be
//     admitted and still not fit node by node; allocate then places it
//     all-or-nothing or not at all once its pods exist.
//
// A job with some pods but fewer than its minimums is not admitted
// (NotEnoughPods): its controller is still creating them.
//
// A job that fails 3 for want of room on the nodes, but that the session
// lets hold nodes (framework.Session.MayHold: the reservation plugin; at
// most HoldLimit such jobs a pass), is admitted all the same, without a
// trial placement: allocate, which places only admitted jobs, then holds
// the nodes it lacks in its turn. Otherwise a gang too large for the
// nodes as they are would never be admitted, and so never hold.
//
// Admission reserves nothing beyond this action: the statements of admitted
// jobs are held until every Pending job has been considered, so that two
// gangs that each fit alone but not together are not both admitted, and are
// then all discarded. Allocate starts from the snapshot as it was. Each
// refusal is recorded (framework.Session.RecordUnschedulable) with the
// PodGroup API's reason.
//
// Committing for allocate. When allocate runs right after enqueue in the
// session (framework.Session.NextAction), enqueue commits an admitted
// job's trial placement instead of holding it, for as long as that is
// exactly what allocate would decide, so that a backlog's first gangs are
// bound while the rest are still being admitted rather than after a
// second search of every gang. It holds from the start of the pass while:
//
//   - no job admitted before this session has pending tasks (allocate
//     would try those too, partial gangs first; then nothing is committed
//     this pass), and
//   - every job admitted so far in the pass was committed so: its minimal
//     gang is every pending task it has (allocate places them all, in the
//     same task order), each task was within its queue's share and
//     capability as it was placed (framework.Session.Allocatable, which
//     allocate asks and enqueue's trial does not), and it was not admitted
//     to hold nodes nor by a topology search (allocate searches those
//     within the queue, and holds).
//
// Under those conditions allocate's walk reaches the admitted jobs in the
// order enqueue admitted them (both walks ask the queue order of the same
// placements before every job; a job enqueue refused changes nothing and
// allocate does not try it), and finds every task the node enqueue's trial
// found (the same state, the same best-node search). The first admitted
// job that breaks a condition is held as before, and so is every job after
// it: allocate decides those itself, after the committed ones. The queue
// budget hears of committed jobs with the held ones, at the end.
type Enqueue struct{}

// NewEnqueue returns the enqueue action.
func NewEnqueue() *Enqueue { return &Enqueue{} }

// Name is "enqueue".
func (*Enqueue) Name() string { return "enqueue" }

// Execute runs enqueue on the session.
func (e *Enqueue) Execute(ssn *framework.Session) {
	ssn.EnableAdmission()
	walk := newQueueWalk(ssn, ssn.IsAdmitted, always)
	p := enqueuePass{ssn: ssn, refused: newRefusals(ssn), committing: commitsForAllocate(ssn)}
	for queue, job, ok := walk.next(); ok; queue, job, ok = walk.next() {
		p.consider(queue, job)
	}
	p.finish()
}

// commitsForAllocate reports whether a pass may start committing for
// allocate (see Enqueue): allocate runs next, and would try no job but
// those this pass considers.
func commitsForAllocate(ssn *framework.Session) bool {
	if _, ok := ssn.NextAction().(*Allocate); !ok {
		return false
	}
	for _, job := range ssn.Jobs {
		if job.HasPendingTasks() && ssn.IsAdmitted(job) {
			return false
		}
	}
	return true
}

// enqueuePass is one run of enqueue: the trial statements of the jobs it
// admitted, committed for allocate or held until the end.
type enqueuePass struct {
	ssn *framework.Session
	// refused holds the gang shapes refused in this pass: a later gang of
	// one of them is refused without a search.
	refused *refusals
	// committing says the pass still commits for allocate (see Enqueue).
	committing bool
	// held are the admitted jobs' trial placements not committed, in
	// admission order.
	held []*framework.Statement
	// heldJobs and heldNeeds are the jobs admitted with a trial placement,
	// committed or held, and their needs: the queue budget hears of them
	// (JobEnqueued) once the held placements are discarded, so that no job
	// counts twice while the pass runs.
	heldJobs  []*api.JobInfo
	heldNeeds []api.Resource
	// podless is what jobs admitted without pods need, in aggregate.
	podless api.Resource
	// toHold counts the jobs admitted to hold nodes (admitToHold).
	toHold int
	// need is needOf's answer, kept from job to job: most jobs of a
	// backlog are refused at once, and a Resource of their own would cost
	// each an allocation (its scalars' map) in every cycle.
	need api.Resource
	// idle is the nodes' idle resources as aggregateIdle counts them
	// (before podless), with the held trial placements taken: summed over
	// every node at the first job without pods, then kept up to date as
	// trial placements are held, so that a backlog of such jobs costs one
	// walk over the nodes, not one per job. Nil until then.
	idle *api.Resource
}

func (p *enqueuePass) consider(queue *api.QueueInfo, job *api.JobInfo) {
	ssn := p.ssn
	if job.HasNoPods() {
		p.considerPodless(job, ssn.MinimalNeed(job))
		return
	}
	if r := ssn.JobValid(job); r != nil {
		ssn.RecordUnschedulable(job.UID, r.Reason, r.Message)
		return
	}
	tasks, ok := ssn.MinimalGang(job)
	if !ok {
		ssn.RecordUnschedulable(job.UID, ReasonNotEnoughPods,
			fmt.Sprintf("fewer pending pods than minMember %d and minTaskMember %v ask for", job.MinMember, job.MinTaskMember))
		return
	}
	if r := ssn.JobEnqueueable(job, p.needOf(tasks)); r != nil {
		ssn.RecordUnschedulable(job.UID, r.Reason, r.Message)
		return
	}
	need := p.need.Clone() // the job may be admitted: its own copy

	if job.Topology != nil {
		p.considerTopology(job, tasks, need)
		return
	}
	if msg, ok := p.refused.lookup(job.Queue, job, tasks); ok {
		ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, msg)
		return
	}
	refuse := func(pod *api.TaskInfo, prefix, why string) {
		ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, p.refused.record(job.Queue, job, tasks, prefix, pod, why))
	}
	stmt := ssn.Statement()
	// allocate would place every pending task, in this order: the minimal
	// gang must be all of them for the trial to be allocate's decision.
	asAllocate := p.committing && len(tasks) == len(ssn.PendingTasks(job))
	for _, task := range tasks {
		if asAllocate && !ssn.Allocatable(queue, task) {
			asAllocate = false // allocate would refuse this task, enqueue does not
		}
		cls := ssn.ClassOf(task)
		node := ssn.BestNode(cls, task)
		if node == nil {
			why := ssn.Diagnose(task).String()
			stmt.Discard()
			if p.admitToHold(job, tasks, need) {
				return
			}
			refuse(task, fmt.Sprintf("the gang's %d pods do not fit node by node: ", len(tasks)), why)
			return
		}
		if err := stmt.Allocate(task, node); err != nil {
			// Cannot happen for a pending task of this session.
			stmt.Discard()
			ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, err.Error())
			return
		}
	}
	if !ssn.JobReady(job) {
		stmt.Discard()
		refuse(nil, "", fmt.Sprintf("the gang is not ready with its %d minimal pods placed", len(tasks)))
		return
	}
	p.admit(job, stmt, need, asAllocate)
}

// needOf returns what tasks request together: MinimalNeed for a job with
// its pods, given its minimal gang. The answer is the pass's own, valid
// until the next call.
func (p *enqueuePass) needOf(tasks []*api.TaskInfo) *api.Resource {
	scalars := p.need.Scalars
	clear(scalars)
	p.need = api.Resource{Scalars: scalars}
	for _, t := range tasks {
		t.AddRequestsTo(&p.need)
	}
	return &p.need
}

// admit admits job and commits its trial placement for allocate (commit),
// or holds it until the pass ends; once one is held, every later one is
// (see Enqueue).
func (p *enqueuePass) admit(job *api.JobInfo, stmt *framework.Statement, need api.Resource, commit bool) {
	p.ssn.Admit(job)
	p.countIdle(stmt)
	if p.committing = p.committing && commit; p.committing {
		stmt.Commit()
	} else {
		p.held = append(p.held, stmt)
	}
	p.heldJobs = append(p.heldJobs, job)
	p.heldNeeds = append(p.heldNeeds, need)
}

// considerTopology admits a gang with a topology policy when its minimal
// gang can be placed by the policy (placeWithTopology).
func (p *enqueuePass) considerTopology(job *api.JobInfo, tasks []*api.TaskInfo, need api.Resource) {
	ssn := p.ssn
	pl := placeWithTopology(ssn, nil, job, tasks)
	if pl.stmt == nil {
		if pl.roomWouldHelp && p.admitToHold(job, tasks, need) {
			return
		}
		ssn.RecordUnschedulable(job.UID, pl.reason, pl.message)
		return
	}
	if !ssn.JobReady(job) {
		pl.stmt.Discard()
		ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, fmt.Sprintf("the gang is not ready with its %d minimal pods placed", len(tasks)))
		return
	}
	p.admit(job, pl.stmt, need, false)
}

// admitToHold admits job, which does not fit the nodes as they are, if
// the session lets it hold nodes, it would have nodes to hold for tasks
// (so not a gang no node, or no domain, could ever take: that one stays
// Pending and takes none of its queue's budget), and fewer than the
// session's hold limit were admitted so in this pass. Its queue's budget
// counts it at once.
func (p *enqueuePass) admitToHold(job *api.JobInfo, tasks []*api.TaskInfo, need api.Resource) bool {
	if p.toHold >= p.ssn.HoldLimit() || !p.ssn.MayHold(job) || len(nodesToHold(p.ssn, job, tasks)) == 0 {
		return false
	}
	p.toHold++
	p.committing = false // allocate tries it, and holds
	p.ssn.Admit(job)
	p.ssn.JobEnqueued(job, &need)
	return true
}

// considerPodless admits a job without pods on minResources alone.
func (p *enqueuePass) considerPodless(job *api.JobInfo, need api.Resource) {
	ssn := p.ssn
	if r := ssn.JobEnqueueable(job, &need); r != nil {
		ssn.RecordUnschedulable(job.UID, r.Reason, r.Message)
		return
	}
	idle := p.aggregateIdle()
	if name, short := need.Insufficient(&idle); short {
		ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources,
			fmt.Sprintf("no pods yet; minResources %v do not fit the cluster's idle %s (%v in aggregate)", need, name, idle))
		return
	}
	ssn.Admit(job)
	ssn.JobEnqueued(job, &need)
	p.podless.Add(&need)
}

// aggregateIdle is the idle resources of every node (negative idle on an
// over-committed node counts as zero: it frees nothing elsewhere), with the
// trial placements of this pass taken, less what jobs admitted without pods
// need.
func (p *enqueuePass) aggregateIdle() api.Resource {
	if p.idle == nil {
		// Every node not taken is empty, and allocatable is never
		// negative (the API server refuses it).
		idle := p.ssn.TotalAllocatable()
		for _, n := range p.ssn.NodesTaken() {
			idle.Sub(&n.Allocatable)
			idle.AddNonNegative(&n.Idle)
		}
		p.idle = &idle
	}
	idle := p.idle.Clone()
	idle.Sub(&p.podless)
	return idle
}

// countIdle counts an admitted job's trial placement, held or committed,
// in the aggregate idle, if that was summed already: each node it used
// counts its idle anew.
func (p *enqueuePass) countIdle(stmt *framework.Statement) {
	if p.idle == nil {
		return
	}
	before := map[*api.NodeInfo]api.Resource{}
	for _, d := range stmt.Placements() {
		n := p.ssn.Nodes[d.Node]
		old, ok := before[n]
		if !ok {
			old = n.Idle.Clone()
		}
		old.Add(&d.Task.Resreq)
		before[n] = old
	}
	for n, old := range before {
		p.idle.SubNonNegative(&old)
		p.idle.AddNonNegative(&n.Idle)
	}
}

// finish discards every held trial placement, newest first, and only then
// tells the queue budget about the jobs admitted with a trial placement,
// committed or held.
func (p *enqueuePass) finish() {
	for i := len(p.held) - 1; i >= 0; i-- {
		p.held[i].Discard()
	}
	for i, job := range p.heldJobs {
		p.ssn.JobEnqueued(job, &p.heldNeeds[i])
	}
}
