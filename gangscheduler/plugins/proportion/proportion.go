// Package proportion is the queue-share plugin: each queue deserves a share
// of the cluster by its weight, and gets no more than that.
//
// At session open it computes, per queue:
//
//   - request: what the queue's jobs hold (tasks allocated, bound, running
//     or releasing) plus, for an open queue, what they wait for (pending
//     tasks; minResources for a job that has no pods yet);
//   - deserved: the cluster divided among the queues by weight,
//     dimension by dimension (cpu, memory, ephemeral-storage, each extended
//     resource), max-min fair (WaterFill): a queue that requests less than
//     its weighted share deserves just its request, and what it leaves is
//     divided again among the others by weight. Each queue's request is
//     first capped by its capability, so a capped queue deserves no more than
//     the cap and its weighted remainder flows to the others too;
//   - allocated: what it holds now, kept up to date through the session's
//     placement events.
//
// The cluster is every node's allocatable minus what pods of no queue hold
// (other schedulers', static pods). Cordoned or tainted nodes count too;
// predicates, not shares, keep pods off them.
//
// It answers:
//
//   - queue order: the queue with the lowest share first, share being
//     allocated/deserved in its most used dimension: the queue furthest
//     below what it deserves goes first;
//   - allocatable (framework.Session.AddAllocatableFn): a task fits its
//     queue when, in every dimension the task requests, allocated plus the
//     task stays within deserved, and within capability where one is set
//     (capability also limits pods, if it names them). So an overused queue
//     (allocated at or past deserved) gets nothing new that requests
//     anything; a pod that requests nothing takes nothing of the share;
//   - job enqueueable: the enqueue action admits a job only when what its
//     queue holds, plus what its admitted jobs still need, plus the job's
//     need stays within deserved and capability in every dimension the job
//     needs. Jobs admitted in earlier cycles (phase Inqueue) still need their
//     minimal gang's pending pods (framework.Session.MinimalNeed).
//
// Capability: a dimension it leaves at zero is not limited (the queue model
// cannot tell "not listed" from "zero"). Weights below 1 count as 1.
// Deserved shares are computed once per session; reclaim, which would take
// back what an overused queue holds, is not implemented (the preempt action
// works within one queue).
package proportion

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/internal/share"
)

// Name is the plugin's name.
const Name = "proportion"

// Config configures the plugin. It has no options yet; the zero value is
// the default, and the type keeps New's signature stable when options come.
type Config struct{}

type plugin struct{}

// New returns the proportion plugin.
func New(Config) framework.Plugin { return plugin{} }

func (plugin) Name() string { return Name }

// QueueAttr is one queue's accounting in a session.
type QueueAttr struct {
	Name   api.QueueID
	Weight int64
	// Capability is the queue's cap; a zero dimension is unlimited.
	Capability api.Resource
	// Request is what the queue holds plus what it waits for.
	Request api.Resource
	// Deserved is the queue's share (pods not counted).
	Deserved api.Resource
	// Allocated is what the queue holds now, tentative placements included.
	Allocated api.Resource
	// Reserved is what admitted jobs of the queue still need: jobs admitted
	// in earlier cycles that are not placed yet, and this session's
	// admissions.
	Reserved api.Resource
	// Share is Allocated/Deserved in the most used dimension.
	Share float64

	// refusal is the queue's last answer refusing a job (enqueueable),
	// for a job that needed refusedNeed; nil once Allocated or Reserved
	// change. A backlog of gangs of one size is then refused at the cost
	// of a comparison each, not of a new message each.
	refusal     *framework.ValidateResult
	refusedNeed api.Resource
}

// changed forgets the queue's last refusal: what it was computed from
// changed.
func (a *QueueAttr) changed() { a.refusal = nil }

// state is the plugin's accounting for one session, so one plugin value can
// serve sessions one after another.
type state struct {
	ssn    *framework.Session
	total  api.Resource
	queues map[api.QueueID]*QueueAttr
}

func (plugin) OnSessionOpen(ssn *framework.Session) {
	s := open(ssn)
	ssn.AddQueueOrderFn(s.queueOrder)
	ssn.AddAllocatableFn(s.allocatable)
	ssn.AddJobEnqueueableFn(s.enqueueable)
	ssn.AddJobEnqueuedFn(s.enqueued)
	ssn.AddJobDequeuedFn(s.dequeued)
	ssn.AddEventHandler(framework.EventHandler{AllocateFunc: s.allocate, DeallocateFunc: s.deallocate})
}

