package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Config holds what the checkers must know of the system under test.
type Config struct {
	// PartialGrace is the scheduler's --partial-gang-grace-period.
	PartialGrace time.Duration
	// PartialMargin is what a gang may stay partial beyond the grace
	// while a scheduler leads: a cycle to notice, the deletes to land, a
	// loaded machine.
	PartialMargin time.Duration
	// WaitLimit is how long a gang may wait with room while no other
	// gang wants any and a scheduler leads (see waits.go).
	WaitLimit time.Duration
}

// Checker checks the invariants on the events it is fed. It is safe for
// concurrent use: the harness's watches feed it from their own goroutines.
type Checker struct {
	mu  sync.Mutex
	cfg Config

	pods  map[string]*podRecord // by UID, while the pod exists
	nodes map[string]Node
	// goneNodes are the nodes deleted and not back, by name: a pod bound
	// to one afterwards (a bind that raced the deletion: the API server
	// binds to a node name without looking it up) is lost with it.
	goneNodes map[string]bool
	jobs      map[string]*jobRecord // by UID, also after the job is gone
	groups    map[string]PodGroup   // by namespace/name
	gangs     map[string]*gangRecord

	// open holds the keys of violations that are still going on, so that
	// each is reported once per occurrence and reported again if it
	// recurs after it ended.
	open       map[string]bool
	violations []Violation

	schedulerDown *time.Time
	leaderless    []interval

	// expected are the jobs the driver created, deletedByDriver those it
	// deleted.
	expected        map[string]JobKey
	deletedByDriver map[string]bool

	stats Stats
	// touched is when the first event came since the waits were last
	// checked (checkWaits), zero if none came: they may have changed
	// since then.
	touched time.Time
}

// Stats are figures for the report.
type Stats struct {
	// LongestPartial is the longest time a gang was partial (some members
	// bound, the gang not whole), LongestPartialLed the same without the
	// time no scheduler led; Gang names the gang.
	LongestPartial, LongestPartialLed time.Duration
	LongestPartialGang                string
	// PartialEpisodes counts the times a gang became partial.
	PartialEpisodes int
	// GangJobs, GangRestarts and GangDisruptions are the gang-restarted
	// jobs checked and the sums of their status.gang counts.
	GangJobs, GangRestarts, GangDisruptions int
	// Breaks counts the member breaks in gang-restarted jobs that the
	// counts were checked against, by kind: a retryable failure, a
	// permanent one, a disruption.
	RetryableFailures, PermanentFailures, Disruptions int
	// FailuresAfterDecision counts members that failed after the
	// operator had stored its decision to restart their generation, or
	// the job's verdict: failures injected into a gang already being torn
	// down, which do not count (see restartCounts). (The teardown's own
	// deletions are not counted here.)
	FailuresAfterDecision int
	// ElasticReplacements counts the breaks of elastic jobs' members
	// that were replaced alone, owing no gang restart.
	ElasticReplacements int
	// BreakCauses counts the breaks that counted by what happened.
	BreakCauses map[string]int
	// Waits are the times gangs waited with room (waits.go).
	Waits WaitStats
}

type interval struct{ from, to time.Time }

type podRecord struct {
	cur Pod
	// firstNode is the first spec.nodeName the pod was seen with.
	firstNode string
	// broke: a break of this pod is recorded already (each pod breaks
	// once: later events are its consequences).
	broke bool
}

// breakKind is what happened to a member, as a bit set: a failure whose
// kind depends on a restart policy the checker does not know is both
// retryable and permanent.
type breakKind uint8

const (
	retryable breakKind = 1 << iota
	disruption
	permanent
)

func (k breakKind) String() string {
	var parts []string
	for _, b := range []struct {
		k    breakKind
		name string
	}{{retryable, "retryable failure"}, {disruption, "disruption"}, {permanent, "permanent failure"}} {
		if k&b.k != 0 {
			parts = append(parts, b.name)
		}
	}
	return strings.Join(parts, " or ")
}

