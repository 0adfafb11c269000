package scheduler

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// BindRefusalTTL is how long a gang avoids a node after the API server
// refused to bind one of its members there.
const BindRefusalTTL = 5 * time.Minute

// bindRefusals remembers, per gang, the nodes where the API server
// refused a bind: an admission webhook or ValidatingAdmissionPolicy on
// pods/binding, say. The placement that led there is a pure function of
// the snapshot, so without this the next cycle would choose the same node
// and be refused again, for as long as the gang waits; and a partial gang
// reclaimed for such a refusal would be placed straight back.
//
// It is the scheduler's memory, not the cluster's: a new leader starts
// without it, tries the node once more and learns the same. Refusals are
// remembered per gang, not per pod, because a reclaimed gang's pods are
// recreated under new UIDs.
type bindRefusals struct {
	mu    sync.Mutex
	ttl   time.Duration
	nodes map[api.JobID]map[string]time.Time // node -> when the refusal expires
}

func newBindRefusals(ttl time.Duration) *bindRefusals {
	return &bindRefusals{ttl: ttl, nodes: map[api.JobID]map[string]time.Time{}}
}

// isRefusal reports whether a bind error is the API server's judgement
// of the bind itself (admission said no), rather than a passing failure
// (a timeout, throttling, an unavailable server) or a fact about the pod
// (deleted, already bound: a conflict), after which the same node is
// worth trying again.
func isRefusal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// record remembers that job's bind to node was refused at now.
func (r *bindRefusals) record(job api.JobID, node string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes[job] == nil {
		r.nodes[job] = map[string]time.Time{}
	}
	r.nodes[job][node] = now.Add(r.ttl)
}

// apply sets each job's RefusedNodes to its refusals still in force at
// now, and forgets expired refusals and those of gangs that are gone.
func (r *bindRefusals) apply(jobs map[api.JobID]*api.JobInfo, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, nodes := range r.nodes {
		job := jobs[id]
		for node, until := range nodes {
			if !now.Before(until) {
				delete(nodes, node)
				continue
			}
			if job != nil {
				if job.RefusedNodes == nil {
					job.RefusedNodes = map[string]bool{}
				}
				job.RefusedNodes[node] = true
			}
		}
		if job == nil || len(nodes) == 0 {
			delete(r.nodes, id)
		}
	}
}
