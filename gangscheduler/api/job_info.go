package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// DefaultQueue is the queue of a job that names none.
const DefaultQueue QueueID = "default"

// JobInfo is one gang: a PodGroup and the tasks (pods) that belong to it.
type JobInfo struct {
	UID       JobID
	Namespace string
	Name      string

	Queue QueueID
	// MinMember tasks must be placed together, or none of them.
	MinMember int32
	// MinTaskMember is the same per role (the pods' TaskRoleAnnotation):
	// e.g. {Master: 1, Worker: 3}. Roles not listed have no minimum.
	MinTaskMember map[string]int32
	// Priority is the PodGroup's priority; higher goes first.
	Priority          int32
	CreationTimestamp time.Time
	// Phase is the PodGroup's phase as last written (Pending, Inqueue,
	// Running, ...); the enqueue action admits Pending jobs to Inqueue.
	Phase JobPhase
	// MinResources is the PodGroup's minResources: what the gang needs in
	// aggregate, for jobs whose pods do not exist yet.
	MinResources Resource

	// PartialSince is when the gang was first seen partial (Partial), as
	// its PodGroup's Partial condition recorded it; nil if it was not.
	// The partial-gang grace period counts from it, across scheduler
	// restarts.
	PartialSince *time.Time
	// WaitingSince is when the gang's current attempt to be placed began:
	// its PodGroup's status.scheduleStartTime (reset when a running gang
	// loses members); nil if not set yet.
	WaitingSince *time.Time
	// RefusedNodes are the nodes where the API server recently refused to
	// bind a member of this gang (an admission webhook or policy on
	// pods/binding, say): no member is placed there until the refusal
	// expires, so that a gang reclaimed for such a refusal is placed whole
	// elsewhere rather than on the same node again. Nil for none.
	RefusedNodes map[string]bool
	// Topology is the gang's topology policy (PodGroup spec.topology);
	// nil for none.
	Topology *TopologyPolicy

	// Tasks are the gang's pods, each once, in the order they were
	// added. A slice rather than a map by UID: a cycle walks every job's
	// tasks many times (counts, the plugins' accounting) and looks none
	// up by UID, and walking a map costs several times walking a slice.
	Tasks []*TaskInfo
}

// NewJobInfo returns an empty job namespace/name in the default queue.
func NewJobInfo(namespace, name string) *JobInfo {
	return &JobInfo{
		UID:       NewJobID(namespace, name),
		Namespace: namespace,
		Name:      name,
		Queue:     DefaultQueue,
	}
}

// AddTask adds a task to the job. A task already present is an error: it
// would be counted twice toward minMember.
func (j *JobInfo) AddTask(t *TaskInfo) error {
	if slices.ContainsFunc(j.Tasks, func(o *TaskInfo) bool { return o.UID == t.UID }) {
		return fmt.Errorf("job %s: task %s (uid %s) added twice", j.UID, t.Key(), t.UID)
	}
	return j.addUniqueTask(t)
}

// addUniqueTask adds a task known not to be in the job already (NewSnapshot
// checks every pod's UID once, across all jobs: a check per job would cost
// a gang of n pods n² comparisons).
func (j *JobInfo) addUniqueTask(t *TaskInfo) error {
	if t.Job != j.UID {
		return fmt.Errorf("task %s belongs to job %q, not %q", t.Key(), t.Job, j.UID)
	}
	if j.Tasks == nil {
		// Most gangs have MinMember pods: room for them at once, rather
		// than a slice grown pod by pod in every snapshot.
		j.Tasks = make([]*TaskInfo, 0, max(j.MinMember, 1))
	}
	j.Tasks = append(j.Tasks, t)
	return nil
}

// ReadyCount is the number of tasks that count toward MinMember: allocated
// in this session, bound, running, or succeeded (CountsTowardMinimum).
func (j *JobInfo) ReadyCount() int32 {
	var n int32
	for _, t := range j.Tasks {
		if t.Status.CountsTowardMinimum() {
			n++
		}
	}
	return n
}

// ReadyCountByRole is ReadyCount per role.
func (j *JobInfo) ReadyCountByRole() map[string]int32 {
	return j.countByRole(TaskStatus.CountsTowardMinimum)
}

// ValidCount is the number of tasks that count now or could once placed
// (pending, allocated, bound, running, succeeded): the most the job can
// ever reach without new pods.
func (j *JobInfo) ValidCount() int32 {
	var n int32
	for _, t := range j.Tasks {
		if t.Status.CanBecomeReady() {
			n++
		}
	}
	return n
}

// ReadyCountOfRole is ReadyCount for the tasks of one role.
func (j *JobInfo) ReadyCountOfRole(role string) int32 {
	return j.countOfRole(role, TaskStatus.CountsTowardMinimum)
}

// ValidCountOfRole is ValidCount for the tasks of one role.
func (j *JobInfo) ValidCountOfRole(role string) int32 {
	return j.countOfRole(role, TaskStatus.CanBecomeReady)
}

// countOfRole counts role's tasks whose status counts. A walk per role
// rather than one map of every role: gangs have a few roles, and a map
// costs an allocation, which a check made for every waiting gang in every
// cycle notices.
func (j *JobInfo) countOfRole(role string, counts func(TaskStatus) bool) int32 {
	var n int32
	for _, t := range j.Tasks {
		if t.Role == role && counts(t.Status) {
			n++
		}
	}
	return n
}

func (j *JobInfo) countByRole(counts func(TaskStatus) bool) map[string]int32 {
	m := make(map[string]int32, len(j.MinTaskMember)+1)
	for _, t := range j.Tasks {
		if counts(t.Status) {
			m[t.Role]++
		}
	}
	return m
}

