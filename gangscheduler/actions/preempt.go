package actions

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// Preempt evicts members above their gang's minimum, then whole gangs, of
// lower priority so that a starving gang of higher priority can be placed.
// It only decides evictions
// (framework.Session.Evictions); it places nothing. The scheduler deletes
// the evicted pods, and once they are gone a later cycle admits and
// allocates the preemptor as it would any gang. Volcano's pipelining (binding
// the preemptor onto the room while the victims terminate) is not done:
// the preemptor waits for the room to be really free, so the kubelet never
// sees it over-committed.
//
// A preemptor is a job that is not ready (framework.Session.JobReady), has
// pending pods, none of them with preemptionPolicy Never, is valid, and is
// in an existing, open queue. That includes
// a job enqueue did not admit: enqueue admits only gangs that fit now, so a
// gang that needs preemption is never admitted first. Its trial placement
// must stay within its queue's share and capability with the victims gone
// (framework.Session.Allocatable), so preemption does not free room for a
// gang its queue could not hold; enqueue admits it once the room is really
// free. The admission budget (framework.Session.JobEnqueueable) is not
// asked: it counts an admitted gang's need until the gang is placed, and
// the trial placements held below would count a second time. It is asked
// once, before the trials, with every gang the job may preempt gone: a
// gang the budget keeps out whatever it preempts (gangs of its queue
// admitted earlier and not placed hold it) preempts nothing, since it
// would not be placed once its victims were gone (admissible). A gang of
// the queue admitted in an earlier cycle, before the preemption, with a
// lower priority, can still take the freed room first (one admitted in
// the same cycle cannot: see below). Preemptors go in the session's job
// order (PodGroup priority first).
//
// For each, victims are only the jobs of the same queue (queues are not
// preempted across; reclaiming an overused queue's share is another
// action's job) with a strictly lower PodGroup priority that hold nodes
// (some task Bound or Running) and got nothing placed in this session.
// A victim is never left below its minimums: it loses either its surplus
// (the members above minMember and every minTaskMember, as an elastic
// gang's extras; the gang runs on) or the whole gang (every Bound and
// Running task of it). Surpluses are taken first, member by member,
// every one before any whole gang, so an elastic gang's extras are the
// first members preempted; a surplus is its roles' highest replica
// indexes, so that the members a job's ranks start from stay. Within each
// kind, victims
// are taken lowest priority first, then youngest first, then by
// namespace/name, so the choice is deterministic.
//
// The trial: in a statement, victims are evicted one gang at a time, and
// after each the preemptor's minimal gang (framework.Session.MinimalGang) is
// placed node by node as allocate would, each task within its queue's share
// (framework.Session.Allocatable); it fits when every task finds a node and
// the job is then ready. The first prefix of victims with which it fits is
// then pruned: from the most important victim down, a victim the gang still
// fits without is spared. If it fits, the evictions are kept and the trial
// placement is held until the action ends (so that later preemptors cannot
// count the same room); then the placements are discarded and the
// evictions committed. If it does not fit, nothing of the trial remains.
//
// A gang whose topology policy requires its members in one domain of a
// level (a required pack, at the finest such level) preempts in one
// domain: the trial runs per domain of that level, with the victims that
// hold a node there, and the cheapest domain wins (the lowest highest
// victim priority, then the fewest pods, then the fewest gangs; the
// tree's order on a tie). So it frees one rack rather than victims
// scattered over several, and the rack that costs least. That is a trial
// per domain with victims: preemption of such gangs costs more scheduler
// time on a cluster of many racks.
//
// Pods already being deleted (Releasing) are counted as gone for the
// trials: a preemptor that fits once they leave evicts nothing more and
// holds its room. So a cycle that runs while earlier victims terminate
// does not preempt again for the same gang. (A pod stuck terminating, say
// behind a finalizer, keeps its room counted as coming, as kube-scheduler
// does for its nominated nodes.)
//
// A preemptor that fits only once such pods leave (its victims, or pods
// deleted otherwise) keeps its room for the rest of the session, as
// kube-scheduler's nominated pods do: the requests of its trial placement
// are reserved on its nodes, as far as they are idle now, and in its
// queue's share (framework.Session.Reserve), so allocate gives none of
// that to a gang after it; and an admitted gang with no member on a node
// that fitted before and no longer does gives its admission back
// (revokeAdmissions). A preemptor that fits now but that its queue's
// admission budget keeps out is admitted when lower-priority gangs of its
// queue, admitted and not placed, give their admission back
// (admitDisplacing).
//
// A preemptor is nominated, as kube-scheduler nominates a pod: while it
// waits for its room, the nodes of its trial placement are its members'
// nominated nodes (framework.Session.Nominate; the commit writes them as
// the pods' status.nominatedNodeName). Once its room is free, preempt
// places a nominated gang itself, before allocate's queue walk; the
// nomination of a gang that can neither be placed, nor wait for leaving
// pods or admission, is cleared.
type Preempt struct{}

