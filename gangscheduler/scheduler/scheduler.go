// Package scheduler is the scheduling loop. Each cycle takes a snapshot of
// the cache, opens a session on it with the configured plugins, runs the
// configured actions, and then commits: binds the decisions and writes each
// gang's and queue's status. Everything up to the commit is a pure function
// of the snapshot; the commit is the only place with side effects.
package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/actions"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/binder"
	"github.com/troupe-ml/troupe/gangscheduler/cache"
	"github.com/troupe-ml/troupe/gangscheduler/eventsink"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/internal/parallel"
	"github.com/troupe-ml/troupe/gangscheduler/internal/threadcpu"
	"github.com/troupe-ml/troupe/gangscheduler/metrics"
	"github.com/troupe-ml/troupe/gangscheduler/status"
)

// Defaults of Options.
const (
	DefaultMinCyclePeriod = 100 * time.Millisecond
	DefaultMaxIdlePeriod  = time.Second
	// DefaultUnschedulableRefresh is kube-scheduler's longest backoff for
	// an unschedulable pod (podMaxBackoffSeconds): how stale its view of
	// why a pod waits may be, and so how stale a waiting gang's may be.
	DefaultUnschedulableRefresh = 10 * time.Second
	// DefaultBindsSeenWait bounds how long a cycle's status writes wait
	// for the informer to show its binds (cache.AwaitBound): a watch that
	// lags longer must not hold the next cycle back.
	DefaultBindsSeenWait = 2 * time.Second
)

// Options configure the loop.
type Options struct {
	Actions []framework.Action
	Plugins []framework.Plugin
	// MinCyclePeriod is the least time between the starts of two cycles.
	// Changes that arrive meanwhile are folded into the next cycle, so a
	// burst of pod creations costs one cycle, not one per pod.
	MinCyclePeriod time.Duration
	// MaxIdlePeriod is the most time between two cycles when nothing
	// changes: time alone can change a gang's status (its schedule
	// timeout falls due).
	MaxIdlePeriod time.Duration
	// EventGate, if set, is held while a cycle commits: the events the
	// scheduler records wait for it (eventsink.Sink), so that a burst of
	// binds does not share the API server with its own events.
	EventGate *eventsink.Gate
	// UnschedulableRefresh is the least time between two writes of a new
	// reason or message into the Unschedulable condition of a gang that
	// stays unschedulable (status.Gang.QuietUntil); 0 writes every change.
	UnschedulableRefresh time.Duration
	// PartialGangGrace is how long a gang may stay partial before its
	// members on nodes are reclaimed (actions.PartialGangs); negative
	// means actions.DefaultPartialGangGrace.
	PartialGangGrace time.Duration
	// BindsSeenWait is the longest a cycle's status writes wait for the
	// pod informer to show the cycle's binds (0: DefaultBindsSeenWait;
	// negative: they do not wait).
	BindsSeenWait time.Duration
	// StartAfter, if set, runs once the caches have synced and before the
	// first cycle, which waits for it to return.
	StartAfter func(ctx context.Context)
	// Fence, if set, is asked whether this replica still leads
	// (cmdutil.LeaseFence) before each gang's binds and before the cycle's
	// evictions and statuses; once it refuses, the cycle commits nothing
	// more: no bind, eviction or status. (The status writer asks its own
	// fence before each write: status.WriterOptions.)
	Fence func() error
	Log   logr.Logger
}

// Scheduler runs cycles, triggered by the cache's changes.
type Scheduler struct {
	cache    *cache.Cache
	binder   *binder.Binder
	status   *status.Writer
	opts     Options
	refusals *bindRefusals
	now      func() time.Time
	// bindsSeen is closed once the informer shows the last cycle's binds,
	// or gave up waiting (commit.bindsSeen). Cycles run one at a time, and
	// only they touch it.
	bindsSeen <-chan struct{}
}

// New returns a scheduler over its parts.
func New(c *cache.Cache, b *binder.Binder, w *status.Writer, opts Options) *Scheduler {
	if opts.MaxIdlePeriod <= 0 {
		opts.MaxIdlePeriod = DefaultMaxIdlePeriod
	}
	if opts.PartialGangGrace < 0 {
		opts.PartialGangGrace = actions.DefaultPartialGangGrace
	}
	if opts.BindsSeenWait == 0 {
		opts.BindsSeenWait = DefaultBindsSeenWait
	}
	return &Scheduler{cache: c, binder: b, status: w, opts: opts, refusals: newBindRefusals(BindRefusalTTL), now: time.Now}
}

