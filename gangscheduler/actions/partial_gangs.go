package actions

import (
	"fmt"
	"slices"
	"strings"
	"time"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// DefaultPartialGangGrace is how long a gang may stay partial before its
// bound members are reclaimed, unless configured otherwise: long enough
// for a controller to recreate a lost member and for a refused bind to be
// retried elsewhere, short enough that a stranded gang does not sit on
// GPUs for minutes.
const DefaultPartialGangGrace = 30 * time.Second

// PartialGangs ends what all-or-nothing forbids to last: a gang with some
// members bound or running that is not whole (api.JobInfo.Partial). Binds
// can fail after the decision (refused by an admission policy, the node
// deleted, the scheduler killed in the middle of a commit), members can
// be deleted or preempted while the others run; each leaves such a gang.
//
// It runs after the configured actions in every cycle; it is not an
// action one configures, because no configuration may leave a partial
// gang on the cluster. By then allocate has tried to complete every
// partial gang, before any other gang (see Allocate), so a gang still
// partial could not be completed in this cycle. For each such gang that
// has not run its course (api.JobInfo.Done: its controller decides then):
//
//   - if a member was preempted (api.TaskInfo.Preempted), every member
//     still on a node is deleted now: a victim gang is never left half
//     running, whatever part of its eviction failed (PodGroup reason
//     Preempted);
//   - otherwise, until Grace has passed since the gang was first seen
//     partial (api.JobInfo.PartialSince; the snapshot's time if this is
//     the first time), nothing happens (MembersMissing): a controller is
//     usually recreating a lost member, which allocate then places first
//     of all;
//   - after Grace, every member on a node is deleted, so that the gang
//     holds nothing (Reclaimed); their controllers recreate them, and the
//     gang is placed whole or not at all. A member without a controller
//     (api.TaskInfo.Controlled) would never come back, so then nothing is
//     deleted and the gang is reported Stuck for a person to resolve.
//
// Members are deleted rather than evicted through the Eviction API: a
// PodDisruptionBudget guards an application's availability, and a gang
// that is not whole is not available; the budget would keep exactly the
// partial gang this exists to remove. Each deletion is preceded by a
// DisruptionTarget condition on the pod, as kube-scheduler marks its
// victims, so that the pod's controller sees why it went (the binder).
type PartialGangs struct {
	Grace time.Duration
}

// NewPartialGangs returns the action with the given grace period.
func NewPartialGangs(grace time.Duration) *PartialGangs { return &PartialGangs{Grace: grace} }

// Name is "partial-gangs".
func (*PartialGangs) Name() string { return "partial-gangs" }

// Execute runs the action on the session.
func (p *PartialGangs) Execute(ssn *framework.Session) {
	now := ssn.Now
	// The partial gangs, in UID order; a cycle has few or none, so the
	// backlog's gangs are checked, not sorted.
	var partial []api.JobID
	for id, job := range ssn.Jobs {
		if job.Partial() && !job.Done() {
			partial = append(partial, id)
		}
	}
	if len(partial) == 0 {
		return
	}
	slices.Sort(partial)
	findings := ssn.Unschedulable()
	for _, id := range partial {
		job := ssn.Jobs[id]
		since := now
		if job.PartialSince != nil {
			since = *job.PartialSince
		}
		held := heldTasks(job)
		state := job.MemberSummary()
		why := ""
		if f, ok := findings[id]; ok {
			why = f.Reason + ": " + f.Message
		}
		if victim := preemptedMember(job); victim != nil {
			reason := fmt.Sprintf("Member %s of gang %s was preempted; deleting the rest of the gang (%s)", victim.Key(), id, state)
			p.reclaim(ssn, held, reason)
			ssn.RecordPartial(id, framework.PartialGang{Since: since, Reason: schedulingv1alpha1.PodGroupReasonPreempted, Message: reason})
			continue
		}
		if waited := now.Sub(since); waited < p.Grace {
			msg := fmt.Sprintf("%s; the missing members are placed first of all, and the members on nodes are deleted at %s if the gang is still not whole",
				state, since.Add(p.Grace).UTC().Format(time.RFC3339))
			if why != "" {
				msg += "; this cycle: " + why
			}
			ssn.RecordPartial(id, framework.PartialGang{Since: since, Reason: schedulingv1alpha1.PodGroupReasonMembersMissing, Message: msg})
			continue
		}
		if orphan := uncontrolled(held); orphan != nil {
			msg := fmt.Sprintf("%s for %s, but pod %s has no controller to recreate it, so nothing is deleted: complete the gang or delete its pods",
				state, p.Grace, orphan.Key())
			ssn.RecordPartial(id, framework.PartialGang{Since: since, Reason: schedulingv1alpha1.PodGroupReasonStuck, Message: msg})
			continue
		}
		reason := fmt.Sprintf("Gang %s was partial for %s (%s) and could not be completed", id, p.Grace, state)
		if why != "" {
			reason += " (" + why + ")"
		}
		reason += "; deleting its members on nodes for their controller to recreate"
		p.reclaim(ssn, held, reason)
		ssn.RecordPartial(id, framework.PartialGang{Since: since, Reason: schedulingv1alpha1.PodGroupReasonReclaimed, Message: reason})
	}
}

// reclaim deletes tasks in one statement.
func (p *PartialGangs) reclaim(ssn *framework.Session, tasks []*api.TaskInfo, reason string) {
	stmt := ssn.Statement()
	for _, t := range tasks {
		// Cannot fail: a Bound or Running task is on its node in the
		// session, or on a node the session does not have.
		_ = stmt.Reclaim(t, reason)
	}
	stmt.Commit()
}

// heldTasks are the gang's Bound and Running tasks, by name.
func heldTasks(job *api.JobInfo) []*api.TaskInfo {
	var out []*api.TaskInfo
	for _, t := range job.Tasks {
		if t.Status == api.Bound || t.Status == api.Running {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(l, r *api.TaskInfo) int { return strings.Compare(l.Key(), r.Key()) })
	return out
}

// preemptedMember is the first member, by name, that a scheduler marked
// for preemption; nil if none.
func preemptedMember(job *api.JobInfo) *api.TaskInfo {
	var first *api.TaskInfo
	for _, t := range job.Tasks {
		if t.Preempted && (first == nil || t.Key() < first.Key()) {
			first = t
		}
	}
	return first
}

// uncontrolled is the first task, in order, without a controller.
func uncontrolled(tasks []*api.TaskInfo) *api.TaskInfo {
	for _, t := range tasks {
		if !t.Controlled {
			return t
		}
	}
	return nil
}