// NewPreempt returns the preempt action.
func NewPreempt() *Preempt { return &Preempt{} }

// Name is "preempt".
func (*Preempt) Name() string { return "preempt" }

// Execute runs preempt on the session.
func (p *Preempt) Execute(ssn *framework.Session) {
	pass := preemptPass{ssn: ssn, future: ssn.Statement(), kept: map[*api.JobInfo]bool{}}
	// The future view: what terminating pods hold is free for the trials.
	var releasing []*api.TaskInfo
	for _, n := range ssn.NodesTaken() {
		for _, t := range n.Tasks {
			if t.Status == api.Releasing {
				releasing = append(releasing, t)
			}
		}
	}
	for _, t := range releasing {
		// Cannot fail: the task is Releasing on a node of the session.
		_ = pass.future.Evict(t, "")
	}

	var starving []*api.JobInfo
	for _, job := range ssn.Jobs {
		if !job.HasPendingTasks() || ssn.JobReady(job) || neverPreempts(job) {
			continue
		}
		if q, ok := ssn.Queues[job.Queue]; !ok || !q.IsOpen() {
			continue
		}
		if ssn.JobValid(job) != nil {
			continue
		}
		starving = append(starving, job)
	}
	slices.SortFunc(starving, ssn.JobCompare)
	// Before any trial is held: a held trial of an admitted preemptor
	// would count in its queue twice, as placed and as admitted.
	var admissible []*api.JobInfo
	for _, job := range starving {
		if pass.admissible(job) {
			admissible = append(admissible, job)
		}
	}
	for _, job := range admissible {
		pass.preemptFor(job)
	}
	pass.finish()
}

// neverPreempts reports whether a pending member of job has
// preemptionPolicy Never (set on the pod from its PriorityClass): such a
// pod waits for room rather than take it, as kube-scheduler's
// DefaultPreemption has it, and a gang preempts only when every member it
// is placing may.
func neverPreempts(job *api.JobInfo) bool {
	for _, t := range job.Tasks {
		if t.Status == api.Pending && t.Pod.Spec.PreemptionPolicy != nil && *t.Pod.Spec.PreemptionPolicy == corev1.PreemptNever {
			return true
		}
	}
	return false
}

// preemptPass is one run of preempt.
type preemptPass struct {
	ssn *framework.Session
	// future holds the tentative evictions of pods already terminating.
	future *framework.Statement
	// held are the preemptors' trial placements, discarded at the end;
	// evictions are the victims' statements, committed at the end.
	held      []trialPlacement
	evictions []*framework.Statement
	// unplaced are the gangs admitted and not placed when the pass
	// started (admittedUnplaced), nil until asked for.
	unplaced []*api.JobInfo
	// kept are the gangs finish placed, or left waiting for leaving pods
	// or for admission: their nominated nodes stand.
	kept map[*api.JobInfo]bool
}

// trialPlacement is where a preemptor's minimal gang fits once its
// victims and the terminating pods are gone.
type trialPlacement struct {
	job   *api.JobInfo
	tasks []*api.TaskInfo
	stmt  *framework.Statement
}

func (p *preemptPass) preemptFor(job *api.JobInfo) {
	ssn := p.ssn
	tasks, ok := ssn.MinimalGang(job)
	if !ok || len(tasks) == 0 {
		return
	}
	if pl, ok := p.place(job, tasks); ok {
		p.held = append(p.held, trialPlacement{job, tasks, pl}) // it fits already (or once terminating pods leave)
		return
	}
	reason := fmt.Sprintf("Preempted by gang %s", job.UID)
	var chosen []victim
	fits := false
	for _, victims := range p.victimSets(job) {
		if c, ok := p.choose(job, tasks, victims, reason); ok && (!fits || cheaper(c, chosen)) {
			chosen, fits = c, true
		}
	}
	if !fits {
		return
	}
	ev, pl, ok := p.trial(job, tasks, chosen, reason)
	if !ok {
		return // cannot happen: the same trial fitted in choose
	}
	p.held = append(p.held, trialPlacement{job, tasks, pl})
	p.evictions = append(p.evictions, ev)
}