// Start runs cycles until ctx ends: one as soon as the cache has synced,
// then one after every change to the watched objects (at most one per
// MinCyclePeriod), and one after MaxIdlePeriod without changes. It is a
// controller-runtime Runnable that needs leader election: only the leader
// binds. The status writer runs apart (status.Writer.Start).
func (s *Scheduler) Start(ctx context.Context) error {
	if !s.cache.WaitForSync(ctx) {
		return nil // ctx ended before the informers synced
	}
	metrics.CachesSynced.SetToCurrentTime()
	if s.opts.StartAfter != nil {
		s.opts.StartAfter(ctx)
	}
	s.opts.Log.V(1).Info("Caches synced; scheduling")
	idle := time.NewTimer(0)
	defer idle.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.cache.Changed():
		case <-idle.C:
		}
		if wait := s.opts.MinCyclePeriod - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		last = time.Now()
		if err := s.cycle(ctx); err != nil && ctx.Err() == nil {
			s.opts.Log.Error(err, "Scheduling cycle")
		}
		idle.Reset(s.opts.MaxIdlePeriod)
	}
}

// RunOnce runs one cycle and waits until a write was attempted for each
// status it decided (status.Writer.Flush): the writer must be running.
func (s *Scheduler) RunOnce(ctx context.Context) error {
	err := s.cycle(ctx)
	return errors.Join(err, s.status.Flush(ctx))
}

// cycle runs one cycle and hands its statuses to the writer.
//
// A gang's binds start the moment the session commits it (commit.dispatch),
// while the session goes on deciding the gangs after it: the decision
// stays a pure function of the snapshot, and only its side effects start
// earlier, so a backlog's first gang is bound after its own decision
// rather than after everyone's. The session counts what it committed on
// its nodes, so the gangs decided later never take the room of one whose
// binds are under way. The cycle ends once its binds have returned: the
// evictions and the status writes follow them, and the next cycle's
// snapshot sees each bind done or, if it failed, the pod pending again.
//
// The status writes do not hold the next cycle back: what a user reads
// must not delay the binds. Every cycle computes every status over the
// last one decided (which may not have landed yet) and hands those that
// changed to the writer (status.Writer.Write), which remembers them as
// decided at once, so the next cycle's stamp and statuses build on them,
// and writes them from its own queue once the informer shows the cycle's
// binds. An object's writes go out one at a time, each from what the last
// one landed to the latest status decided: what several cycles decided
// while it waited goes out as one write.
func (s *Scheduler) cycle(ctx context.Context) error {
	start := time.Now()
	defer func() {
		metrics.CycleDuration.Observe(time.Since(start).Seconds())
		metrics.Cycles.Inc()
	}()

	var (
		state                *cache.State
		d                    decision
		snapshotted, decided time.Time
		err                  error
	)
	c := &commit{s: s, ctx: ctx}
	defer c.releaseEvents()
	onThread(func() {
		if state, err = s.cache.Snapshot(ctx); err != nil {
			return
		}
		s.stamp(state, start)
		snapshotted = time.Now()
		d = decide(state.Snapshot, s.opts.Plugins, s.decisionActions(), c.dispatch)
		decided = time.Now()
	})
	if err != nil {
		return err
	}
	defer s.cache.Release(state)
	metrics.SnapshotDuration.Observe(snapshotted.Sub(start).Seconds())
	metrics.DecisionDuration.Observe(decided.Sub(start).Seconds())
	metrics.PredicateEvaluations.Add(float64(d.stats.PredicateEvaluations))

	bindErr := c.settle()
	settled := time.Now()
	if err := c.leads(); err != nil {
		metrics.FencedCycles.Inc()
		s.opts.Log.Info("Not committing the rest of the cycle: this replica may no longer lead", "reason", err.Error(),
			"bindsDispatched", len(c.sent), "bindsDecided", len(d.bindings))
		return bindErr
	}
	c.holdEvents()
	evictErr := s.evict(ctx, state, d)
	nominateErr := s.nominate(ctx, d)
	s.bindsSeen = c.bindsSeen(s.bindsSeen)
	s.writeStatus(state, d, time.Now(), s.bindsSeen)
	if len(d.bindings)+len(d.evictions) > 0 {
		s.opts.Log.V(1).Info("Cycle committed", "binds", len(d.bindings), "evictions", len(d.evictions), "duration", time.Since(start),
			"snapshot", snapshotted.Sub(start), "session", decided.Sub(snapshotted), "firstBind", c.firstDispatch.Sub(start),
			"bindsSettledAfter", settled.Sub(decided))
	}
	return errors.Join(bindErr, evictErr, nominateErr, s.status.TakeErrors())
}

