// Package status computes and writes what a cycle learnt about each gang
// and queue: the PodGroup and Queue status, and the events that go with a
// change. Compute and ComputeQueue are pure; Writer does the API calls.
package status

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Event reasons on PodGroups (besides the condition reasons).
const (
	ReasonScheduled     = "Scheduled"
	ReasonUnschedulable = "Unschedulable"
	ReasonFinished      = "Finished"
	ReasonFailed        = "Failed"
)

// Gang is one gang as a cycle leaves it, after its binds.
type Gang struct {
	// PodGroup is the object the cycle read (spec, generation).
	PodGroup *schedulingv1alpha1.PodGroup
	// Old is the status to compare against: the PodGroup's, or what this
	// scheduler last wrote if the informer does not show that yet (see
	// Writer.OldPodGroupStatus).
	Old schedulingv1alpha1.PodGroupStatus
	// Job holds the gang's tasks with the bind results applied: bound
	// tasks are Bound, tasks whose bind failed are Pending.
	Job *api.JobInfo
	// Admitted says the session admitted the gang (ssn.Admitted).
	Admitted bool
	// Revoked says the session took back the gang's earlier admission
	// (ssn.Revoked): it is Pending again.
	Revoked bool
	// Unschedulable is the session's record for the gang, nil if none.
	Unschedulable *framework.Unschedulable
	// Diagnosis explains a resource failure role by role; "" if there is
	// none. It replaces the record's message, which names only one pod.
	Diagnosis string
	// Partial is the session's record for a gang left partial, nil if
	// none (framework.PartialGang).
	Partial *framework.PartialGang
	// Topology is where the session placed a gang with a topology policy,
	// nil if it placed none (framework.TopologyOutcome).
	Topology *framework.TopologyOutcome
	// Holds are the nodes the gang held from younger or lower-priority
	// gangs this cycle (framework.Session.Hold); its Unschedulable message
	// names them.
	Holds []string
	// QuietUntil is when a gang that stays unschedulable may next have a
	// new reason or message written (Writer.UnschedulableWrittenAt plus
	// the refresh period); zero writes every change at once. See Compute.
	QuietUntil time.Time
}

// Event is an event to record.
type Event struct {
	Type, Reason, Message string
}

// Update is the status a gang should have now and what to announce.
type Update struct {
	Status schedulingv1alpha1.PodGroupStatus
	// Events go on the PodGroup.
	Events []Event
	// PodEvent, if set, goes on every pending pod of the gang: it tells
	// someone looking at one pod why its gang waits.
	PodEvent *Event
	// Scheduled says minMember pods (per role too) are bound or running.
	Scheduled bool
	// Partial says the gang is partial after the cycle: some members bound
	// or running, the gang not whole (the Partial condition is True).
	Partial bool
}

// Event reasons of the Partial condition's changes.
const (
	ReasonPartialGang = "PartialGang"
	ReasonReclaimed   = schedulingv1alpha1.PodGroupReasonReclaimed
	ReasonStuck       = schedulingv1alpha1.PodGroupReasonStuck
)

// PartialSince is when the gang became partial, as st records it (the
// Partial condition's lastTransitionTime while it is True); nil if it is
// not partial.
func PartialSince(st schedulingv1alpha1.PodGroupStatus) *time.Time {
	c := meta.FindStatusCondition(st.Conditions, schedulingv1alpha1.PodGroupPartial)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	t := c.LastTransitionTime.Time
	return &t
}

