package framework

import (
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// PendingTasks returns job's tasks waiting for a node in the session's task
// order (TaskCompare): the order allocate places them in and the minimal
// gang picks them. The slice is shared: callers must not change it.
//
// A cycle asks for a waiting gang's pending tasks several times (enqueue's
// minimal gang, allocate, the diagnosis of a gang not placed), and a
// backlog of thousands of gangs makes that thousands of sorts a cycle. So
// the session keeps each job's answer and gives it again for as long as
// the same tasks are pending: every task in it still Pending and no other
// one of the job, a walk over the job's tasks that allocates nothing. The
// order itself cannot change meanwhile: task orders compare what a task
// derives from its pod (TaskOrderFn), and a session adds no task to a job.
// An answer gone stale is replaced, never changed, so a slice handed out
// stays as it was.
func (ssn *Session) PendingTasks(job *api.JobInfo) []*api.TaskInfo {
	if tasks, ok := ssn.pending[job]; ok && samePending(job, tasks) {
		return tasks
	}
	tasks := job.PendingTasks()
	slices.SortStableFunc(tasks, ssn.TaskCompare)
	if ssn.pending == nil {
		ssn.pending = make(map[*api.JobInfo][]*api.TaskInfo, len(ssn.Jobs))
	}
	ssn.pending[job] = tasks
	return tasks
}

// samePending reports whether tasks, pending tasks of job when they were
// listed, are still exactly job's pending tasks.
func samePending(job *api.JobInfo, tasks []*api.TaskInfo) bool {
	for _, t := range tasks {
		if t.Status != api.Pending {
			return false
		}
	}
	n := 0
	for _, t := range job.Tasks {
		if t.Status == api.Pending {
			n++
		}
	}
	return n == len(tasks)
}
