package actions

import (
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Backfill places pods that request nothing, after allocate, on any node
// that fits them, one pod at a time.
//
// It handles exactly the pending pods that:
//
//   - request no resources at all: after the Kubernetes request rules
//     (api.PodRequests: containers, init containers, sidecars, pod
//     overhead, via component-helpers) every cpu, memory,
//     ephemeral-storage and extended-resource request is zero, as for a
//     BestEffort pod. Such a pod only takes a pod slot (and its host ports,
//     if any) on its node;
//   - belong to a job in an existing, open queue that the job-validity
//     rules accept (framework.Session.JobValid);
//   - belong to an admitted job (framework.Session.MayAllocate: any job when
//     no enqueue ran), or to a job whose gang needs at most one member
//     (minMember <= 1 and the minTaskMember entries add up to at most 1):
//     such a job is complete with this one pod, and a pod that requests
//     nothing takes nothing admission would have to protect;
//   - fit their queue (framework.Session.Allocatable: a zero request takes
//     none of a share, but a capability on pods still counts).
//
// Each pod is placed in a statement of its own on its best feasible node
// (predicates and node order, as allocate), and the statement is committed
// only when the job is ready afterwards (framework.Session.JobReady: the
// gang plugin's minMember and minTaskMember, counting what is already
// allocated, bound or running). That is the whole gang check, and it is why
// backfill cannot break all-or-nothing: it never forms a gang. A pod of a
// multi-member gang that is not already formed leaves the job not ready
// alone, so its statement is discarded and nothing of that gang is placed;
// those pods wait for allocate, which places the gang whole or not at all.
// What backfill does place is either a whole single-member job or an extra
// member of a gang whose minimums are already met.
//
// A single-member job that was not admitted is admitted (Session.Admit)
// when its pod is placed, so that its PodGroup leaves Pending.
type Backfill struct{}

// NewBackfill returns the backfill action.
func NewBackfill() *Backfill { return &Backfill{} }

// Name is "backfill".
func (*Backfill) Name() string { return "backfill" }

// Execute runs backfill on the session.
func (b *Backfill) Execute(ssn *framework.Session) {
	var jobs []*api.JobInfo
	for _, job := range ssn.Jobs {
		if !job.HasPendingTasks() {
			continue
		}
		if q, ok := ssn.Queues[job.Queue]; !ok || !q.IsOpen() {
			continue
		}
		if !ssn.MayAllocate(job) && NeedsSeveral(job) {
			continue
		}
		jobs = append(jobs, job)
	}
	// Queue order first, then job order: deterministic, and the same
	// preference as allocate's.
	slices.SortFunc(jobs, func(l, r *api.JobInfo) int {
		if l.Queue != r.Queue {
			if c := ssn.QueueCompare(ssn.Queues[l.Queue], ssn.Queues[r.Queue]); c != 0 {
				return c
			}
		}
		return ssn.JobCompare(l, r)
	})
	for _, job := range jobs {
		if ssn.JobValid(job) != nil {
			continue
		}
		b.backfillJob(ssn, ssn.Queues[job.Queue], job)
	}
}

func (b *Backfill) backfillJob(ssn *framework.Session, queue *api.QueueInfo, job *api.JobInfo) {
	// What the gang rule still lacks, kept up to date as pods are placed: a
	// pod is only worth a try when, placed alone, it leaves the job ready.
	ready, byRole := job.ReadyCount(), job.ReadyCountByRole()
	readyWith := func(role string) bool {
		if ready+1 < job.MinMember {
			return false
		}
		for r, min := range job.MinTaskMember {
			n := byRole[r]
			if r == role {
				n++
			}
			if n < min {
				return false
			}
		}
		return true
	}
	// Asked before placing: a placed member would make a gang that lost
	// every member look admitted (framework.Session.IsAdmitted).
	admitted := ssn.IsAdmitted(job)
	tasks := ssn.PendingTasks(job)
	for _, task := range tasks {
		if !RequestsNothing(task) || !readyWith(task.Role) || !ssn.Allocatable(queue, task) {
			continue
		}
		node := ssn.BestNode(ssn.ClassOf(task), task)
		if node == nil {
			continue
		}
		stmt := ssn.Statement()
		if err := stmt.Allocate(task, node); err != nil {
			stmt.Discard() // cannot happen for a pending task of this session
			continue
		}
		// The readiness rules (the gang plugin and any other) decide; the
		// check above only saves trying pods that cannot pass them.
		if !ssn.JobReady(job) {
			stmt.Discard()
			continue
		}
		stmt.Commit()
		ready++
		byRole[task.Role]++
		if ssn.AdmissionEnabled() && !admitted {
			ssn.Admit(job)
		}
	}
}

// RequestsNothing reports whether task requests no resource at all (pods
// aside: every pod takes one).
func RequestsNothing(task *api.TaskInfo) bool {
	r := &task.Resreq
	return r.MilliCPU == 0 && r.Memory == 0 && r.EphemeralStorage == 0 && len(task.ScalarRequests) == 0
}

// NeedsSeveral reports whether job's gang needs more than one member:
// minMember above 1, or minTaskMember entries adding up to more than 1.
func NeedsSeveral(job *api.JobInfo) bool {
	if job.MinMember > 1 {
		return true
	}
	var sum int32
	for _, n := range job.MinTaskMember {
		sum += n
	}
	return sum > 1
}