// Compute derives a gang's status from its pods and the cycle's findings.
//
// Phase (kept deliberately simple; see the PodGroupPhase constants):
//   - Finished: every pod has terminated and at least minMember succeeded;
//   - Failed: some pod failed and fewer than minMember can still succeed
//     (succeeded plus pending, bound and running pods);
//   - Running: minMember pods (and every minTaskMember) are bound or
//     running. Bound counts, as in Volcano: the gang has its nodes, and
//     whether the kubelet has started the containers yet is not the
//     scheduler's business;
//   - Unknown: the gang was Running and has lost members, but some are
//     still bound or running; its controller is expected to replace them;
//   - Inqueue: admitted (by this session's enqueue, or earlier) and not
//     placed yet. An earlier admission the session revoked (a gang none of
//     whose members is placed gives it back when a preemptor waits for its
//     room or takes its admission; actions.Preempt) is Pending again;
//   - Pending: otherwise. A gang that ran and lost every member (preempted
//     whole, or torn down for a restart) comes back here: it gives its
//     admission back, so the queue share it held goes to the gangs that
//     wait (the preemptor first), and it is admitted afresh when it fits.
//
// Phase is recomputed every cycle from the pods, so a Failed gang whose
// controller recreates its pods is scheduled again.
//
// Conditions and times (not touched once Finished or Failed):
//   - scheduleStartTime is set the first cycle the gang has pods, and reset
//     when a Running gang loses members (a new attempt starts);
//   - scheduleEndTime is set when Scheduled turns True, cleared while an
//     attempt is in progress;
//   - Scheduled is True (GangBound) or False (Waiting);
//   - Unschedulable is True with the session's reason and the per-role
//     diagnosis while the session records one; False once scheduled.
//     Without a record this cycle (e.g. a pod's bind failed and is retried)
//     it is left as it was. While it stays True, a new reason or message
//     is written only from QuietUntil on (except turning ScheduleTimeout):
//     a gang that waits in a busy cluster gets a new fit summary every
//     cycle, and writing each (a status patch and an event, the pods'
//     events on a new reason) cost more API writes than the binds
//     themselves, as kube-scheduler's backoff spares it for a pod;
//   - past scheduleTimeoutSeconds since scheduleStartTime, Unschedulable
//     becomes reason ScheduleTimeout. The scheduler keeps trying: nothing
//     outlasts a cycle for a gang that is not whole (allocate binds a gang
//     entirely or not at all, and a hold lasts one cycle), so there is
//     nothing to release, and giving up would only make someone recreate
//     the PodGroup to try again.
func Compute(g Gang, now time.Time) Update {
	pg, job := g.PodGroup, g.Job
	old := g.Old
	st := *old.DeepCopy()
	c := countTasks(job)
	st.Admitted, st.Running, st.Succeeded, st.Failed = c.placed, c.running, c.succeeded, c.failed
	ready := job.IsReady()
	st.Phase = phase(old.Phase, c, ready, g.Admitted, g.Revoked, job.MinMember)
	u := Update{Scheduled: ready && !terminal(st.Phase)}

	if terminal(st.Phase) {
		if st.Phase != old.Phase {
			if st.Phase == schedulingv1alpha1.PodGroupFinished {
				u.Events = append(u.Events, Event{corev1.EventTypeNormal, ReasonFinished,
					fmt.Sprintf("%d pods succeeded (minMember %d)", c.succeeded, job.MinMember)})
			} else {
				u.Events = append(u.Events, Event{corev1.EventTypeWarning, ReasonFailed,
					fmt.Sprintf("%d pods failed; at most %d of minMember %d can still succeed", c.failed, c.succeeded+c.valid, job.MinMember)})
			}
		}
		u.Status = st
		return u
	}

	if old.Phase == schedulingv1alpha1.PodGroupRunning && !ready {
		st.ScheduleStartTime, st.ScheduleEndTime = nil, nil
	}
	if st.ScheduleStartTime == nil && c.total > 0 {
		st.ScheduleStartTime = ptrTime(now)
	}
	cond := func(ctype string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: ctype, Status: status, Reason: reason, Message: message,
			ObservedGeneration: pg.Generation, LastTransitionTime: metav1.NewTime(now),
		})
	}

	if ready {
		if st.ScheduleEndTime == nil {
			st.ScheduleEndTime = ptrTime(now)
		}
		placed := fmt.Sprintf("%d pods bound or running", c.placed)
		if c.succeeded > 0 {
			placed += fmt.Sprintf(", %d succeeded", c.succeeded)
		}
		cond(schedulingv1alpha1.PodGroupScheduled, metav1.ConditionTrue, schedulingv1alpha1.PodGroupReasonGangBound,
			fmt.Sprintf("%s (minMember %d)", placed, job.MinMember))
		cond(schedulingv1alpha1.PodGroupUnschedulable, metav1.ConditionFalse, schedulingv1alpha1.PodGroupReasonGangBound, "")
	} else {
		st.ScheduleEndTime = nil
		cond(schedulingv1alpha1.PodGroupScheduled, metav1.ConditionFalse, schedulingv1alpha1.PodGroupReasonWaiting,
			fmt.Sprintf("%d of minMember %d pods bound", c.placed, job.MinMember))
		if reason, message, ok := unschedulable(g, &st, now); ok && !quiet(g, st, reason, now) {
			cond(schedulingv1alpha1.PodGroupUnschedulable, metav1.ConditionTrue, reason, message)
		}
	}
	u.Partial = partialCondition(g, &st, now)
	topologyStatus(g, &st, now)
	u.Status = st
	u.Events, u.PodEvent = transitions(old.Conditions, st.Conditions, c, job.MinMember)
	return u
}