// decisionActions are the configured actions, then PartialGangs, which
// every cycle runs whatever the configuration says.
func (s *Scheduler) decisionActions() []framework.Action {
	return append(slices.Clip(s.opts.Actions), actions.NewPartialGangs(s.opts.PartialGangGrace))
}

// stamp gives the snapshot what the cycle knows beyond the informers:
// the time of the decision; each gang's phase, when it was first seen
// partial and when its attempt to be placed began (from the status this
// scheduler last decided, which may not have landed yet, let alone reached
// the informer); and the nodes that refused each gang's binds. The session
// is then a function of the snapshot alone.
func (s *Scheduler) stamp(state *cache.State, now time.Time) {
	snap := state.Snapshot
	snap.Now = now
	for id, job := range snap.Jobs {
		if pg := state.PodGroups[id]; pg != nil {
			old := s.status.OldPodGroupStatus(pg)
			if old.Phase != "" {
				job.Phase = api.JobPhase(old.Phase)
			}
			job.PartialSince = status.PartialSince(old)
			if t := old.ScheduleStartTime; t != nil {
				job.WaitingSince = &t.Time
			}
		}
	}
	s.refusals.apply(snap.Jobs, now)
}

// onThread runs decide locked to its OS thread and adds the thread's CPU
// time to metrics.DecisionCPU, where the platform tells it.
func onThread(decide func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, ok := threadcpu.Now()
	decide()
	if after, ok2 := threadcpu.Now(); ok && ok2 {
		metrics.DecisionCPU.Add((after - before).Seconds())
	}
}

// decision is what a session decided, taken out of it before the commit.
type decision struct {
	bindings  []framework.Decision
	evictions []framework.Eviction
	// nominations are the preemptors' nominated nodes to write or clear
	// (framework.Session.Nominations).
	nominations []framework.Decision
	findings    map[api.JobID]framework.Unschedulable
	partial     map[api.JobID]framework.PartialGang
	topology    map[api.JobID]framework.TopologyOutcome
	// diagnoses explain, per role, the resource findings.
	diagnoses map[api.JobID]string
	// holds are the nodes each waiting gang held (framework.Session.Hold).
	holds    map[api.JobID][]string
	admitted map[api.JobID]bool
	// revoked are the gangs whose earlier admission the session took
	// back (framework.Session.Revoked).
	revoked map[api.JobID]bool
	stats   framework.Stats
}

// Decision is what a session over a snapshot decides, before anything
// is committed: the scheduler's own answer, for a tool that asks what it
// would do (kubectl troupe fit).
type Decision struct {
	Bindings  []framework.Decision
	Evictions []framework.Eviction
	// Findings say why gangs were not placed; Diagnoses explain a
	// resource finding role by role, and are what the PodGroup's
	// Unschedulable condition then says instead.
	Findings  map[api.JobID]framework.Unschedulable
	Diagnoses map[api.JobID]string
	// Holds are the nodes each waiting gang holds from the gangs after it
	// (the reservation plugin).
	Holds map[api.JobID][]string
}

// Decide runs a session over snap with the plugins and actions, as a
// cycle does before its commit, and returns what it decided. It changes
// snap and nothing else.
func Decide(snap *api.Snapshot, plugins []framework.Plugin, acts []framework.Action) Decision {
	d := decide(snap, plugins, acts, nil)
	return Decision{Bindings: d.bindings, Evictions: d.evictions, Findings: d.findings, Diagnoses: d.diagnoses, Holds: d.holds}
}

