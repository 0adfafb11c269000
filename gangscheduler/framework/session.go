package framework

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Session is one scheduling cycle over a snapshot. It owns the snapshot and
// changes it as statements place tasks; nothing outside it sees those
// changes until committed Decisions are bound.
type Session struct {
	*api.Snapshot

	plugins []Plugin

	staticPredicates  []PredicateFn
	dynamicPredicates []dynamicPredicate
	nodeOrders        []NodeOrderFn
	jobOrders         []JobOrderFn
	taskOrders        []TaskOrderFn
	queueOrders       []QueueOrderFn
	jobReady          []JobReadyFn
	jobValid          []JobValidFn
	holdFns           []HoldFn
	holdLimit         int

	cache predicateCache
	// indexes answer BestNode per class signature (best_index.go);
	// changed lists the nodes whose state changed in the session, by
	// Index, in order, for them to catch up with.
	indexes map[indexKey]*bestIndex
	changed []int32
	// rooms answer DomainRoom per class signature and tree
	// (domain_room.go), catching up with changed as the indexes do.
	rooms map[roomKey]*domainRoom
	// labels are the nodes with a label, for CandidateNodes.
	labels labelNodes

	bindings []Decision
	// onCommit, if set, receives each committed statement's placements
	// (OnCommit).
	onCommit func([]Decision)
	// next is the action Run executes after the one executing now.
	next          Action
	evictions     []Eviction
	unschedulable map[api.JobID]Unschedulable
	admitted      map[api.JobID]bool
	// revoked are the jobs whose admission of an earlier session this
	// session took back (RevokeAdmission).
	revoked  map[api.JobID]bool
	partial  map[api.JobID]PartialGang
	topology map[api.JobID]TopologyOutcome
	// holds are the nodes each job holds (Hold).
	holds map[api.JobID][]*api.NodeInfo
	// reserved are the nodes with room reserved (Reserve), and
	// reservedTasks the tasks it was reserved for.
	reserved      []*api.NodeInfo
	reservedTasks []*api.TaskInfo
	// nominations are the nominated nodes the session changes (Nominate),
	// by task, in the order first changed.
	nominations     map[api.TaskID]int
	nominationOrder []Decision
	// honoured maps the pod features plugins honour to the plugin (Honour).
	honoured map[api.PodFeature]string
	// pending are the jobs' pending tasks in task order, as PendingTasks
	// last listed them.
	pending map[*api.JobInfo][]*api.TaskInfo

	preferences []Preference
	// Scratch space of BestNode, reused from search to search.
	prefScratch  []*Preference
	nodeScratch  []*api.NodeInfo
	scoreScratch []int64
	rawScratch   []int64
	// labelSensitive: some predicate matches other pods' selectors against
	// a task's labels (SetLabelSensitive).
	labelSensitive bool

	// ext holds the queue-share pipeline's extension points (extensions.go).
	ext extensions
}

// Unschedulable says why a job got nothing (or not everything) this
// session: a CamelCase reason for the PodGroup condition and a message for
// people. Reasons use the PodGroup API's words (NotEnoughResources,
// NotEnoughPods, NotEnoughPodsOfTask, QueueNotFound, QueueClosed).
type Unschedulable struct {
	Reason  string
	Message string
}

// Stats counts the session's predicate work, so tests and benchmarks can show
// that it scales with equivalence classes x nodes rather than pods x nodes.
type Stats struct {
	// Classes is the number of equivalence classes seen.
	Classes int
	// PredicateEvaluations is how often the static predicates ran: at most
	// once per (class, node).
	PredicateEvaluations int64
	// CacheHits is how often a static result came from the cache.
	CacheHits int64
	// DynamicChecks is how often the dynamic predicates (resources, ports,
	// pod count) ran against a node's current state.
	DynamicChecks int64
}