// memberBreak is a member of a job that failed, was deleted while it
// ran, or lost its node.
type memberBreak struct {
	rv          uint64
	gen         int32
	pod         string
	replicaType string
	// failed: the pod reached phase Failed (with exitCode, disrupted);
	// otherwise it was deleted while active or its node went.
	failed    bool
	exitCode  *int32
	disrupted bool
	// reason is the DisruptionTarget condition's.
	reason string
	// nodeGone: its node was deleted.
	nodeGone bool
	what     string
	// replaced: a new pod of the same member and generation came after
	// it: the member was replaced alone, not by a gang restart.
	replaced bool
	// elasticOK: when it broke, its job was elastic, it was a member the
	// others do not depend on, and the gang kept its minimums without
	// it (elasticWhy says why not), so that it may be replaced alone.
	elasticOK  bool
	elasticWhy string
}

// cause names what happened, for the report's tally.
func (b memberBreak) cause() string {
	switch {
	case b.nodeGone:
		return "node deleted"
	case b.failed && b.exitCode != nil:
		return fmt.Sprintf("failed with exit code %d", *b.exitCode)
	case b.failed:
		return "failed"
	case b.disrupted:
		return "deleted, DisruptionTarget " + b.reason
	}
	return "deleted without a DisruptionTarget condition"
}

// kind classifies the break under the job's restart policies, as the
// gangPolicy documents them: under ExitCode, codes of 128 and above
// (killed by a signal) and failures without an exit code are retryable,
// others permanent; OnFailure retries every failure; Never none. A
// disruption is whatever put the member out from outside: a
// DisruptionTarget condition, a deletion while it was active, its node
// deleted.
func (b memberBreak) kind(policy map[string]string) breakKind {
	if !b.failed || b.disrupted {
		return disruption
	}
	switch policy[b.replicaType] {
	case "OnFailure", "Always":
		return retryable
	case "ExitCode":
		if b.exitCode == nil || *b.exitCode >= 128 {
			return retryable
		}
		return permanent
	case "Never":
		return permanent
	}
	return retryable | permanent
}

type jobRecord struct {
	cur  Job
	seen bool
	gone bool
	// genRV[g] is the resourceVersion of the first write that showed
	// status.gang.generation g or more: when the operator stored its
	// decision to restart the gang of generation g-1.
	genRV map[int32]uint64
	// restartCause[g] is what the operator said caused the restart into
	// generation g (status.gang.lastRestart as first seen with g).
	restartCause map[int32]string
	// finishedRV is that of the first write with a verdict.
	finishedRV uint64
	breaks     []memberBreak
}

type gangRecord struct {
	pods map[string]bool // UIDs of the pods that name the group
	// since is when the gang became partial; zero while it is not.
	since time.Time
	// wait is the gang's waiting with room (waits.go).
	wait waitRecord
	// what describes the partial state, for the violation.
	what string
}

// New returns a checker with nothing seen yet.
func New(cfg Config) *Checker {
	return &Checker{
		cfg:             cfg,
		pods:            map[string]*podRecord{},
		nodes:           map[string]Node{},
		goneNodes:       map[string]bool{},
		jobs:            map[string]*jobRecord{},
		groups:          map[string]PodGroup{},
		gangs:           map[string]*gangRecord{},
		open:            map[string]bool{},
		expected:        map[string]JobKey{},
		deletedByDriver: map[string]bool{},
	}
}

// Violations returns the violations found so far, in the order found.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// Stats returns the figures so far.
func (c *Checker) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Report records a violation found outside the checkers (a process that
// crashed).
func (c *Checker) Report(t time.Time, invariant, subject, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, Violation{Time: t, Invariant: invariant, Subject: subject, Message: msg})
}

// violate records a violation unless the same one (by key) is still open.
func (c *Checker) violate(t time.Time, key, invariant, subject, msg string) {
	if c.open[key] {
		return
	}
	c.open[key] = true
	c.violations = append(c.violations, Violation{Time: t, Invariant: invariant, Subject: subject, Message: msg})
}

// resolve closes a violation's occurrence: the next one is reported.
func (c *Checker) resolve(key string) { delete(c.open, key) }