// admissible says whether job is admitted, or enqueue would admit it as
// far as its queue's admission budget goes (framework.Session.
// JobEnqueueable) were every gang it may preempt gone, and every
// admission it may take (lowerAdmissions) given back. A gang its queue's
// budget keeps out whatever it preempts (gangs of its priority or higher,
// admitted before it and not placed, hold the budget) would not be placed
// once its victims had gone: they would go for nothing, and their gangs
// take the room back.
func (p *preemptPass) admissible(job *api.JobInfo) bool {
	ssn := p.ssn
	if ssn.IsAdmitted(job) {
		return true
	}
	gone := ssn.Statement()
	defer gone.Discard()
	for _, v := range p.victims(job) {
		v.evict(gone, "")
	}
	need := ssn.MinimalNeed(job)
	if ssn.JobEnqueueable(job, &need) == nil {
		return true
	}
	lower := p.lowerAdmissions(job)
	if len(lower) == 0 {
		return false
	}
	undo := make([]func(), len(lower))
	for i, c := range lower {
		undo[i] = ssn.RevokeAdmission(c)
	}
	ok := ssn.JobEnqueueable(job, &need) == nil
	for i := len(undo) - 1; i >= 0; i-- {
		undo[i]()
	}
	return ok
}

// lowerAdmissions lists the admissions job may take (admitDisplacing):
// of the gangs of its queue of lower priority, admitted and not placed, in
// the session's job order; a lower-priority preemptor's too (one that
// waits for pods leaving, or starves, gives way as any other).
func (p *preemptPass) lowerAdmissions(job *api.JobInfo) []*api.JobInfo {
	return slices.DeleteFunc(p.admittedUnplaced(), func(c *api.JobInfo) bool {
		return c.Queue != job.Queue || c.Priority >= job.Priority
	})
}

// victimSets are the lists of victims job may preempt, each in the order
// they are taken: one list of every victim; or, for a gang whose topology
// policy requires it in one domain of a level (a required pack), one list
// per domain of that level, of the victims that hold a node there, so
// that the gang frees one domain rather than victims scattered over many.
func (p *preemptPass) victimSets(job *api.JobInfo) [][]victim {
	all := p.victims(job)
	tree, lv := p.packedLevel(job)
	if tree == nil {
		return [][]victim{all}
	}
	byDomain := map[*api.Domain][]victim{}
	var domains []*api.Domain
	for _, v := range all {
		seen := map[*api.Domain]bool{}
		for _, t := range v.tasks {
			d := tree.Leaf[p.ssn.Nodes[t.NodeName].Index]
			for d != nil && d.Level > lv {
				d = d.Parent
			}
			if d == nil || d.Level != lv || seen[d] {
				continue
			}
			seen[d] = true
			if _, ok := byDomain[d]; !ok {
				domains = append(domains, d)
			}
			byDomain[d] = append(byDomain[d], v)
		}
	}
	out := make([][]victim, len(domains))
	for i, d := range domains {
		out[i] = byDomain[d]
	}
	return out
}

// packedLevel returns the tree of job's topology and the finest of its
// levels whose rule requires every covered member in one domain; nil when
// there is none.
func (p *preemptPass) packedLevel(job *api.JobInfo) (*api.TopologyTree, int) {
	if job.Topology == nil {
		return nil, -1
	}
	topo := p.ssn.Topologies[job.Topology.Topology]
	if topo == nil {
		return nil, -1
	}
	lv := -1
	for _, r := range job.Topology.Rules {
		if r.Required && r.Kind == api.RulePack && r.Max == 0 {
			lv = max(lv, topo.Level(r.Level))
		}
	}
	if lv < 0 {
		return nil, -1
	}
	return p.ssn.TopologyTree(topo), lv
}

