package api

import (
	"fmt"
	"slices"
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

	Tasks map[TaskID]*TaskInfo
}

// NewJobInfo returns an empty job namespace/name in the default queue.
func NewJobInfo(namespace, name string) *JobInfo {
	return &JobInfo{
		UID:       NewJobID(namespace, name),
		Namespace: namespace,
		Name:      name,
		Queue:     DefaultQueue,
		Tasks:     map[TaskID]*TaskInfo{},
	}
}

// AddTask adds a task to the job. A task already present is an error: it
// would be counted twice toward minMember.
func (j *JobInfo) AddTask(t *TaskInfo) error {
	if t.Job != j.UID {
		return fmt.Errorf("task %s belongs to job %q, not %q", t.Key(), t.Job, j.UID)
	}
	if _, ok := j.Tasks[t.UID]; ok {
		return fmt.Errorf("job %s: task %s (uid %s) added twice", j.UID, t.Key(), t.UID)
	}
	if j.Tasks == nil {
		j.Tasks = map[TaskID]*TaskInfo{}
	}
	j.Tasks[t.UID] = t
	return nil
}

// ReadyCount is the number of tasks that count toward MinMember: allocated
// in this session, bound, or running.
func (j *JobInfo) ReadyCount() int32 {
	var n int32
	for _, t := range j.Tasks {
		if t.Status.CountsTowardReady() {
			n++
		}
	}
	return n
}

// ReadyCountByRole is ReadyCount per role.
func (j *JobInfo) ReadyCountByRole() map[string]int32 {
	return j.countByRole(TaskStatus.CountsTowardReady)
}

// ValidCount is the number of tasks that count now or could once placed
// (pending, allocated, bound, running): the most the job can ever reach
// without new pods.
func (j *JobInfo) ValidCount() int32 {
	var n int32
	for _, t := range j.Tasks {
		if t.Status.CanBecomeReady() {
			n++
		}
	}
	return n
}

// ValidCountByRole is ValidCount per role.
func (j *JobInfo) ValidCountByRole() map[string]int32 {
	return j.countByRole(TaskStatus.CanBecomeReady)
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

// IsReady reports whether the gang may run: at least MinMember tasks and,
// for every role, at least MinTaskMember[role] tasks are allocated, bound or
// running.
func (j *JobInfo) IsReady() bool {
	if j.ReadyCount() < j.MinMember {
		return false
	}
	if len(j.MinTaskMember) == 0 {
		return true
	}
	byRole := j.ReadyCountByRole()
	for role, min := range j.MinTaskMember {
		if byRole[role] < min {
			return false
		}
	}
	return true
}

// PendingTasks returns the tasks waiting for a node, in TaskLess order: pod
// priority, then age, then name. The order is deterministic; no role is
// assumed to go first.
func (j *JobInfo) PendingTasks() []*TaskInfo {
	var tasks []*TaskInfo
	for _, t := range j.Tasks {
		if t.Status == Pending {
			tasks = append(tasks, t)
		}
	}
	slices.SortFunc(tasks, func(l, r *TaskInfo) int {
		switch {
		case TaskLess(l, r):
			return -1
		case TaskLess(r, l):
			return 1
		}
		return 0
	})
	return tasks
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