// decide runs a session over snap: a pure function of the snapshot (it
// changes the snapshot, which the cycle owns, and nothing else). onCommit,
// if not nil, is handed each gang's placements as the session commits
// them (framework.Session.OnCommit).
func decide(snap *api.Snapshot, plugins []framework.Plugin, acts []framework.Action, onCommit func([]framework.Decision)) decision {
	ssn := framework.OpenSession(snap, plugins...)
	if onCommit != nil {
		ssn.OnCommit(onCommit)
	}
	ssn.Run(acts...)
	d := decision{
		bindings:    ssn.Bindings(),
		evictions:   ssn.Evictions(),
		nominations: ssn.Nominations(),
		findings:    ssn.Unschedulable(),
		partial:     ssn.PartialGangs(),
		topology:    ssn.TopologyOutcomes(),
		diagnoses:   map[api.JobID]string{},
		holds:       ssn.Holds(),
		admitted:    map[api.JobID]bool{},
		revoked:     map[api.JobID]bool{},
	}
	// A holder's diagnosis counts what it holds as room.
	ssn.ReleaseHolds()
	d.diagnose(ssn)
	for _, id := range ssn.Admitted() {
		d.admitted[id] = true
	}
	for _, id := range ssn.Revoked() {
		d.revoked[id] = true
	}
	// Last: the diagnoses evaluate predicates too.
	d.stats = ssn.Stats()
	return d
}

// diagnose explains each gang not placed for want of room (Diagnose).
// Diagnose answers alike for gangs of one shape, their pending pods in the
// order it places them (api.Shape; the session no longer changes), so a
// backlog of such gangs costs one diagnosis, of the gang of the shape
// whose UID sorts first: which gang it is, and so the session's counters
// (predicates are cached per gang), do not depend on map order. Shapes are
// grouped by hash (api.ShapeHash, api.SameShape), and only the first gang
// of each is looked for: a string per gang and a sort of every gang's UID
// were most of what a backlog of thousands of gangs cost here a cycle.
func (d *decision) diagnose(ssn *framework.Session) {
	type shape struct {
		tasks []*api.TaskInfo // the pending pods of a gang of the shape
		first api.JobID
		msg   string
	}
	type shaped struct {
		id    api.JobID
		shape *shape
	}
	withLabels := ssn.LabelSensitive()
	byHash := map[uint64][]*shape{}
	var shapes []*shape
	var gangs []shaped
	for id, f := range d.findings {
		job := ssn.Jobs[id]
		if job == nil || f.Reason != actions.ReasonNotEnoughResources || !job.HasPendingTasks() || job.IsReady() {
			continue
		}
		tasks := ssn.PendingTasks(job)
		h, ok := api.ShapeHash(tasks, withLabels)
		if !ok { // no shape: diagnosed on its own
			s := &shape{tasks: tasks, first: id}
			shapes = append(shapes, s)
			gangs = append(gangs, shaped{id, s})
			continue
		}
		i := slices.IndexFunc(byHash[h], func(s *shape) bool { return api.SameShape(s.tasks, tasks, withLabels) })
		if i < 0 {
			s := &shape{tasks: tasks, first: id}
			byHash[h] = append(byHash[h], s)
			shapes = append(shapes, s)
			i = len(byHash[h]) - 1
		}
		s := byHash[h][i]
		s.first = min(s.first, id)
		gangs = append(gangs, shaped{id, s})
	}
	slices.SortFunc(shapes, func(a, b *shape) int { return cmp.Compare(a.first, b.first) })
	for _, s := range shapes {
		s.msg = Diagnose(ssn, ssn.Jobs[s.first])
	}
	for _, g := range gangs {
		d.diagnoses[g.id] = g.shape.msg
	}
}

// commit is one cycle's side effects: the binds it started while its
// session was still deciding, and the fence's word on whether this replica
// may commit at all.
type commit struct {
	s   *Scheduler
	ctx context.Context
	// binds are the binds under way, nil until the first gang is
	// dispatched; sent are their decisions, in the order dispatched.
	binds *parallel.Queue[framework.Decision]
	sent  []framework.Decision
	// spread times each gang's binds, as their answers come back.
	spread *bindSpread
	// refused is the fence's refusal, once it gave one: it stands for the
	// rest of the cycle.
	refused       error
	release       func()
	firstDispatch time.Time
	// bound are the pods whose binds succeeded, in the order dispatched.
	bound []*corev1.Pod
}