// choose takes victims, in order, until the gang fits, then spares every
// one it fits without, the most important first: an early, cheap victim
// may have freed room the gang cannot use (another node pool, say). It
// leaves no trace in the session.
func (p *preemptPass) choose(job *api.JobInfo, tasks []*api.TaskInfo, victims []victim, reason string) ([]victim, bool) {
	ev := p.ssn.Statement()
	n, fits := 0, false
	for n < len(victims) && !fits {
		victims[n].evict(ev, reason)
		n++
		if pl, ok := p.place(job, tasks); ok {
			pl.Discard()
			fits = true
		}
	}
	ev.Discard()
	if !fits {
		return nil, false
	}
	chosen := victims[:n]
	for i := len(chosen) - 2; i >= 0; i-- {
		without := slices.Delete(slices.Clone(chosen), i, i+1)
		if ev, pl, ok := p.trial(job, tasks, without, reason); ok {
			pl.Discard()
			ev.Discard()
			chosen = without
		}
	}
	return chosen, true
}

// cheaper reports whether evicting a costs less than evicting b: a lower
// highest priority among the victims, then fewer pods, then fewer victims.
func cheaper(a, b []victim) bool {
	top := func(vs []victim) int32 {
		hi := vs[0].job.Priority
		for _, v := range vs {
			hi = max(hi, v.job.Priority)
		}
		return hi
	}
	pods := func(vs []victim) int {
		taken := map[*api.TaskInfo]bool{}
		for _, v := range vs {
			for _, t := range v.tasks {
				taken[t] = true
			}
		}
		return len(taken)
	}
	if c := cmp.Compare(top(a), top(b)); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(pods(a), pods(b)); c != 0 {
		return c < 0
	}
	return len(a) < len(b)
}

// trial evicts victims and places the gang; on failure it leaves no trace.
func (p *preemptPass) trial(job *api.JobInfo, tasks []*api.TaskInfo, victims []victim, reason string) (ev, pl *framework.Statement, ok bool) {
	ev = p.ssn.Statement()
	for _, v := range victims {
		v.evict(ev, reason)
	}
	if pl, ok = p.place(job, tasks); !ok {
		ev.Discard()
		return nil, nil, false
	}
	return ev, pl, true
}

// place puts the minimal gang on the nodes as allocate would, in a
// statement it returns open if the job is then ready, else discards.
func (p *preemptPass) place(job *api.JobInfo, tasks []*api.TaskInfo) (*framework.Statement, bool) {
	pl, ok := p.placement(job, tasks)
	return pl.stmt, ok
}

// placement is place with the topology search's outcome, for a gang with
// a topology policy.
func (p *preemptPass) placement(job *api.JobInfo, tasks []*api.TaskInfo) (placement, bool) {
	ssn := p.ssn
	queue := ssn.Queues[job.Queue]
	if job.Topology != nil {
		pl := placeWithTopology(ssn, queue, job, tasks)
		if pl.stmt == nil {
			return placement{}, false
		}
		if !ssn.JobReady(job) {
			pl.stmt.Discard()
			return placement{}, false
		}
		return pl, true
	}
	stmt := ssn.Statement()
	for _, task := range tasks {
		if !ssn.Allocatable(queue, task) {
			stmt.Discard()
			return placement{}, false
		}
		node := ssn.BestNode(ssn.ClassOf(task), task)
		if node == nil || stmt.Allocate(task, node) != nil {
			stmt.Discard()
			return placement{}, false
		}
	}
	if !ssn.JobReady(job) {
		stmt.Discard()
		return placement{}, false
	}
	return placement{stmt: stmt}, true
}

// victim is what a preemptor may take from one gang: a member of its
// surplus, or the whole gang.
type victim struct {
	job *api.JobInfo
	// tasks are the Bound and Running tasks taken, in UID order: one
	// member of the surplus (the gang runs on), or every one.
	tasks []*api.TaskInfo
}

// evict evicts the victim's tasks that the statement has not evicted
// already (a gang's surplus, then the whole gang, may both be taken).
func (v victim) evict(stmt *framework.Statement, reason string) {
	for _, t := range v.tasks {
		if t.Status == api.Bound || t.Status == api.Running {
			// Cannot fail: holdsNodes checked that every one is on its node.
			_ = stmt.Evict(t, reason)
		}
	}
}

