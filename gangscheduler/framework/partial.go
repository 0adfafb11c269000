package framework

import (
	"fmt"
	"maps"
	"time"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// PartialGang is what a session found about a gang left partial (some
// members bound or running, the gang not whole) after its actions: see
// api.JobInfo.Partial and the PartialGangs action.
type PartialGang struct {
	// Since is when the gang was first seen partial: its PodGroup's
	// record, or this session's Now if there was none.
	Since time.Time
	// Reason is the PodGroup Partial condition's reason:
	// MembersMissing, Preempted, Stuck or Reclaimed.
	Reason string
	// Message says, for people, what is missing and what happens next.
	Message string
}

// RecordPartial keeps what the session found about a partial gang, for
// the PodGroup status written after the session. The last record wins.
func (ssn *Session) RecordPartial(job api.JobID, p PartialGang) {
	if ssn.partial == nil {
		ssn.partial = map[api.JobID]PartialGang{}
	}
	ssn.partial[job] = p
}

// PartialGangs returns the records of RecordPartial.
func (ssn *Session) PartialGangs() map[api.JobID]PartialGang {
	return maps.Clone(ssn.partial)
}

// ReasonPreempted is the validity reason of a gang some of whose members
// were preempted while others still hold nodes.
const ReasonPreempted = "Preempted"

// preemptedStillHeld refuses a gang that is being preempted: some member
// carries a scheduler's preemption mark and others still hold nodes. No
// action may place anything of it (completing it would take the room
// freed for the preemptor); the PartialGangs action deletes the rest.
func preemptedStillHeld(job *api.JobInfo) *ValidateResult {
	var victim *api.TaskInfo
	holds := false
	for _, t := range job.Tasks {
		if t.Preempted && (victim == nil || t.Name < victim.Name) {
			victim = t
		}
		holds = holds || t.Status == api.Bound || t.Status == api.Running
	}
	if victim == nil || !holds {
		return nil
	}
	return &ValidateResult{
		Reason:  ReasonPreempted,
		Message: fmt.Sprintf("member %s was preempted: the rest of the gang is deleted, and the gang is placed again whole once its pods are recreated", victim.Key()),
	}
}
