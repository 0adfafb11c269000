package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// Admit records that the enqueue action admitted a Pending job: the cache
// writes its PodGroup as Inqueue at commit, and later actions treat it as
// admitted within this session.
func (ssn *Session) Admit(job *api.JobInfo) {
	if ssn.admitted == nil {
		ssn.admitted = map[api.JobID]bool{}
	}
	ssn.admitted[job.UID] = true
}

// IsAdmitted reports whether a job may have tasks allocated: it was admitted
// before this session (phase Inqueue or later) or by it.
func (ssn *Session) IsAdmitted(job *api.JobInfo) bool {
	return job.Phase != api.JobPending && job.Phase != "" || ssn.admitted[job.UID]
}

// Admitted lists the jobs this session admitted, for the commit.
func (ssn *Session) Admitted() []api.JobID {
	out := make([]api.JobID, 0, len(ssn.admitted))
	for id := range ssn.admitted {
		out = append(out, id)
	}
	return out
}