// victims lists what job may preempt, in the order it is taken: every
// gang's surplus, then whole gangs.
func (p *preemptPass) victims(job *api.JobInfo) []victim {
	var gangs []*api.JobInfo
	for _, v := range p.ssn.Jobs {
		if v.Queue != job.Queue || v.Priority >= job.Priority || !p.holdsNodes(v) {
			continue
		}
		gangs = append(gangs, v)
	}
	slices.SortFunc(gangs, func(l, r *api.JobInfo) int {
		if c := cmp.Compare(l.Priority, r.Priority); c != 0 {
			return c
		}
		if c := r.CreationTimestamp.Compare(l.CreationTimestamp); c != 0 {
			return c
		}
		return cmp.Compare(l.UID, r.UID)
	})
	var surpluses, wholes []victim
	for _, g := range gangs {
		for _, t := range surplus(g) {
			surpluses = append(surpluses, victim{job: g, tasks: []*api.TaskInfo{t}})
		}
		wholes = append(wholes, victim{job: g, tasks: holding(g)})
	}
	return append(surpluses, wholes...)
}

// holding lists job's Bound and Running tasks in UID order.
func holding(job *api.JobInfo) []*api.TaskInfo {
	var tasks []*api.TaskInfo
	for _, t := range job.Tasks {
		if t.Status == api.Bound || t.Status == api.Running {
			tasks = append(tasks, t)
		}
	}
	slices.SortFunc(tasks, func(l, r *api.TaskInfo) int { return cmp.Compare(l.UID, r.UID) })
	return tasks
}

// surplus lists the Bound and Running tasks job can lose while its ready
// members still meet minMember and every minTaskMember, in the order they
// are taken: of each role, the highest replica indexes first (then names,
// last first). Any first part of it may go as well. None when the gang is
// at its minimum.
func surplus(job *api.JobInfo) []*api.TaskInfo {
	spare := job.ReadyCount() - job.MinMember
	if spare <= 0 {
		return nil
	}
	ready := job.ReadyCountByRole()
	candidates := holding(job)
	slices.SortStableFunc(candidates, func(l, r *api.TaskInfo) int {
		return cmp.Or(cmp.Compare(l.Role, r.Role), -cmp.Compare(topology.ReplicaIndex(l), topology.ReplicaIndex(r)), -cmp.Compare(l.Name, r.Name))
	})
	var out []*api.TaskInfo
	for _, t := range candidates {
		if spare == 0 {
			break
		}
		if min, ok := job.MinTaskMember[t.Role]; ok && ready[t.Role] <= min {
			continue
		}
		out = append(out, t)
		ready[t.Role]--
		spare--
	}
	return out
}

// holdsNodes: some task is Bound or Running, each such task is on a node of
// the session (else its eviction could not be tried, and a gang is evicted
// whole or not at all), and none was placed in this session (undoing a
// placement is not an eviction).
func (p *preemptPass) holdsNodes(job *api.JobInfo) bool {
	holds := false
	for _, t := range job.Tasks {
		switch t.Status {
		case api.Allocated:
			return false
		case api.Bound, api.Running:
			if n, ok := p.ssn.Nodes[t.NodeName]; !ok || n.Tasks[t.UID] != t {
				return false
			}
			holds = true
		}
	}
	return holds
}