// Created tells the checker the driver created a job: it must exist until
// the driver deletes it (Deleted), or the operator after its TTL.
func (c *Checker) Created(uid string, key JobKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expected[uid] = key
}

// Deleted tells the checker the driver deleted a job.
func (c *Checker) Deleted(uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletedByDriver[uid] = true
}

// SchedulerDown says no scheduler leads from t: the harness killed or
// stopped the leader, or saw it exit. The partial-gang clock does not run
// until SchedulerUp: nothing can complete or reclaim a gang meanwhile.
func (c *Checker) SchedulerDown(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.schedulerDown == nil {
		c.schedulerDown = &t
	}
}

// SchedulerUp says a scheduler leads again from t: the harness saw the
// Lease taken over.
func (c *Checker) SchedulerUp(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.schedulerDown != nil {
		c.leaderless = append(c.leaderless, interval{*c.schedulerDown, t})
		c.schedulerDown = nil
	}
}

// ledTime is how much of [from, to] a scheduler led.
func (c *Checker) ledTime(from, to time.Time) time.Duration {
	d := to.Sub(from)
	overlap := func(iv interval) {
		lo, hi := iv.from, iv.to
		if lo.Before(from) {
			lo = from
		}
		if hi.After(to) {
			hi = to
		}
		if hi.After(lo) {
			d -= hi.Sub(lo)
		}
	}
	for _, iv := range c.leaderless {
		overlap(iv)
	}
	if c.schedulerDown != nil {
		overlap(interval{*c.schedulerDown, to})
	}
	return d
}

func (c *Checker) job(uid string) *jobRecord {
	j := c.jobs[uid]
	if j == nil {
		j = &jobRecord{genRV: map[int32]uint64{}, restartCause: map[int32]string{}}
		c.jobs[uid] = j
	}
	return j
}

// Pod takes a pod's new state from the watch (added or updated).
//
// Resource versions: on a single etcd, the API server's resourceVersion
// is the etcd revision of the write, and revisions are one sequence over
// all keys. The checkers compare them across objects (a pod's failure
// against the job's restart decision) to order writes the watches
// deliver on separate streams. That holds for this cluster (one etcd)
// and is what the restart-count invariant relies on.
func (c *Checker) Pod(t time.Time, p Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pod(t, p, false)
}

// PodGone takes a pod's deletion: p is its last state, with the
// resourceVersion of the deletion.
func (c *Checker) PodGone(t time.Time, p Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pod(t, p, true)
}

func (c *Checker) pod(t time.Time, p Pod, gone bool) {
	c.touch(t)
	rec := c.pods[p.UID]
	var prev *Pod
	if rec == nil {
		rec = &podRecord{}
	} else {
		old := rec.cur
		prev = &old
	}
	c.checkBinding(t, rec, p)
	if prev == nil && !gone {
		c.noteReplacement(p)
	}
	c.noteBreak(rec, prev, p, gone)
	rec.cur = p
	if gone {
		delete(c.pods, p.UID)
	} else {
		c.pods[p.UID] = rec
	}
	c.checkGenerations(t, p.JobUID)
	c.checkMember(t, p)
	c.checkNode(t, p.Node)
	if prev != nil && prev.Node != p.Node {
		c.checkNode(t, prev.Node)
	}
	if p.Group != "" {
		key := p.Namespace + "/" + p.Group
		g := c.gangs[key]
		if g == nil {
			g = &gangRecord{pods: map[string]bool{}}
			c.gangs[key] = g
		}
		if gone {
			delete(g.pods, p.UID)
		} else {
			g.pods[p.UID] = true
		}
		c.checkGang(t, key)
	}
}

// checkBinding: a pod is bound once. Its spec.nodeName, once set, never
// changes (the API server refuses a second binding; a pod that moved
// would mean two binds reached it, or a pod recreated under the same
// UID).
func (c *Checker) checkBinding(t time.Time, rec *podRecord, p Pod) {
	if rec.firstNode == "" {
		rec.firstNode = p.Node
		return
	}
	if p.Node != rec.firstNode {
		c.violate(t, "bind/"+p.UID+"/"+p.Node, DoubleBind, podName(p),
			fmt.Sprintf("spec.nodeName changed from %q to %q", rec.firstNode, p.Node))
	}
}