// dispatch is the session's OnCommit hook: it starts the binds of a gang
// the session just committed, as one piece. Each pod is assumed bound
// first, so that the next snapshot counts it on its node even before the
// informer shows the bind. The fence is asked before each gang, so a
// replica that stopped leading mid-session binds no gang after that, and
// none partly. The call only queues the binds: the session goes on to the
// next gang while they run.
func (c *commit) dispatch(decisions []framework.Decision) {
	if c.leads() != nil {
		return
	}
	if c.binds == nil {
		c.holdEvents()
		c.spread = newBindSpread(observeSpreadMetrics)
		c.binds = c.s.binder.Stream(c.ctx, c.spread.answered)
		c.firstDispatch = time.Now()
	}
	for _, d := range decisions {
		c.s.cache.Assume(types.UID(d.Task.UID), d.Node)
	}
	c.spread.dispatched(decisions)
	c.binds.Add(decisions...)
	c.sent = append(c.sent, decisions...)
}

// leads asks the fence, if there is one, whether this replica still leads.
func (c *commit) leads() error {
	if c.refused == nil && c.s.opts.Fence != nil {
		c.refused = c.s.opts.Fence()
	}
	return c.refused
}

// holdEvents holds the event gate, if there is one, until the cycle ends:
// the events the binds and status writes record wait behind them.
func (c *commit) holdEvents() {
	if c.release == nil && c.s.opts.EventGate != nil {
		c.release = c.s.opts.EventGate.Hold()
	}
}

func (c *commit) releaseEvents() {
	if c.release != nil {
		c.release()
	}
}

// settle waits for the binds dispatched and records what happened. A
// failed bind forgets its assumption, and the next cycle places the pod
// again, elsewhere if the API server refused this node (bindRefusals).
// The tasks are updated to what happened (Bound, or Pending again) for
// the status that follows.
//
// A failed bind does not undo the gang's other binds: undoing is itself
// API calls that can fail, and the next cycle completes the gang first of
// all (see actions.Allocate), usually on another node. A gang that cannot
// be completed is reclaimed after the grace period (actions.PartialGangs);
// until then its status says it is partial.
func (c *commit) settle() error {
	if c.binds == nil {
		return nil
	}
	errs := c.binds.Wait()
	var failed []error
	for i, d := range c.sent {
		if errs[i] != nil {
			c.s.cache.Forget(types.UID(d.Task.UID))
			if isRefusal(errs[i]) {
				c.s.refusals.record(d.Task.Job, d.Node, c.s.now())
			}
			d.Task.Status, d.Task.NodeName = api.Pending, ""
			failed = append(failed, errs[i])
			continue
		}
		d.Task.Status = api.Bound
		c.bound = append(c.bound, d.Task.Pod)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d binds failed, retried next cycle; first: %w", len(failed), len(c.sent), failed[0])
	}
	return nil
}

// bindsSeen returns a channel closed once the pod informer shows the
// cycle's binds (cache.AwaitBound), or BindsSeenWait after now: the
// cycle's status writes wait for it, since the statuses are worth less to
// anyone than the binds reaching their watchers. The wait runs in the
// background, after the previous cycle's (previous, nil if none): the
// cache has one waiter at a time, and the statuses of a later cycle wait
// for the binds of the earlier ones too. Each cycle's own deadline bounds
// its wait, so waits that time out do not add up.
func (c *commit) bindsSeen(previous <-chan struct{}) <-chan struct{} {
	if c.s.opts.BindsSeenWait < 0 || len(c.bound) == 0 {
		return previous
	}
	start := time.Now()
	deadline := start.Add(c.s.opts.BindsSeenWait)
	seen := make(chan struct{})
	go func() {
		defer close(seen)
		if previous != nil {
			<-previous
		}
		if unseen := c.s.cache.AwaitBound(c.ctx, c.bound, time.Until(deadline)); unseen > 0 {
			c.s.opts.Log.V(1).Info("The informer does not show every bind yet; writing the statuses", "unseen", unseen,
				"of", len(c.bound), "waited", time.Since(start))
		}
	}()
	return seen
}

