package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// extensions holds the extension points that the queue-share pipeline
// (enqueue, proportion, drf, backfill) added to the session: placement
// events, the per-queue allocatable check, the admission hooks and the
// admission gate. The Session embeds one value of it.
type extensions struct {
	handlers    []EventHandler
	allocatable []AllocatableFn
	enqueueable []JobEnqueueableFn
	enqueued    []JobEnqueuedFn
	dequeued    []JobEnqueuedFn
	// admissionGate is set by the enqueue action: from then on only
	// admitted jobs may get tasks allocated (MayAllocate).
	admissionGate bool
}

// EventHandler is told about every tentative placement (a Statement's
// Allocate) and every undoing of one (Discard), so that a plugin can keep
// per-queue or per-job accounting that follows the session. Committing
// changes nothing: the task stays where it was allocated. A tentative
// eviction (Statement.Evict) is a deallocation, and putting the task back
// (Discard, or Commit: an evicted pod holds its node until it is gone) an
// allocation. Either func may be nil.
type EventHandler struct {
	AllocateFunc   func(task *api.TaskInfo)
	DeallocateFunc func(task *api.TaskInfo)
}

// AddEventHandler registers a handler. Handlers run in registration order,
// after the task's status and the node's accounting have changed.
func (ssn *Session) AddEventHandler(h EventHandler) {
	ssn.ext.handlers = append(ssn.ext.handlers, h)
}

func (ssn *Session) fireAllocate(task *api.TaskInfo) {
	for _, h := range ssn.ext.handlers {
		if h.AllocateFunc != nil {
			h.AllocateFunc(task)
		}
	}
}

func (ssn *Session) fireDeallocate(task *api.TaskInfo) {
	for _, h := range ssn.ext.handlers {
		if h.DeallocateFunc != nil {
			h.DeallocateFunc(task)
		}
	}
}

// AllocatableFn says whether queue may take task now, on top of what the
// queue holds (including this session's tentative placements). A queue-share
// plugin answers false for a queue that would go past its deserved share or
// its capability.
type AllocatableFn func(queue *api.QueueInfo, task *api.TaskInfo) bool

// AddAllocatableFn registers an allocatable check.
func (ssn *Session) AddAllocatableFn(fn AllocatableFn) {
	ssn.ext.allocatable = append(ssn.ext.allocatable, fn)
}

// Allocatable reports whether queue may take task: every registered check
// agrees (true when none is registered). Actions ask it before placing a
// task of the queue.
func (ssn *Session) Allocatable(queue *api.QueueInfo, task *api.TaskInfo) bool {
	for _, fn := range ssn.ext.allocatable {
		if !fn(queue, task) {
			return false
		}
	}
	return true
}

// JobEnqueueableFn says whether job may be admitted to its queue when
// admitting it takes need more of the queue (the requests of the minimal
// gang's pending pods, or minResources for a job without pods): nil if so,
// else why not.
type JobEnqueueableFn func(job *api.JobInfo, need *api.Resource) *ValidateResult

// AddJobEnqueueableFn registers an admission check.
func (ssn *Session) AddJobEnqueueableFn(fn JobEnqueueableFn) {
	ssn.ext.enqueueable = append(ssn.ext.enqueueable, fn)
}

// JobEnqueueable returns why job may not be admitted needing need, or nil
// when every registered check agrees.
func (ssn *Session) JobEnqueueable(job *api.JobInfo, need *api.Resource) *ValidateResult {
	for _, fn := range ssn.ext.enqueueable {
		if r := fn(job, need); r != nil {
			return r
		}
	}
	return nil
}

// JobEnqueuedFn is told that job was admitted and will need need: a
// queue-share plugin counts it against the queue's admission budget.
type JobEnqueuedFn func(job *api.JobInfo, need *api.Resource)

// AddJobEnqueuedFn registers an admission listener.
func (ssn *Session) AddJobEnqueuedFn(fn JobEnqueuedFn) {
	ssn.ext.enqueued = append(ssn.ext.enqueued, fn)
}

// JobEnqueued tells every listener that job was admitted needing need.
func (ssn *Session) JobEnqueued(job *api.JobInfo, need *api.Resource) {
	for _, fn := range ssn.ext.enqueued {
		fn(job, need)
	}
}

// AddJobDequeuedFn registers a listener for admissions taken back
// (RevokeAdmission): a queue-share plugin no longer counts need against
// the queue's admission budget.
func (ssn *Session) AddJobDequeuedFn(fn JobEnqueuedFn) {
	ssn.ext.dequeued = append(ssn.ext.dequeued, fn)
}

// JobDequeued tells every listener that job's admission, needing need, was
// taken back.
func (ssn *Session) JobDequeued(job *api.JobInfo, need *api.Resource) {
	for _, fn := range ssn.ext.dequeued {
		fn(job, need)
	}
}

// EnableAdmission turns the admission gate on for the rest of the session:
// the enqueue action calls it first thing, so that actions after it
// (allocate, backfill) place tasks only of admitted jobs. A session that
// runs no enqueue action leaves it off and allocates every job, as before
// queues admitted anything.
func (ssn *Session) EnableAdmission() { ssn.ext.admissionGate = true }

// AdmissionEnabled reports whether the admission gate is on.
func (ssn *Session) AdmissionEnabled() bool { return ssn.ext.admissionGate }

// MayAllocate reports whether job's tasks may be allocated: always with the
// gate off, else only once the job is admitted (IsAdmitted).
func (ssn *Session) MayAllocate(job *api.JobInfo) bool {
	return !ssn.ext.admissionGate || ssn.IsAdmitted(job)
}