// noteBreak records what happened to a member of a gang-restarted job
// (the first thing only: what follows is its consequence):
//   - it failed (phase Failed), unless it was being deleted already;
//   - it was bound to a node already deleted (NodeGone breaks the members
//     bound before the deletion);
//   - it was deleted (a deletionTimestamp, or gone without one) while
//     Pending or Running.
func (c *Checker) noteBreak(rec *podRecord, prev *Pod, p Pod, gone bool) {
	if rec.broke || p.JobUID == "" {
		return
	}
	wasTerminating := prev != nil && prev.Terminating
	wasTerminal := prev != nil && prev.Terminal()
	b := memberBreak{rv: p.RV, gen: p.Generation, pod: p.Name, replicaType: p.ReplicaType}
	switch {
	case p.Phase == corev1.PodFailed && !wasTerminal && !wasTerminating:
		b.failed, b.exitCode, b.disrupted, b.reason = true, p.ExitCode, p.Disrupted, p.DisruptionReason
		b.what = "failed"
		if p.ExitCode != nil {
			b.what += fmt.Sprintf(" with exit code %d", *p.ExitCode)
		}
		if p.Disrupted {
			b.what += " (DisruptionTarget)"
		}
	case p.Node != "" && (prev == nil || prev.Node == "") && c.goneNodes[p.Node] && !p.Terminal() && !p.Terminating && !gone:
		b.nodeGone = true
		b.what = "bound to node " + p.Node + " after it was deleted"
	case (p.Terminating || gone) && !wasTerminating && !p.Terminal() && !wasTerminal:
		b.disrupted, b.reason = p.Disrupted, p.DisruptionReason
		b.what = "deleted while " + string(p.Phase)
		if p.Disrupted {
			b.what += " (DisruptionTarget)"
		}
	default:
		return
	}
	rec.broke = true
	b.elasticOK, b.elasticWhy = c.elasticKeeps(p)
	j := c.job(p.JobUID)
	j.breaks = append(j.breaks, b)
}

// noteReplacement marks the breaks of a new pod's member in its own
// generation as replaced: the member came back without a gang restart.
func (c *Checker) noteReplacement(p Pod) {
	if p.JobUID == "" {
		return
	}
	j := c.job(p.JobUID)
	for i := range j.breaks {
		if b := &j.breaks[i]; b.pod == p.Name && b.gen == p.Generation && b.rv < p.RV {
			b.replaced = true
		}
	}
}

// checkGenerations: no pod of generation n+1 exists while one of
// generation n of the same job does (any phase: a Failed pod still
// exists until it is deleted).
func (c *Checker) checkGenerations(t time.Time, jobUID string) {
	if jobUID == "" {
		return
	}
	byGen := map[int32][]string{}
	for _, r := range c.pods {
		if r.cur.JobUID == jobUID {
			byGen[r.cur.Generation] = append(byGen[r.cur.Generation], r.cur.Name)
		}
	}
	key := "gen/" + jobUID
	if len(byGen) < 2 {
		c.resolve(key)
		return
	}
	gens := slices.Sorted(maps.Keys(byGen))
	var parts []string
	for _, g := range gens {
		names := byGen[g]
		sort.Strings(names)
		parts = append(parts, fmt.Sprintf("generation %d: %s", g, strings.Join(names, ", ")))
	}
	c.violate(t, key, MixedGenerations, c.jobName(jobUID), "pods of two generations exist at once: "+strings.Join(parts, "; "))
}

// live reports whether a pod may be running its member's program: not
// finished, and not deleted before it reached a node.
func live(p Pod) bool { return !p.Terminal() && (!p.Terminating || p.Node != "") }