// Attrs returns the accounting the plugin would keep for a session on ssn's
// snapshot as it stands now: for tests and for status reporting.
func Attrs(ssn *framework.Session) (total api.Resource, queues map[api.QueueID]*QueueAttr) {
	s := open(ssn)
	return s.total, s.queues
}

func open(ssn *framework.Session) *state {
	s := &state{ssn: ssn, queues: make(map[api.QueueID]*QueueAttr, len(ssn.Queues))}
	for name, q := range ssn.Queues {
		s.queues[name] = &QueueAttr{
			Name:       name,
			Weight:     int64(max(q.Weight, 1)),
			Capability: q.Capability.Clone(),
		}
	}

	// The cluster the queues share: every node, less what pods of no queue
	// hold.
	s.total = ssn.TotalAllocatable()
	for _, n := range ssn.NodesTaken() {
		for _, t := range n.Tasks {
			if s.queueOfTask(t) == nil {
				t.SubRequestsFrom(&s.total)
			}
		}
	}
	s.total.Pods = 0
	for _, d := range share.Dims(&s.total) {
		if share.Get(&s.total, d) < 0 {
			share.Set(&s.total, d, 0)
		}
	}

	for _, job := range ssn.Jobs {
		a := s.queues[job.Queue]
		if a == nil {
			continue
		}
		isOpen := ssn.Queues[job.Queue].IsOpen()
		for _, t := range job.Tasks {
			switch {
			case t.Status.OccupiesNode():
				t.AddRequestsTo(&a.Allocated)
				t.AddRequestsTo(&a.Request)
			case t.Status == api.Pending && isOpen:
				t.AddRequestsTo(&a.Request)
			}
		}
		noPods := job.HasNoPods()
		if noPods && isOpen && !terminal(job.Phase) {
			min := share.WithoutPods(&job.MinResources)
			a.Request.Add(&min)
		}
		if job.Phase == api.JobInqueue {
			need := ssn.MinimalNeed(job)
			a.Reserved.Add(&need)
		}
	}

	s.fill()
	for _, a := range s.queues {
		a.Share = share.Dominant(&a.Allocated, &a.Deserved)
	}
	return s
}

func terminal(p api.JobPhase) bool {
	return p != "" && p != api.JobPending && p != api.JobInqueue && p != api.JobRunning && p != api.JobUnknown
}

// fill computes every queue's deserved share, dimension by dimension.
func (s *state) fill() {
	attrs := make([]*QueueAttr, 0, len(s.queues))
	for _, a := range s.queues {
		attrs = append(attrs, a)
	}
	// Remainders of the last split go to the lower index: order by name.
	slices.SortFunc(attrs, func(a, b *QueueAttr) int { return cmp.Compare(a.Name, b.Name) })
	all := make([]*api.Resource, 0, len(attrs)+1)
	all = append(all, &s.total)
	for _, a := range attrs {
		all = append(all, &a.Request)
	}
	demands := make([]int64, len(attrs))
	weights := make([]int64, len(attrs))
	for i, a := range attrs {
		weights[i] = a.Weight
	}
	for _, d := range share.Dims(all...) {
		for i, a := range attrs {
			demands[i] = max(share.Get(&a.Request, d), 0)
			if c := share.Get(&a.Capability, d); c > 0 {
				demands[i] = min(demands[i], c)
			}
		}
		for i, v := range WaterFill(share.Get(&s.total, d), demands, weights) {
			share.Set(&attrs[i].Deserved, d, v)
		}
	}
}

func (s *state) queueOfTask(t *api.TaskInfo) *QueueAttr {
	if t.Job == "" {
		return nil
	}
	job, ok := s.ssn.Jobs[t.Job]
	if !ok {
		return nil
	}
	return s.queues[job.Queue]
}

// queueOrder: the lower share first; 0 on equal shares (the session breaks
// the tie by name).
func (s *state) queueOrder(l, r *api.QueueInfo) int {
	ls, rs := 0.0, 0.0
	if a := s.queues[l.Name]; a != nil {
		ls = a.Share
	}
	if a := s.queues[r.Name]; a != nil {
		rs = a.Share
	}
	switch {
	case ls < rs:
		return -1
	case ls > rs:
		return 1
	}
	return 0
}

