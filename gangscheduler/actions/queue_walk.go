package actions

import (
	"fmt"
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// queueWalk hands out an action's jobs one at a time, from the queue the
// session's queue order puts first. The order is asked again before every
// job, so an order that depends on what queues hold (a share plugin) sees
// the placements made so far in this session.
type queueWalk struct {
	ssn      *framework.Session
	perQueue map[api.QueueID][]*api.JobInfo
	queues   []*api.QueueInfo
}

// newQueueWalk collects the session's jobs for an action: those skip
// rejects are left out silently; a job whose queue is missing or closed is
// recorded as unschedulable; the rest go in if admit accepts them (admit
// records its own reasons). Each queue's jobs are in job order.
func newQueueWalk(ssn *framework.Session, skip, admit func(*api.JobInfo) bool) *queueWalk {
	w := &queueWalk{ssn: ssn, perQueue: map[api.QueueID][]*api.JobInfo{}}
	for _, job := range ssn.Jobs {
		if skip(job) {
			continue
		}
		q, ok := ssn.Queues[job.Queue]
		switch {
		case !ok:
			ssn.RecordUnschedulable(job.UID, ReasonQueueNotFound, fmt.Sprintf("queue %q does not exist", job.Queue))
			continue
		case !q.IsOpen():
			ssn.RecordUnschedulable(job.UID, ReasonQueueClosed, fmt.Sprintf("queue %q is closed", job.Queue))
			continue
		}
		if admit(job) {
			w.perQueue[q.Name] = append(w.perQueue[q.Name], job)
		}
	}
	for name, jobs := range w.perQueue {
		slices.SortFunc(jobs, ssn.JobCompare)
		w.queues = append(w.queues, ssn.Queues[name])
	}
	return w
}

// next returns the next job and its queue, or false when none is left.
func (w *queueWalk) next() (*api.QueueInfo, *api.JobInfo, bool) {
	if len(w.queues) == 0 {
		return nil, nil, false
	}
	qi := 0
	for i := 1; i < len(w.queues); i++ {
		if w.ssn.QueueCompare(w.queues[i], w.queues[qi]) < 0 {
			qi = i
		}
	}
	queue := w.queues[qi]
	job := w.perQueue[queue.Name][0]
	w.perQueue[queue.Name] = w.perQueue[queue.Name][1:]
	if len(w.perQueue[queue.Name]) == 0 {
		w.queues = slices.Delete(w.queues, qi, qi+1)
	}
	return queue, job, true
}

func always(*api.JobInfo) bool { return true }