// OpenSession opens a session on snap with plugins, in order: each
// registers its functions. Order matters where answers combine by "first
// non-zero wins" (job, task and queue order).
func OpenSession(snap *api.Snapshot, plugins ...Plugin) *Session {
	ssn := &Session{
		Snapshot:      snap,
		plugins:       plugins,
		unschedulable: map[api.JobID]Unschedulable{},
	}
	ssn.cache.init()
	ssn.labels = labelNodes{}
	for _, p := range plugins {
		p.OnSessionOpen(ssn)
	}
	return ssn
}

// Run executes actions in order.
func (ssn *Session) Run(actions ...Action) {
	for i, a := range actions {
		ssn.next = nil
		if i+1 < len(actions) {
			ssn.next = actions[i+1]
		}
		a.Execute(ssn)
	}
	ssn.next = nil
}

// NextAction is the action Run executes right after the one executing now:
// nil after the last one, or for an action executed on its own. An action
// may do part of the next one's work where it can show the next one would
// do it the same (actions.Enqueue commits for allocate).
func (ssn *Session) NextAction() Action { return ssn.next }

// AddStaticPredicateFn registers a predicate whose answer depends only on
// the node object and the fields of the pod in its class signature
// (api.TaskInfo.ClassSignature): node selector and affinity, taints,
// unschedulable. Its answer is cached per (equivalence class, node) and it
// may be called with any task of the class.
func (ssn *Session) AddStaticPredicateFn(fn PredicateFn) {
	ssn.staticPredicates = append(ssn.staticPredicates, fn)
}

// AddPredicateFn registers a predicate that reads what changes as tasks are
// placed (idle resources, pod count, host ports in use). It runs on every
// check, so it must be cheap.
func (ssn *Session) AddPredicateFn(fn PredicateFn) {
	ssn.dynamicPredicates = append(ssn.dynamicPredicates, dynamicPredicate{fn: fn})
}

// AddNodeLocalPredicateFn registers a dynamic predicate whose answer for a
// node reads nothing but that node's state (the tasks on it, what they
// take) and the fields of the task that its class signature fixes: the
// resource fit, host ports. BestNode then keeps its answers per signature
// and asks again only for the nodes that changed (bestIndex).
func (ssn *Session) AddNodeLocalPredicateFn(fn PredicateFn) {
	ssn.dynamicPredicates = append(ssn.dynamicPredicates, dynamicPredicate{fn: fn, nodeLocal: true})
}

// AddPredicateFnFor registers a dynamic predicate that only has something
// to say about the tasks applies accepts: the others' checks skip it
// altogether. applies must depend only on what the class signature fixes
// (api.TaskInfo.ClassSignature: requests, selectors, affinity, spread
// constraints, tolerations, ports) and on what the plugin knew when the
// session opened: it is asked once per class.
func (ssn *Session) AddPredicateFnFor(fn PredicateFn, applies func(*api.TaskInfo) bool) {
	ssn.dynamicPredicates = append(ssn.dynamicPredicates, dynamicPredicate{fn: fn, applies: applies})
}

// dynamicPredicate is a dynamic predicate and the tasks it applies to
// (all when applies is nil).
type dynamicPredicate struct {
	fn      PredicateFn
	applies func(*api.TaskInfo) bool
	// nodeLocal: see AddNodeLocalPredicateFn.
	nodeLocal bool
}

// dynamicFor returns the dynamic predicates that apply to task, and
// whether all of them are node-local.
func (ssn *Session) dynamicFor(task *api.TaskInfo) (fns []PredicateFn, nodeLocal bool) {
	out := make([]PredicateFn, 0, len(ssn.dynamicPredicates))
	nodeLocal = true
	for _, p := range ssn.dynamicPredicates {
		if p.applies == nil || p.applies(task) {
			out = append(out, p.fn)
			nodeLocal = nodeLocal && p.nodeLocal
		}
	}
	return out, nodeLocal
}

// AddNodeOrderFn registers a node score. It must read nothing but the node
// (its object and state) and the fields of the task that its class
// signature fixes: BestNode keeps scores per signature and recomputes a
// node's only when the node changes (bestIndex). A score that reads other
// nodes or other pods is a Preference.
func (ssn *Session) AddNodeOrderFn(fn NodeOrderFn) { ssn.nodeOrders = append(ssn.nodeOrders, fn) }