// checkMember: no two live pods for one member (job, replica type,
// index).
func (c *Checker) checkMember(t time.Time, p Pod) {
	if p.JobUID == "" || p.ReplicaType == "" {
		return
	}
	var names []string
	for _, r := range c.pods {
		q := r.cur
		if q.JobUID == p.JobUID && q.ReplicaType == p.ReplicaType && q.Index == p.Index && live(q) {
			names = append(names, q.Name+" ("+q.UID+")")
		}
	}
	key := "member/" + p.JobUID + "/" + p.ReplicaType + "/" + p.Index
	if len(names) < 2 {
		c.resolve(key)
		return
	}
	sort.Strings(names)
	c.violate(t, key, DuplicateMember, fmt.Sprintf("%s %s-%s", c.jobName(p.JobUID), p.ReplicaType, p.Index),
		"live pods for one member: "+strings.Join(names, ", "))
}

// Usage is what a node's bound pods request.
type Usage struct {
	Requests corev1.ResourceList
	Pods     []string
}

// nodeUsage sums the requests of the pods bound to the node that have not
// finished, terminating ones included: their containers may still run,
// and kube-scheduler and the kubelet count them too.
func (c *Checker) nodeUsage(node string) Usage {
	u := Usage{Requests: corev1.ResourceList{}}
	for _, r := range c.pods {
		p := r.cur
		if p.Node != node || p.Terminal() {
			continue
		}
		u.Pods = append(u.Pods, p.Namespace+"/"+p.Name)
		for name, q := range p.Requests {
			sum := u.Requests[name]
			sum.Add(q)
			u.Requests[name] = sum
		}
	}
	sort.Strings(u.Pods)
	return u
}

// checkNode: no node over-committed: for every resource, the requests of
// its bound, unfinished pods add up to no more than its allocatable. A
// node that does not exist (deleted, not yet back) has nothing to
// overcommit.
func (c *Checker) checkNode(t time.Time, name string) {
	n, ok := c.nodes[name]
	if name == "" || !ok {
		return
	}
	u := c.nodeUsage(name)
	var over []string
	for _, res := range slices.Sorted(maps.Keys(u.Requests)) {
		used := u.Requests[res]
		alloc, has := n.Allocatable[res]
		if !has {
			alloc = resource.Quantity{}
		}
		if used.Cmp(alloc) > 0 {
			over = append(over, fmt.Sprintf("%s %s > allocatable %s", res, used.String(), alloc.String()))
		}
	}
	key := "node/" + name
	if len(over) == 0 {
		c.resolve(key)
		return
	}
	c.violate(t, key, OverCommit, "node "+name, strings.Join(over, ", ")+"; pods: "+strings.Join(u.Pods, ", "))
}

// Node takes a node's new state.
func (c *Checker) Node(t time.Time, n Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[n.Name] = n
	delete(c.goneNodes, n.Name)
	c.touch(t)
	c.checkNode(t, n.Name)
}

// NodeGone takes a node's deletion, at resourceVersion rv: the members of
// gang-restarted jobs that were active on it break (their node is lost).
func (c *Checker) NodeGone(t time.Time, name string, rv uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
	c.goneNodes[name] = true
	c.touch(t)
	c.resolve("node/" + name)
	// Every member on the node breaks at once: each is judged without
	// the others (elasticKeeps).
	var lost []Pod
	for _, r := range c.pods {
		p := r.cur
		if p.Node != name || r.broke || p.JobUID == "" || p.Terminal() || p.Terminating {
			continue
		}
		r.broke = true
		lost = append(lost, p)
	}
	for _, p := range lost {
		b := memberBreak{rv: rv, gen: p.Generation, pod: p.Name, replicaType: p.ReplicaType, nodeGone: true, what: "its node " + name + " was deleted"}
		b.elasticOK, b.elasticWhy = c.elasticKeeps(p)
		j := c.job(p.JobUID)
		j.breaks = append(j.breaks, b)
	}
}

// Job takes a job's new state.
func (c *Checker) Job(t time.Time, jb Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := c.job(jb.UID)
	prevGen := j.cur.Generation
	if !j.seen {
		prevGen = 0
	}
	for g := prevGen + 1; g <= jb.Generation; g++ {
		if _, ok := j.genRV[g]; !ok {
			j.genRV[g] = jb.RV
		}
	}
	if _, ok := j.restartCause[jb.Generation]; !ok && jb.Generation > 0 {
		j.restartCause[jb.Generation] = jb.LastRestart
	}
	if jb.Finished() && j.finishedRV == 0 {
		j.finishedRV = jb.RV
	}
	j.cur, j.seen = jb, true
	c.touch(t)
	if jb.Failed && jb.Reason == "" {
		c.violate(t, "reason/"+jb.UID, FailedWithoutWhy, jb.Key.String(), "the Failed condition has no reason")
	}
	c.checkGangsOf(t, jb.UID)
}