// allocatable: in every dimension task requests, the queue's allocated plus
// the task stays within deserved, and within capability where set.
func (s *state) allocatable(queue *api.QueueInfo, task *api.TaskInfo) bool {
	a := s.queues[queue.Name]
	if a == nil {
		return true
	}
	r := &task.Resreq
	within := func(req, held, deserved, capability int64) bool {
		return req <= 0 || held+req <= deserved && (capability <= 0 || held+req <= capability)
	}
	if !within(r.MilliCPU, a.Allocated.MilliCPU, a.Deserved.MilliCPU, a.Capability.MilliCPU) ||
		!within(r.Memory, a.Allocated.Memory, a.Deserved.Memory, a.Capability.Memory) ||
		!within(r.EphemeralStorage, a.Allocated.EphemeralStorage, a.Deserved.EphemeralStorage, a.Capability.EphemeralStorage) {
		return false
	}
	for _, q := range task.ScalarRequests {
		if !within(q.Value, a.Allocated.Scalars[q.Name], a.Deserved.Scalars[q.Name], a.Capability.Scalars[q.Name]) {
			return false
		}
	}
	// Pods are no share dimension; only a capability limits them.
	if c := a.Capability.Pods; c > 0 && r.Pods > 0 && a.Allocated.Pods+r.Pods > c {
		return false
	}
	return true
}

// enqueueable: what the queue holds, plus what its admitted jobs still
// need, plus need, stays within capability and deserved in every dimension
// need has.
func (s *state) enqueueable(job *api.JobInfo, need *api.Resource) *framework.ValidateResult {
	a := s.queues[job.Queue]
	if a == nil {
		return nil
	}
	if a.refusal != nil && need.Equal(&a.refusedNeed) {
		return a.refusal
	}
	if r := a.enqueueable(need); r != nil {
		a.refusal, a.refusedNeed = r, need.Clone()
		return r
	}
	return nil
}

// enqueueable is state.enqueueable for a job of a's queue.
func (a *QueueAttr) enqueueable(need *api.Resource) *framework.ValidateResult {
	dims := append(share.Dims(need), corev1.ResourcePods)
	for _, d := range dims {
		n := share.Get(need, d)
		if n <= 0 {
			continue
		}
		held, reserved := share.Get(&a.Allocated, d), share.Get(&a.Reserved, d)
		if c := share.Get(&a.Capability, d); c > 0 && held+reserved+n > c {
			return &framework.ValidateResult{
				Reason: ReasonNotEnoughResources,
				Message: fmt.Sprintf("queue %q capability: the gang needs %d %s, the queue holds %d and has %d admitted, capability is %d",
					a.Name, n, d, held, reserved, c),
			}
		}
		if d == corev1.ResourcePods {
			continue
		}
		if deserved := share.Get(&a.Deserved, d); held+reserved+n > deserved {
			return &framework.ValidateResult{
				Reason: ReasonNotEnoughResources,
				Message: fmt.Sprintf("queue %q share: the gang needs %d %s, the queue holds %d and has %d admitted, it deserves %d",
					a.Name, n, d, held, reserved, deserved),
			}
		}
	}
	return nil
}

// ReasonNotEnoughResources is the PodGroup API's reason for a gang its
// queue's share or capability cannot hold now.
const ReasonNotEnoughResources = "NotEnoughResources"

func (s *state) enqueued(job *api.JobInfo, need *api.Resource) {
	if a := s.queues[job.Queue]; a != nil {
		a.Reserved.Add(need)
		a.changed()
	}
}

func (s *state) dequeued(job *api.JobInfo, need *api.Resource) {
	if a := s.queues[job.Queue]; a != nil {
		a.Reserved.Sub(need)
		a.changed()
	}
}

func (s *state) allocate(task *api.TaskInfo) {
	if a := s.queueOfTask(task); a != nil {
		task.AddRequestsTo(&a.Allocated)
		a.Share = share.Dominant(&a.Allocated, &a.Deserved)
		a.changed()
	}
}

func (s *state) deallocate(task *api.TaskInfo) {
	if a := s.queueOfTask(task); a != nil {
		task.SubRequestsFrom(&a.Allocated)
		a.Share = share.Dominant(&a.Allocated, &a.Deserved)
		a.changed()
	}
}

// Overused reports whether a queue holds at least its deserved share in
// some dimension it holds anything of (share >= 1).
func (a *QueueAttr) Overused() bool { return a.Share >= 1 }