// AddJobOrderFn registers a job order.
func (ssn *Session) AddJobOrderFn(fn JobOrderFn) { ssn.jobOrders = append(ssn.jobOrders, fn) }

// AddTaskOrderFn registers a task order.
func (ssn *Session) AddTaskOrderFn(fn TaskOrderFn) { ssn.taskOrders = append(ssn.taskOrders, fn) }

// AddQueueOrderFn registers a queue order.
func (ssn *Session) AddQueueOrderFn(fn QueueOrderFn) { ssn.queueOrders = append(ssn.queueOrders, fn) }

// AddJobReadyFn registers a readiness rule; a job is ready when all say so.
func (ssn *Session) AddJobReadyFn(fn JobReadyFn) { ssn.jobReady = append(ssn.jobReady, fn) }

// AddJobValidFn registers a validity rule; a job is valid when none objects.
func (ssn *Session) AddJobValidFn(fn JobValidFn) { ssn.jobValid = append(ssn.jobValid, fn) }

// Predicate says whether task fits node now: the cached static answer for
// the task's class, then the dynamic predicates.
func (ssn *Session) Predicate(task *api.TaskInfo, node *api.NodeInfo) Status {
	return ssn.PredicateWithClass(ssn.ClassOf(task), task, node)
}

// PredicateWithClass is Predicate for a caller that looked the task's class
// up once (ClassOf) and checks many nodes.
func (ssn *Session) PredicateWithClass(cls *Class, task *api.TaskInfo, node *api.NodeInfo) Status {
	if s := ssn.staticStatus(cls, task, node); !s.Fit {
		return s
	}
	ssn.cache.stats.DynamicChecks++
	var dynamic []PredicateFn
	if cls != nil {
		dynamic = cls.dynamic
	} else {
		dynamic, _ = ssn.dynamicFor(task)
	}
	for _, fn := range dynamic {
		if s := fn(task, node); !s.Fit {
			return s
		}
	}
	return Fit
}

func (ssn *Session) evalStatic(task *api.TaskInfo, node *api.NodeInfo) Status {
	ssn.cache.stats.PredicateEvaluations++
	for _, fn := range ssn.staticPredicates {
		if s := fn(task, node); !s.Fit {
			return s
		}
	}
	return Fit
}

// NodeScore is the sum of the node order scores of task on node.
func (ssn *Session) NodeScore(task *api.TaskInfo, node *api.NodeInfo) int64 {
	var score int64
	for _, fn := range ssn.nodeOrders {
		score += fn(task, node)
	}
	return score
}

// JobCompare orders jobs by the registered job orders, then older first,
// then by UID, so the order is total and deterministic. The age fallback
// lives here rather than in a plugin so that every registered order (PodGroup
// priority, then dominant resource share) gets its say before age does.
func (ssn *Session) JobCompare(l, r *api.JobInfo) int {
	for _, fn := range ssn.jobOrders {
		if c := fn(l, r); c != 0 {
			return c
		}
	}
	if c := l.CreationTimestamp.Compare(r.CreationTimestamp); c != 0 {
		return c
	}
	return cmp.Compare(l.UID, r.UID)
}

// TaskCompare orders tasks by the registered task orders, then by
// api.TaskLess.
func (ssn *Session) TaskCompare(l, r *api.TaskInfo) int {
	for _, fn := range ssn.taskOrders {
		if c := fn(l, r); c != 0 {
			return c
		}
	}
	switch {
	case api.TaskLess(l, r):
		return -1
	case api.TaskLess(r, l):
		return 1
	}
	return 0
}

// QueueCompare orders queues by the registered queue orders, then by name.
func (ssn *Session) QueueCompare(l, r *api.QueueInfo) int {
	for _, fn := range ssn.queueOrders {
		if c := fn(l, r); c != 0 {
			return c
		}
	}
	return cmp.Compare(l.Name, r.Name)
}