// IsReady reports whether the gang may run, or runs whole: at least
// MinMember tasks and, for every role, at least MinTaskMember[role] tasks
// are allocated, bound, running or done (Succeeded). Counting the members
// that completed, a gang whose first workers have finished while the
// others still run is whole, not broken, and a member recreated beside a
// finished one is placed on its own.
func (j *JobInfo) IsReady() bool {
	if j.ReadyCount() < j.MinMember {
		return false
	}
	for role, min := range j.MinTaskMember {
		if j.ReadyCountOfRole(role) < min {
			return false
		}
	}
	return true
}

// PendingTasks returns the tasks waiting for a node, in TaskLess order: pod
// priority, then age, then name. The order is deterministic; no role is
// assumed to go first.
func (j *JobInfo) PendingTasks() []*TaskInfo {
	n := 0
	for _, t := range j.Tasks {
		if t.Status == Pending {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	// Counted first: a cycle asks every waiting gang for its pending
	// tasks several times, and growing the slice by appends would
	// allocate several times per call.
	tasks := make([]*TaskInfo, 0, n)
	for _, t := range j.Tasks {
		if t.Status == Pending {
			tasks = append(tasks, t)
		}
	}
	slices.SortFunc(tasks, compareTasks)
	return tasks
}

// compareTasks is TaskLess as a three-way comparison.
func compareTasks(l, r *TaskInfo) int {
	switch {
	case TaskLess(l, r):
		return -1
	case TaskLess(r, l):
		return 1
	}
	return 0
}

// HasPendingTasks reports whether any task waits for a node.
func (j *JobInfo) HasPendingTasks() bool {
	for _, t := range j.Tasks {
		if t.Status == Pending {
			return true
		}
	}
	return false
}

// Nominated reports whether a pending task of the gang has a nominated
// node (TaskInfo.NominatedNode): the gang preempted for room and has not
// bound since.
func (j *JobInfo) Nominated() bool {
	for _, t := range j.Tasks {
		if t.Status == Pending && t.NominatedNode != "" {
			return true
		}
	}
	return false
}

// GatedTasks returns the tasks held back by scheduling gates, in TaskLess
// order.
func (j *JobInfo) GatedTasks() []*TaskInfo {
	var tasks []*TaskInfo
	for _, t := range j.Tasks {
		if t.Status == Gated {
			tasks = append(tasks, t)
		}
	}
	slices.SortFunc(tasks, compareTasks)
	return tasks
}

// GatedCount is the number of gated tasks.
func (j *JobInfo) GatedCount() int32 {
	var n int32
	for _, t := range j.Tasks {
		if t.Status == Gated {
			n++
		}
	}
	return n
}

// HasNoPods reports whether the gang has no pod that counts, could count,
// or waits for its gates: its controller has not created them yet (or
// every one has terminated). Such a gang is admitted on its MinResources.
func (j *JobInfo) HasNoPods() bool {
	return j.ValidCount() == 0 && j.GatedCount() == 0
}

// HoldsNodes reports whether some task of the gang is bound to a node or
// runs there (Bound or Running; Allocated ones are this session's own
// placements, Releasing ones are leaving).
func (j *JobInfo) HoldsNodes() bool {
	for _, t := range j.Tasks {
		if t.Status == Bound || t.Status == Running {
			return true
		}
	}
	return false
}

// OccupiesNodes reports whether some task of the gang takes room on a node
// (TaskStatus.OccupiesNode): this session's placements and leaving pods
// included.
func (j *JobInfo) OccupiesNodes() bool {
	for _, t := range j.Tasks {
		if t.Status.OccupiesNode() {
			return true
		}
	}
	return false
}

// Partial reports whether some members of the gang hold nodes but the gang
// is not whole: the state all-or-nothing forbids to last. A commit that
// lost some of its binds, a scheduler killed in the middle of one, a
// member deleted or preempted while the others run: each leaves the gang
// partial until it is completed or its members are reclaimed.
func (j *JobInfo) Partial() bool {
	return j.HoldsNodes() && !j.IsReady()
}

// Done reports whether the gang has run its course as the PodGroup status
// counts it: Finished (no member left alive and at least MinMember
// succeeded) or Failed (some member failed and fewer than MinMember can
// still succeed: those that did, and those pending, gated, bound or
// running). Its controller decides what follows; the scheduler neither
// completes nor reclaims it.
func (j *JobInfo) Done() bool {
	var live, succeeded, failed, possible int32
	for _, t := range j.Tasks {
		switch t.Status {
		case Succeeded:
			succeeded++
			continue
		case Failed:
			failed++
			continue
		}
		live++
		if t.Status.CanBecomeReady() || t.Status == Gated {
			possible++
		}
	}
	finished := len(j.Tasks) > 0 && live == 0 && succeeded >= j.MinMember
	return finished || failed > 0 && succeeded+possible < j.MinMember
}

// MemberSummary says how far the gang is from whole, for people: "3 of
// minMember 5 members bound, running or done (Worker: 2 of minTaskMember
// 4)". Allocated tasks (this session's placements) are not counted.
func (j *JobInfo) MemberSummary() string {
	var n int32
	byRole := map[string]int32{}
	for _, t := range j.Tasks {
		if t.Status == Bound || t.Status == Running || t.Status == Succeeded {
			n++
			byRole[t.Role]++
		}
	}
	s := fmt.Sprintf("%d of minMember %d members bound, running or done", n, j.MinMember)
	var short []string
	for _, role := range slices.Sorted(maps.Keys(j.MinTaskMember)) {
		if min := j.MinTaskMember[role]; byRole[role] < min {
			short = append(short, fmt.Sprintf("%s: %d of minTaskMember %d", role, byRole[role], min))
		}
	}
	if len(short) > 0 {
		s += " (" + strings.Join(short, ", ") + ")"
	}
	return s
}
