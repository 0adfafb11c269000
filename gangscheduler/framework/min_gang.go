package framework

import (
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// MinimalGang returns the pending tasks that, with the tasks already
// allocated, bound or running, make the smallest set meeting every minimum
// of job: first, role by role in name order, the first
// MinTaskMember[role] - ready[role] pending tasks of that role; then the
// first pending tasks of any role until MinMember is reached. "First" is
// the session's task order (TaskCompare), so the choice is deterministic
// and matches the order allocate places tasks in.
//
// ok is false when the job has too few pending tasks to meet its minimums
// (the gang plugin's JobValid says the same, with a reason). An empty slice
// with ok true means the placed tasks already meet them.
func (ssn *Session) MinimalGang(job *api.JobInfo) (tasks []*api.TaskInfo, ok bool) {
	pending := ssn.PendingTasks(job)
	taken := make([]bool, len(pending))
	n := 0
	ok = true

	if len(job.MinTaskMember) > 0 {
		roles := make([]string, 0, len(job.MinTaskMember))
		for role := range job.MinTaskMember {
			roles = append(roles, role)
		}
		slices.Sort(roles)
		for _, role := range roles {
			need := job.MinTaskMember[role] - job.ReadyCountOfRole(role)
			for i, t := range pending {
				if need <= 0 {
					break
				}
				if t.Role == role {
					taken[i] = true
					n++
					need--
				}
			}
			if need > 0 {
				ok = false
			}
		}
	}
	need := job.MinMember - job.ReadyCount() - int32(n)
	for i := range pending {
		if need <= 0 {
			break
		}
		if !taken[i] {
			taken[i] = true
			n++
			need--
		}
	}
	if need > 0 {
		ok = false
	}
	tasks = make([]*api.TaskInfo, 0, n)
	for i, t := range pending {
		if taken[i] {
			tasks = append(tasks, t)
		}
	}
	return tasks, ok
}

// MinimalNeed is what job still needs placed to become ready: the requests
// of its MinimalGang, or, while it has no pods (or too few to make one),
// its MinResources. The enqueue action admits a job against it, and a
// queue-share plugin reserves it for jobs admitted but not yet placed.
func (ssn *Session) MinimalNeed(job *api.JobInfo) api.Resource {
	if job.HasNoPods() {
		return job.MinResources.Clone()
	}
	tasks, ok := ssn.MinimalGang(job)
	var need api.Resource
	for _, t := range tasks {
		t.AddRequestsTo(&need)
	}
	if !ok && !job.MinResources.IsZero() {
		return job.MinResources.Clone()
	}
	return need
}