// JobReady says whether job may bind what it has placed. With no readiness
// rule registered every job is ready: gang semantics come from the gang
// plugin.
func (ssn *Session) JobReady(job *api.JobInfo) bool {
	for _, fn := range ssn.jobReady {
		if !fn(job) {
			return false
		}
	}
	return true
}

// JobValid returns why job cannot be scheduled at all, or nil. Besides
// the registered rules, it always refuses a gang that is being preempted
// while some members still hold nodes (see preemptedStillHeld), and one
// whose pending pod carries a placement rule that no plugin honours or
// that does not parse (Honour): all-or-nothing, and no rule silently
// ignored, are not for a configuration to leave out.
func (ssn *Session) JobValid(job *api.JobInfo) *ValidateResult {
	if r := preemptedStillHeld(job); r != nil {
		return r
	}
	if r := ssn.unsupported(job); r != nil {
		return r
	}
	for _, fn := range ssn.jobValid {
		if r := fn(job); r != nil {
			return r
		}
	}
	return nil
}

// Statement opens a statement for tentative placements.
func (ssn *Session) Statement() *Statement {
	return &Statement{ssn: ssn}
}

// OnCommit registers fn to receive each statement's placements the moment
// the statement is committed, in commit order, while the session goes on:
// the scheduler starts a gang's binds as soon as the gang is decided
// rather than after the whole backlog is. A commit is final (nothing in a
// session undoes it: a later eviction is a decision of its own), so what
// fn receives is exactly what Bindings returns at the end, in order. fn
// runs on the session's goroutine and must not change the session. What
// it hands to other goroutines may be read there while the session goes
// on only where a commit fixes it: the Decision's own fields and its
// task's Pod, UID and Job (the session keeps writing the task's status
// fields).
func (ssn *Session) OnCommit(fn func([]Decision)) { ssn.onCommit = fn }

// Bindings returns every committed decision so far, in commit order.
func (ssn *Session) Bindings() []Decision {
	return slices.Clone(ssn.bindings)
}

// Stats returns the predicate counters.
func (ssn *Session) Stats() Stats {
	s := ssn.cache.stats
	s.Classes = ssn.cache.classes
	return s
}

// RecordUnschedulable keeps why job got nothing (or not all it asked for)
// this session, for the PodGroup status written after the session. The last
// record wins.
func (ssn *Session) RecordUnschedulable(job api.JobID, reason, message string) {
	ssn.unschedulable[job] = Unschedulable{Reason: reason, Message: message}
}

// Unschedulable returns the records of RecordUnschedulable.
func (ssn *Session) Unschedulable() map[api.JobID]Unschedulable {
	return maps.Clone(ssn.unschedulable)
}

// FitSummary counts, over every node, why task does not fit there.
type FitSummary struct {
	Nodes   int
	Fit     int
	Reasons map[Status]int
}

// Diagnose summarises task's fit over all nodes. It is for the failure path
// (once per class that found no node), never per node on the hot path.
func (ssn *Session) Diagnose(task *api.TaskInfo) FitSummary {
	f := FitSummary{Nodes: len(ssn.NodeList), Reasons: map[Status]int{}}
	cls := ssn.ClassOf(task)
	for _, n := range ssn.NodeList {
		if s := ssn.PredicateWithClass(cls, task, n); s.Fit {
			f.Fit++
		} else {
			f.Reasons[heldFrom(task, n, s)]++
		}
	}
	return f
}

// String reads like kube-scheduler's FitError: "0/3 nodes are available:
// 2 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)." Most
// frequent reason first, ties by text.
func (f FitSummary) String() string {
	type kv struct {
		reason string
		n      int
	}
	var rs []kv
	for s, n := range f.Reasons {
		rs = append(rs, kv{s.String(), n})
	}
	slices.SortFunc(rs, func(a, b kv) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d nodes are available", f.Fit, f.Nodes)
	for i, r := range rs {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%d %s", sep, r.n, r.reason)
	}
	b.WriteString(".")
	return b.String()
}