// finish gives back every trial placement, then commits the evictions and
// puts the terminating pods back: the session's nodes hold what they held
// before, the victims now Releasing. Then, preemptor by preemptor:
//
//   - one admitted that can be placed now and that is nominated (it
//     preempted in an earlier cycle, api.JobInfo.Nominated) is placed
//     here, before allocate walks the queues: allocate would give that
//     room to a gang of any queue it takes first, whatever its priority,
//     and the preemptor would preempt again;
//   - another admitted that can be placed now is left to allocate (its
//     placement held meanwhile, so that the ones after it do not count on
//     that room);
//   - one that can be placed now but that its queue's admission budget
//     keeps out is admitted if lower-priority gangs admitted and not
//     placed give their admission back (admitDisplacing); otherwise it
//     waits, as enqueue left it;
//   - one that cannot be placed now (some of its room is still held by
//     pods that are leaving) keeps, for the rest of the session, the room
//     of its trial placement that is free already
//     (framework.Session.Reserve): on each of its nodes what its members
//     there request, as far as it is idle, and in its queue their share.
//     Otherwise allocate would give that room to a gang after it, of lower
//     priority, on the nodes or in the queue's share, and once the pods had
//     left, the preemptor would find too little and evict again. This is
//     kube-scheduler's nominated node, held one session at a time: the next
//     session reserves again while the preemptor still waits. The gangs
//     that room keeps out give their admission back (revokeAdmissions).
//     Its members are nominated to the nodes of its trial (nominate), so
//     that the next sessions know it preempted.
//
// Last, the nominations of the gangs that keep no room are cleared
// (dropNominations).
func (p *preemptPass) finish() {
	trials := make([][]framework.Decision, len(p.held))
	for i := len(p.held) - 1; i >= 0; i-- {
		trials[i] = slices.Clone(p.held[i].stmt.Placements())
		p.held[i].stmt.Discard()
	}
	for _, ev := range p.evictions {
		ev.Commit()
	}
	p.future.Discard()

	var placeable []*framework.Statement
	var waiting []*api.JobInfo
	var competing []*api.JobInfo
	var fitBefore map[*api.JobInfo]bool
	for i, h := range p.held {
		// Asked before a placement makes the gang look admitted, and its
		// tasks no longer pending.
		admitted, nominated := p.ssn.MayAllocate(h.job), h.job.Nominated()
		pl, ok := p.placement(h.job, h.tasks)
		if ok && !admitted {
			// Its placement discarded, so that the budget does not count
			// it twice; placed again once admitted.
			pl.stmt.Discard()
			if !p.admitDisplacing(h.job) {
				p.kept[h.job] = true
				continue // its queue's budget keeps it out: it waits for admission
			}
			pl, ok = p.placement(h.job, h.tasks)
		}
		if ok && nominated {
			// It preempted for room in an earlier cycle, and the room is
			// free: placed now, before allocate's queue walk, which would
			// give it to a gang of a queue it takes first.
			pl.stmt.Commit()
			if h.job.Topology != nil {
				p.ssn.RecordTopology(h.job.UID, pl.outcome)
			}
			p.kept[h.job] = true
			continue
		}
		if ok {
			placeable = append(placeable, pl.stmt)
			continue
		}
		if waiting == nil {
			// Before the first reservation: which of the gangs that
			// could take the room fit without it.
			competing = p.competing()
			fitBefore = p.fitting(competing)
		}
		p.ssn.Reserve(trials[i])
		p.nominate(h.job, trials[i])
		waiting = append(waiting, h.job)
	}
	if len(waiting) > 0 {
		p.revokeAdmissions(waiting, competing, fitBefore)
	}
	discardAll(placeable)
	p.dropNominations()
}

// nominate records trial's nodes as its tasks' nominated nodes
// (framework.Session.Nominate), and clears the nomination of job's other
// pending tasks.
func (p *preemptPass) nominate(job *api.JobInfo, trial []framework.Decision) {
	p.kept[job] = true
	at := make(map[api.TaskID]string, len(trial))
	for _, d := range trial {
		at[d.Task.UID] = d.Node
	}
	var ds []framework.Decision
	for _, t := range job.Tasks {
		if t.Status == api.Pending {
			ds = append(ds, framework.Decision{Task: t, Node: at[t.UID]})
		}
	}
	p.ssn.Nominate(ds)
}

// dropNominations clears the nominated nodes of every gang that keeps no
// room after finish (not placed by it, not waiting for leaving pods, not
// waiting for admission): as kube-scheduler clears a preemptor's nominated
// node when preemption finds no room for it. Its next preemption
// nominates again.
func (p *preemptPass) dropNominations() {
	var stale []*api.JobInfo
	for _, job := range p.ssn.Jobs {
		if !p.kept[job] && job.Nominated() {
			stale = append(stale, job)
		}
	}
	slices.SortFunc(stale, func(a, b *api.JobInfo) int { return strings.Compare(string(a.UID), string(b.UID)) })
	for _, job := range stale {
		p.nominate(job, nil)
	}
}