// JobGone takes a job's deletion.
func (c *Checker) JobGone(t time.Time, uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.job(uid).gone = true
	c.touch(t)
	c.checkGangsOf(t, uid)
}

// PodGroup takes a PodGroup's new state.
func (c *Checker) PodGroup(t time.Time, g PodGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := g.Namespace + "/" + g.Name
	c.groups[key] = g
	c.touch(t)
	if c.gangs[key] == nil {
		c.gangs[key] = &gangRecord{pods: map[string]bool{}}
	}
	c.checkGang(t, key)
}

// PodGroupGone takes a PodGroup's deletion.
func (c *Checker) PodGroupGone(t time.Time, namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := namespace + "/" + name
	delete(c.groups, key)
	c.touch(t)
	c.checkGang(t, key)
}

func (c *Checker) checkGangsOf(t time.Time, jobUID string) {
	for key, g := range c.groups {
		if g.OwnerUID == jobUID {
			c.checkGang(t, key)
		}
	}
}

// partialState says whether the gang is partial in the sense the
// scheduler promises to end within its grace period, and how.
//
// A gang is the pods that name a PodGroup, measured against its
// minMember and minTaskMember. It is partial when some members hold
// nodes (bound, not finished, not being deleted) and those with the
// members that succeeded fall short of minMember, or of a role's
// minTaskMember. It is not the scheduler's to end, and so not counted,
// when:
//   - the PodGroup does not exist (between a gang restart's teardown and
//     the next generation, the operator's work), or its job has
//     finished, is being deleted or is gone (clean-up is the operator's
//     and the garbage collector's);
//   - a member failed and the gang can no longer become whole from what
//     is there (what succeeded, holds a node or waits for one): its
//     controller must decide first (recreate the member, restart the
//     gang, fail the job), as the scheduler leaves such a gang alone.
func (c *Checker) partialState(key string) (bool, string) {
	g, ok := c.groups[key]
	if !ok {
		return false, ""
	}
	if j := c.jobs[g.OwnerUID]; j != nil && (j.gone || j.cur.Finished() || j.cur.Deleting) {
		return false, ""
	}
	var bound, done, failed, waiting int32
	byRole := map[string]int32{}
	for uid := range c.gangs[key].pods {
		r := c.pods[uid]
		if r == nil {
			continue
		}
		p := r.cur
		switch {
		case p.Phase == corev1.PodSucceeded:
			done++
			byRole[p.Role]++
		case p.Phase == corev1.PodFailed:
			failed++
		case p.Terminating:
		case p.Node != "":
			bound++
			byRole[p.Role]++
		default:
			waiting++
		}
	}
	if bound == 0 {
		return false, ""
	}
	var short []string
	if bound+done < g.MinMember {
		short = append(short, fmt.Sprintf("%d of minMember %d members bound or done", bound+done, g.MinMember))
	}
	for _, role := range slices.Sorted(maps.Keys(g.MinTaskMember)) {
		if n, min := byRole[role], g.MinTaskMember[role]; n < min {
			short = append(short, fmt.Sprintf("%s: %d of minTaskMember %d", role, n, min))
		}
	}
	if len(short) == 0 {
		return false, ""
	}
	if failed > 0 && done+bound+waiting < g.MinMember {
		return false, ""
	}
	return true, strings.Join(short, "; ") + fmt.Sprintf(" (%d waiting for a node)", waiting)
}