// partialCondition sets the Partial condition and reports whether the gang
// is partial:
//   - with the session's record (framework.PartialGang), its reason and
//     message, True since the record's time, or False once Reclaimed;
//   - partial without a record (binds of this cycle failed after the
//     decision made it whole), True with reason MembersMissing;
//   - otherwise, if it was True, False with reason Whole (members hold
//     nodes: the gang is whole) or NoneBound (none does: it is being torn
//     down); left out if the gang was never partial.
func partialCondition(g Gang, st *schedulingv1alpha1.PodGroupStatus, now time.Time) bool {
	set := func(status metav1.ConditionStatus, reason, message string, since time.Time) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: schedulingv1alpha1.PodGroupPartial, Status: status, Reason: reason, Message: message,
			ObservedGeneration: g.PodGroup.Generation, LastTransitionTime: metav1.NewTime(since),
		})
	}
	partial := g.Job.Partial()
	switch {
	case g.Partial != nil && g.Partial.Reason == schedulingv1alpha1.PodGroupReasonReclaimed:
		set(metav1.ConditionFalse, g.Partial.Reason, g.Partial.Message, now)
	case g.Partial != nil && partial:
		set(metav1.ConditionTrue, g.Partial.Reason, g.Partial.Message, g.Partial.Since)
	case partial:
		set(metav1.ConditionTrue, schedulingv1alpha1.PodGroupReasonMembersMissing, g.Job.MemberSummary()+
			"; the missing members are placed first of all, and the members on nodes are deleted if the gang cannot be completed within the partial-gang grace period", now)
	case meta.IsStatusConditionTrue(st.Conditions, schedulingv1alpha1.PodGroupPartial) && g.Job.HoldsNodes():
		set(metav1.ConditionFalse, schedulingv1alpha1.PodGroupReasonWhole, "the gang is whole", now)
	case meta.IsStatusConditionTrue(st.Conditions, schedulingv1alpha1.PodGroupPartial):
		set(metav1.ConditionFalse, schedulingv1alpha1.PodGroupReasonNoneBound, "no member is bound any more; the gang is placed whole or not at all once its pods are back", now)
	}
	return partial
}