// evict deletes the evicted pods, after the binds: a preemptor never binds
// in the cycle that evicts for it (see actions.Preempt), so the order only
// matters in that a bind should not wait behind deletions. A failed delete
// is retried by the next cycle, which sees the victim still running and
// decides again.
func (s *Scheduler) evict(ctx context.Context, state *cache.State, d decision) error {
	evictions := d.evictions
	if len(evictions) == 0 {
		return nil
	}
	// As with binds: the next cycle must not see a victim running again
	// before the informer shows its deletion, or it would evict it twice.
	for _, e := range evictions {
		s.cache.AssumeDeleted(types.UID(e.Task.UID), e.Node)
	}
	errs := s.binder.Evict(ctx, evictions, state.PodGroups)
	var failed []error
	victims := map[api.JobID]bool{}
	reclaimed := map[api.JobID]bool{}
	for i, e := range evictions {
		if errs[i] != nil {
			s.cache.Forget(types.UID(e.Task.UID))
			failed = append(failed, errs[i])
			continue
		}
		if e.Cause == framework.CauseReclaim {
			reclaimed[e.Task.Job] = true
		} else {
			victims[e.Task.Job] = true
		}
	}
	metrics.Preemptions.Add(float64(len(victims)))
	for _, id := range slices.Sorted(maps.Keys(reclaimed)) {
		metrics.PartialGangReclaims.WithLabelValues(d.partial[id].Reason).Inc()
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d evictions failed, retried next cycle; first: %w", len(failed), len(evictions), failed[0])
	}
	return nil
}

// nominate writes the preemptors' nominated nodes on their pods, after the
// evictions they are for. A failed write is retried by the next cycle,
// which finds the pod's nomination still different from its decision.
func (s *Scheduler) nominate(ctx context.Context, d decision) error {
	if len(d.nominations) == 0 {
		return nil
	}
	var failed []error
	for _, err := range s.binder.Nominate(ctx, d.nominations) {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d nominations failed, retried next cycle; first: %w", len(failed), len(d.nominations), failed[0])
	}
	return nil
}

// writeStatus computes every gang's and queue's status and hands them to
// the writer, which writes those that changed once after is closed.
func (s *Scheduler) writeStatus(state *cache.State, d decision, now time.Time, after <-chan struct{}) {
	var pgWrites []status.PodGroupWrite
	usage := map[api.QueueID]*status.QueueUsage{}
	live := map[types.UID]bool{}
	var pending, scheduled, partial int
	for id, job := range state.Snapshot.Jobs {
		pg := state.PodGroups[id]
		live[pg.UID] = true
		g := status.Gang{
			PodGroup:  pg,
			Old:       s.status.OldPodGroupStatus(pg),
			Job:       job,
			Admitted:  d.admitted[id],
			Revoked:   d.revoked[id],
			Diagnosis: d.diagnoses[id],
			Holds:     d.holds[id],
		}
		if f, ok := d.findings[id]; ok {
			g.Unschedulable = &f
		}
		if p, ok := d.partial[id]; ok {
			g.Partial = &p
		}
		if t, ok := d.topology[id]; ok {
			g.Topology = &t
		}
		if at := s.status.UnschedulableWrittenAt(pg.UID); !at.IsZero() {
			g.QuietUntil = at.Add(s.opts.UnschedulableRefresh)
		}
		u := status.Compute(g, now)
		w := status.PodGroupWrite{PodGroup: pg, Old: g.Old, Update: u, At: now}
		if u.PodEvent != nil {
			for _, t := range job.PendingTasks() {
				w.Pending = append(w.Pending, t.Pod)
			}
		}
		pgWrites = append(pgWrites, w)

		if u.Partial {
			partial++
		}
		switch {
		case u.Scheduled:
			scheduled++
		case u.Status.Phase != schedulingv1alpha1.PodGroupFinished && u.Status.Phase != schedulingv1alpha1.PodGroupFailed:
			pending++
		}
		if usage[job.Queue] == nil {
			usage[job.Queue] = &status.QueueUsage{}
		}
		usage[job.Queue].Add(u.Status.Phase, job)
	}
	metrics.Gangs.WithLabelValues(metrics.GangPending).Set(float64(pending))
	metrics.Gangs.WithLabelValues(metrics.GangScheduled).Set(float64(scheduled))
	metrics.Gangs.WithLabelValues(metrics.GangPartial).Set(float64(partial))
	held := 0
	for _, nodes := range d.holds {
		held += len(nodes)
	}
	metrics.HeldNodes.Set(float64(held))
	metrics.HoldingGangs.Set(float64(len(d.holds)))

	var qWrites []status.QueueWrite
	for name, q := range state.Queues {
		live[q.UID] = true
		var u status.QueueUsage
		if p := usage[name]; p != nil {
			u = *p
		}
		qWrites = append(qWrites, status.QueueWrite{Queue: q, Old: s.status.OldQueueStatus(q), New: status.ComputeQueue(q, u)})
	}
	s.status.Forget(func(uid types.UID) bool { return live[uid] })
	s.status.Write(pgWrites, qWrites, after)
}