// admitDisplacing admits job, a preemptor that can be placed now (finish
// asked) but that its queue's admission budget keeps out (framework.Session.
// JobEnqueueable), when gangs of its queue of lower priority, admitted and
// not placed, give their admission back, the lowest first, and that is
// enough for the budget; they go back to Pending, to be admitted again
// once there is room: Kueue's preemption of workloads admitted and not yet
// running, no pod deleted. Otherwise nothing changes. It reports whether
// job was admitted.
//
// Without this, such a gang held the budget while the preemptor's victims
// left; the preemptor then found the room free but was not admitted, and
// the gang took the room: the preemptor evicted again.
func (p *preemptPass) admitDisplacing(job *api.JobInfo) bool {
	ssn := p.ssn
	need := ssn.MinimalNeed(job)
	lower := p.lowerAdmissions(job)
	var undo []func()
	var displaced []*api.JobInfo
	for i := len(lower) - 1; i >= 0 && ssn.JobEnqueueable(job, &need) != nil; i-- {
		undo = append(undo, ssn.RevokeAdmission(lower[i]))
		displaced = append(displaced, lower[i])
	}
	if ssn.JobEnqueueable(job, &need) != nil {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return false
	}
	ssn.Admit(job)
	ssn.JobEnqueued(job, &need)
	for _, c := range displaced {
		ssn.RecordUnschedulable(c.UID, ReasonNotEnoughResources, fmt.Sprintf(
			"its admission went to %s, of higher priority in its queue, which fits now and which the queue's budget kept out", job.UID))
	}
	return true
}

// discardAll discards statements, the last first.
func discardAll(stmts []*framework.Statement) {
	for i := len(stmts) - 1; i >= 0; i-- {
		stmts[i].Discard()
	}
}

// admittedUnplaced lists the gangs admitted, this session or before, and
// not placed (framework.Session.Revocable), with pods pending, in the
// session's job order.
func (p *preemptPass) admittedUnplaced() []*api.JobInfo {
	if p.unplaced == nil {
		// Listed once a pass: what changes within it is only whether a
		// gang still holds its admission.
		p.unplaced = []*api.JobInfo{}
		for _, job := range p.ssn.Jobs {
			if p.ssn.Revocable(job) && job.HasPendingTasks() {
				p.unplaced = append(p.unplaced, job)
			}
		}
		slices.SortFunc(p.unplaced, p.ssn.JobCompare)
	}
	return slices.DeleteFunc(slices.Clone(p.unplaced), func(c *api.JobInfo) bool { return !p.ssn.Revocable(c) })
}

// competing lists the gangs that could take a waiting preemptor's room in
// allocate: those admitted and not placed, bar the preemptors.
func (p *preemptPass) competing() []*api.JobInfo {
	return slices.DeleteFunc(p.admittedUnplaced(), p.isPreemptor)
}

func (p *preemptPass) isPreemptor(job *api.JobInfo) bool {
	return slices.ContainsFunc(p.held, func(h trialPlacement) bool { return h.job == job })
}

// fitting reports which of jobs can be placed now, each on what the ones
// before it left, so that two gangs that each fit alone but not together
// are not both counted. It leaves no trace in the session.
func (p *preemptPass) fitting(jobs []*api.JobInfo) map[*api.JobInfo]bool {
	fit := map[*api.JobInfo]bool{}
	var kept []*framework.Statement
	for _, job := range jobs {
		tasks, ok := p.ssn.MinimalGang(job)
		if !ok || len(tasks) == 0 {
			continue
		}
		if pl, ok := p.place(job, tasks); ok {
			kept = append(kept, pl)
			fit[job] = true
		}
	}
	discardAll(kept)
	return fit
}

// revokeAdmissions takes back the admissions of the competing gangs that
// fitted before the room was reserved for the waiting preemptors and no
// longer fit: this session's (enqueue runs before preempt and saw the
// room free) and earlier ones (a gang admitted before its pods existed,
// say, on no room at all). An admitted gang counts against its queue's
// admission budget (framework.Session.JobEnqueueable) until placed: it
// could keep the preemptor from being admitted once the pods are gone,
// and then take the room itself. A gang with no member on a node gives its
// admission back at no cost, and a later session's enqueue admits it
// again once it fits. A gang that did not fit anyway, or that has no pods
// yet (admitted on its minResources), is left alone.
func (p *preemptPass) revokeAdmissions(waiting, competing []*api.JobInfo, fitBefore map[*api.JobInfo]bool) {
	ssn := p.ssn
	fitAfter := p.fitting(competing)
	names := make([]string, len(waiting))
	for i, w := range waiting {
		names[i] = string(w.UID)
	}
	for _, job := range competing {
		if !fitBefore[job] || fitAfter[job] {
			continue
		}
		ssn.RevokeAdmission(job)
		ssn.RecordUnschedulable(job.UID, ReasonNotEnoughResources, fmt.Sprintf(
			"the room it would take is kept for %s, which waits for pods leaving the nodes (preempted, or deleted otherwise) to fit",
			strings.Join(names, ", ")))
	}
}