// unschedulable returns the Unschedulable condition's reason and message
// for a gang that is not ready, or false to leave the condition alone.
func unschedulable(g Gang, st *schedulingv1alpha1.PodGroupStatus, now time.Time) (string, string, bool) {
	var reason, message string
	switch {
	case g.Unschedulable != nil:
		reason, message = g.Unschedulable.Reason, g.Unschedulable.Message
		if g.Diagnosis != "" {
			message = g.Diagnosis
		}
	default:
		// No finding this cycle: a timeout can still fall due, on the
		// strength of the last finding.
		old := meta.FindStatusCondition(st.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
		if old == nil || old.Status != metav1.ConditionTrue || old.Reason == schedulingv1alpha1.PodGroupReasonScheduleTimeout {
			return "", "", false
		}
		reason, message = old.Reason, old.Message
	}
	if g.Unschedulable != nil && len(g.Holds) > 0 {
		message += holdNote(g.Holds)
	}
	timeout := g.PodGroup.Spec.ScheduleTimeoutSeconds
	if timeout != nil && st.ScheduleStartTime != nil && now.Sub(st.ScheduleStartTime.Time) >= time.Duration(*timeout)*time.Second {
		message = fmt.Sprintf("not scheduled within scheduleTimeoutSeconds (%ds); still trying. %s: %s", *timeout, reason, message)
		reason = schedulingv1alpha1.PodGroupReasonScheduleTimeout
	}
	return reason, message, true
}

// quiet says a gang's Unschedulable condition, True already, keeps its
// reason and message this cycle rather than take the new reason: it was
// written less than the refresh period ago (Gang.QuietUntil). A schedule
// timeout falling due is written at once.
func quiet(g Gang, st schedulingv1alpha1.PodGroupStatus, reason string, now time.Time) bool {
	old := meta.FindStatusCondition(st.Conditions, schedulingv1alpha1.PodGroupUnschedulable)
	if old == nil || old.Status != metav1.ConditionTrue || !now.Before(g.QuietUntil) {
		return false
	}
	return reason != schedulingv1alpha1.PodGroupReasonScheduleTimeout || old.Reason == reason
}

// holdNote is what a gang's message says of the nodes it holds.
func holdNote(nodes []string) string {
	shown := nodes[:min(len(nodes), 3)]
	more := ""
	if len(nodes) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(nodes)-len(shown))
	}
	noun := "nodes"
	if len(nodes) == 1 {
		noun = "node"
	}
	return fmt.Sprintf("; it holds %d %s (%s%s) from younger or lower-priority gangs until it fits",
		len(nodes), noun, strings.Join(shown, ", "), more)
}

// transitions returns the events for condition changes: Scheduled turning
// True, Unschedulable turning True or changing its reason or message. The
// gang's pending pods get an event too when Unschedulable turns True or
// changes its reason, not on every new message: a backlog's fit summaries
// change with every bind and release, and an event on each pod each time
// would write more to the API server than the binds themselves.
func transitions(before, after []metav1.Condition, c taskCounts, minMember int32) ([]Event, *Event) {
	var events []Event
	var podEvent *Event
	if now := meta.FindStatusCondition(after, schedulingv1alpha1.PodGroupScheduled); now != nil && now.Status == metav1.ConditionTrue &&
		!meta.IsStatusConditionTrue(before, schedulingv1alpha1.PodGroupScheduled) {
		events = append(events, Event{corev1.EventTypeNormal, ReasonScheduled,
			fmt.Sprintf("gang bound: %d pods on nodes (minMember %d)", c.placed, minMember)})
	}
	events = append(events, partialTransitions(before, after)...)
	now := meta.FindStatusCondition(after, schedulingv1alpha1.PodGroupUnschedulable)
	was := meta.FindStatusCondition(before, schedulingv1alpha1.PodGroupUnschedulable)
	if now != nil && now.Status == metav1.ConditionTrue &&
		(was == nil || was.Status != metav1.ConditionTrue || was.Reason != now.Reason || was.Message != now.Message) {
		reason := ReasonUnschedulable
		if now.Reason == schedulingv1alpha1.PodGroupReasonScheduleTimeout &&
			(was == nil || was.Reason != schedulingv1alpha1.PodGroupReasonScheduleTimeout) {
			reason = schedulingv1alpha1.PodGroupReasonScheduleTimeout
		}
		msg := now.Reason + ": " + now.Message
		events = append(events, Event{corev1.EventTypeWarning, reason, msg})
		if was == nil || was.Status != metav1.ConditionTrue || was.Reason != now.Reason {
			podEvent = &Event{corev1.EventTypeWarning, "FailedScheduling", msg}
		}
	}
	return events, podEvent
}