// checkGang starts or ends a partial episode of the gang.
func (c *Checker) checkGang(t time.Time, key string) {
	g := c.gangs[key]
	if g == nil {
		return
	}
	partial, what := c.partialState(key)
	switch {
	case partial && g.since.IsZero():
		g.since, g.what = t, what
		c.stats.PartialEpisodes++
	case partial:
		g.what = what
	case !g.since.IsZero():
		c.endPartial(t, key, g)
	}
	if len(g.pods) == 0 && g.since.IsZero() {
		if _, ok := c.groups[key]; !ok {
			c.endWait(t, key, g)
			delete(c.gangs, key)
		}
	}
}

func (c *Checker) endPartial(t time.Time, key string, g *gangRecord) {
	c.notePartial(key, g.since, t)
	g.since, g.what = time.Time{}, ""
	c.resolve("partial/" + key)
}

func (c *Checker) notePartial(key string, since, now time.Time) {
	raw, led := now.Sub(since), c.ledTime(since, now)
	if led > c.stats.LongestPartialLed || (led == c.stats.LongestPartialLed && raw > c.stats.LongestPartial) {
		c.stats.LongestPartialLed, c.stats.LongestPartial, c.stats.LongestPartialGang = led, raw, key
	}
}

// Tick runs the clock-driven checks: a gang partial for longer than the
// grace period and the margin, counting only the time a scheduler led;
// the waits with room (waits.go), looked at again if anything changed.
func (c *Checker) Tick(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.touched.IsZero() {
		c.checkWaits(t)
	}
	c.waitClocks(t)
	limit := c.cfg.PartialGrace + c.cfg.PartialMargin
	for _, key := range slices.Sorted(maps.Keys(c.gangs)) {
		g := c.gangs[key]
		if g.since.IsZero() {
			continue
		}
		c.notePartial(key, g.since, t)
		if led := c.ledTime(g.since, t); led > limit {
			c.violate(t, "partial/"+key, PartialGang, "gang "+key, fmt.Sprintf(
				"partial since %s (%s, %s of it with a scheduler leading; limit %s = grace %s + margin %s): %s",
				g.since.UTC().Format("15:04:05.000"), t.Sub(g.since).Round(100*time.Millisecond), led.Round(100*time.Millisecond),
				limit, c.cfg.PartialGrace, c.cfg.PartialMargin, g.what))
		}
	}
}

func (c *Checker) jobName(uid string) string {
	if j := c.jobs[uid]; j != nil && j.seen {
		return j.cur.Key.String()
	}
	if k, ok := c.expected[uid]; ok {
		return k.String()
	}
	return "job " + uid
}

func podName(p Pod) string { return "pod " + p.Namespace + "/" + p.Name }

// elasticKeeps judges a member of an elastic job that just broke (its
// record already marked broken): it may be replaced alone only if it is
// a worker the others do not depend on (not the master; not worker 0
// while it hosts the c10d rendezvous) and the gang keeps its minimums
// without it: of its generation, the members that hold a node (bound,
// not finished, not being deleted) or succeeded, and have not broken,
// number at least the master and elasticPolicy.minReplicas, and the
// workers among them at least minReplicas. A member that breaks while
// another's replacement is not yet bound is judged without both.
func (c *Checker) elasticKeeps(p Pod) (bool, string) {
	j := c.jobs[p.JobUID]
	if j == nil || !j.seen || !j.cur.Elastic {
		return false, "its job is not elastic"
	}
	e := j.cur
	switch {
	case p.ReplicaType != "worker":
		return false, "it is the " + p.ReplicaType + ", which is not elastic"
	case p.Index == "0" && e.Worker0Hosts:
		return false, "worker 0 hosts the c10d rendezvous"
	}
	var kept, workers int32
	for _, r := range c.pods {
		q := r.cur
		if q.JobUID != p.JobUID || q.Generation != p.Generation || r.broke {
			continue
		}
		if q.Phase == corev1.PodSucceeded || (q.Node != "" && !q.Terminal() && !q.Terminating) {
			kept++
			if q.ReplicaType == "worker" {
				workers++
			}
		}
	}
	if kept < e.ElasticMinMember || workers < e.ElasticMinWorkers {
		return false, fmt.Sprintf("the gang kept %d members (%d workers) without it, below its minimum of %d (%d workers)",
			kept, workers, e.ElasticMinMember, e.ElasticMinWorkers)
	}
	return true, ""
}
