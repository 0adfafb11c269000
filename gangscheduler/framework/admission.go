package framework

import (
	"maps"
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Admit records that the enqueue action admitted a Pending job: the cache
// writes its PodGroup as Inqueue at commit, and later actions treat it as
// admitted within this session.
func (ssn *Session) Admit(job *api.JobInfo) {
	if ssn.admitted == nil {
		ssn.admitted = map[api.JobID]bool{}
	}
	ssn.admitted[job.UID] = true
	delete(ssn.revoked, job.UID)
}

// Revocable reports whether job holds an admission RevokeAdmission may
// take back: this session's (Admit) or an earlier one (phase Inqueue), and
// none of its members is on a node (one that is was admitted by whoever
// put it there; see IsAdmitted).
func (ssn *Session) Revocable(job *api.JobInfo) bool {
	if job.OccupiesNodes() {
		return false
	}
	return ssn.admitted[job.UID] || job.Phase == api.JobInqueue && !ssn.revoked[job.UID]
}

// RevokeAdmission takes back job's admission (Revocable): it is not
// admitted for the rest of the session, the queue-share plugins no longer
// count what it needs against its queue's admission budget (JobDequeued),
// an earlier admission's PodGroup is written Pending (Revoked), and a
// later session's enqueue asks again. It returns what undoes it, for a
// revocation that turns out to be of no use. A job not Revocable is left
// alone.
func (ssn *Session) RevokeAdmission(job *api.JobInfo) (undo func()) {
	if !ssn.Revocable(job) {
		return func() {}
	}
	need := ssn.MinimalNeed(job)
	this := ssn.admitted[job.UID]
	delete(ssn.admitted, job.UID)
	if !this {
		if ssn.revoked == nil {
			ssn.revoked = map[api.JobID]bool{}
		}
		ssn.revoked[job.UID] = true
	}
	ssn.JobDequeued(job, &need)
	return func() {
		if this {
			ssn.admitted[job.UID] = true
		} else {
			delete(ssn.revoked, job.UID)
		}
		ssn.JobEnqueued(job, &need)
	}
}

// IsAdmitted reports whether a job may have tasks allocated: it was admitted
// before this session (phase Inqueue or later, unless this session revoked
// it) or by it, or some member is on a node.
//
// A gang with a member on a node was admitted by whoever put it there,
// whatever its phase says: a scheduler killed between its binds and its
// status write leaves a Pending PodGroup with bound members. Such a gang
// must be completed (or reclaimed), never sent back to the admission queue
// holding its nodes.
//
// A gang that ran (Running or Unknown) and has no member left on a node was
// preempted whole or torn down for a restart: its admission is spent, and
// it is admitted afresh, in priority order with every other waiting gang.
// Otherwise its recreated pods would take the room (and the queue share)
// just freed for the gang that preempted it.
func (ssn *Session) IsAdmitted(job *api.JobInfo) bool {
	if ssn.admitted[job.UID] {
		return true
	}
	if job.OccupiesNodes() {
		return true
	}
	if ssn.revoked[job.UID] {
		return false
	}
	switch job.Phase {
	case api.JobPending, "", api.JobRunning, api.JobUnknown:
		return false
	}
	return true
}

// Admitted lists the jobs this session admitted, for the commit.
func (ssn *Session) Admitted() []api.JobID {
	out := make([]api.JobID, 0, len(ssn.admitted))
	for id := range ssn.admitted {
		out = append(out, id)
	}
	return out
}

// Revoked lists the jobs whose earlier admission this session took back
// (RevokeAdmission), for the commit: their PodGroups go back to Pending.
func (ssn *Session) Revoked() []api.JobID {
	return slices.Sorted(maps.Keys(ssn.revoked))
}