// topologyStatus records where a gang placed in this cycle went on its
// topology, and the TopologySatisfied condition: True when every rule was
// kept, False with the preferred rules that were not. A gang not placed
// this cycle keeps what it had.
func topologyStatus(g Gang, st *schedulingv1alpha1.PodGroupStatus, now time.Time) {
	if g.Topology == nil {
		return
	}
	p := &schedulingv1alpha1.TopologyPlacement{}
	for _, l := range g.Topology.Levels {
		lp := schedulingv1alpha1.LevelPlacement{Level: l.Level, Domains: []schedulingv1alpha1.DomainMembers{}}
		for _, d := range l.Domains {
			lp.Domains = append(lp.Domains, schedulingv1alpha1.DomainMembers{Name: d.Name, Members: int32(d.Members)})
		}
		p.Levels = append(p.Levels, lp)
	}
	st.Topology = p
	c := metav1.Condition{
		Type: schedulingv1alpha1.PodGroupTopologySatisfied, Status: metav1.ConditionTrue,
		Reason: schedulingv1alpha1.PodGroupReasonRulesKept, Message: "every rule of the topology policy was kept",
		ObservedGeneration: g.PodGroup.Generation, LastTransitionTime: metav1.NewTime(now),
	}
	if len(g.Topology.Unmet) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, schedulingv1alpha1.PodGroupReasonPreferenceNotMet
		c.Message = strings.Join(g.Topology.Unmet, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// partialTransitions returns the Partial condition's events: a Warning
// when the gang becomes partial, is found stuck, or is reclaimed.
func partialTransitions(before, after []metav1.Condition) []Event {
	now := meta.FindStatusCondition(after, schedulingv1alpha1.PodGroupPartial)
	if now == nil {
		return nil
	}
	was := meta.FindStatusCondition(before, schedulingv1alpha1.PodGroupPartial)
	if was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return nil
	}
	switch {
	case now.Reason == schedulingv1alpha1.PodGroupReasonReclaimed:
		return []Event{{corev1.EventTypeWarning, ReasonReclaimed, now.Message}}
	case now.Reason == schedulingv1alpha1.PodGroupReasonStuck:
		return []Event{{corev1.EventTypeWarning, ReasonStuck, now.Message}}
	case now.Status == metav1.ConditionTrue && (was == nil || was.Status != metav1.ConditionTrue):
		return []Event{{corev1.EventTypeWarning, ReasonPartialGang, now.Reason + ": " + now.Message}}
	}
	return nil
}

type taskCounts struct {
	total                      int32
	placed                     int32 // bound or running: counts toward minMember
	running, succeeded, failed int32
	valid                      int32 // pending, gated, bound or running: could still count
	live                       int32 // not terminated (terminating pods included)
}

func countTasks(job *api.JobInfo) taskCounts {
	var c taskCounts
	for _, t := range job.Tasks {
		c.total++
		switch t.Status {
		case api.Running:
			c.running++
		case api.Succeeded:
			c.succeeded++
		case api.Failed:
			c.failed++
		}
		if t.Status.CountsTowardReady() {
			c.placed++
		}
		// Members that run or may still run: the succeeded are counted
		// apart.
		if t.Status == api.Pending || t.Status.CountsTowardReady() || t.Status == api.Gated {
			c.valid++
		}
		if t.Status != api.Succeeded && t.Status != api.Failed {
			c.live++
		}
	}
	return c
}

func phase(old schedulingv1alpha1.PodGroupPhase, c taskCounts, ready, admitted, revoked bool, minMember int32) schedulingv1alpha1.PodGroupPhase {
	wasRunning := old == schedulingv1alpha1.PodGroupRunning || old == schedulingv1alpha1.PodGroupUnknown
	switch {
	case c.total > 0 && c.live == 0 && c.succeeded >= minMember:
		return schedulingv1alpha1.PodGroupFinished
	case c.failed > 0 && c.succeeded+c.valid < minMember:
		return schedulingv1alpha1.PodGroupFailed
	case ready:
		return schedulingv1alpha1.PodGroupRunning
	case wasRunning && c.placed > 0:
		return schedulingv1alpha1.PodGroupUnknown
	case admitted || (old == schedulingv1alpha1.PodGroupInqueue && !wasRunning && !revoked):
		return schedulingv1alpha1.PodGroupInqueue
	}
	return schedulingv1alpha1.PodGroupPending
}

func terminal(p schedulingv1alpha1.PodGroupPhase) bool {
	return p == schedulingv1alpha1.PodGroupFinished || p == schedulingv1alpha1.PodGroupFailed
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
