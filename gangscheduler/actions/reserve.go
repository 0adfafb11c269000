package actions

import (
	"math"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// hold lets job, which allocate could not place for want of room on the
// nodes, hold the nodes it lacks from the jobs after it in the session,
// when the session's hold rules allow it (framework.Session.MayHold: the
// reservation plugin).
//
// The nodes: with a required topology rule, those topology.Nearest picks
// for the members the policy covers; for the other members (and every
// member of a gang without such a rule), nearestNodes.
func hold(ssn *framework.Session, job *api.JobInfo, tasks []*api.TaskInfo) {
	if !ssn.MayHold(job) {
		return
	}
	var nodes []*api.NodeInfo
	rest := tasks
	if job.Topology != nil {
		var covered []*api.TaskInfo
		rest = nil
		for _, t := range tasks {
			if job.Topology.Covers(t.Role) {
				covered = append(covered, t)
			} else {
				rest = append(rest, t)
			}
		}
		near, ok := topology.Nearest(ssn, job, covered)
		switch {
		case ok && len(near) == 0:
			return // no domain could ever take the members as asked
		case ok:
			nodes = near
		default:
			rest = tasks
		}
	}
	nodes = append(nodes, nearestNodes(ssn, job, rest)...)
	ssn.Hold(job, nodes)
}

// nearestNodes picks, for each task in order, the node that comes closest
// to fitting it: of the nodes where it could run (static predicates) and
// whose allocatable holds it, not held for another job, the one whose
// idle resources, less what the gang's earlier tasks were given there,
// fall shortest of its request (the largest fraction missing in any
// resource); ties go to the first in node order. A task no node could
// ever take gets none.
func nearestNodes(ssn *framework.Session, job *api.JobInfo, tasks []*api.TaskInfo) []*api.NodeInfo {
	left := map[int]api.Resource{}
	var out []*api.NodeInfo
	for _, t := range tasks {
		cls := ssn.ClassOf(t)
		var best *api.NodeInfo
		bestShort := math.Inf(1)
		for _, n := range ssn.CandidateNodes(cls, t) {
			if (n.HeldFor != "" && n.HeldFor != job.UID) || !t.Resreq.LessEqual(&n.Allocatable) || !ssn.StaticFit(cls, t, n) {
				continue
			}
			idle, ok := left[n.Index]
			if !ok {
				idle = n.Idle
			}
			if s := shortfall(&t.Resreq, &idle); best == nil || s < bestShort {
				best, bestShort = n, s
			}
		}
		if best == nil {
			continue
		}
		idle, ok := left[best.Index]
		if !ok {
			idle = best.Idle.Clone()
			out = append(out, best)
		}
		idle.Sub(&t.Resreq)
		left[best.Index] = idle
	}
	return out
}

// shortfall is the largest fraction of a request that avail lacks, in any
// resource the request asks for: 0 when it fits.
func shortfall(req, avail *api.Resource) float64 {
	worst := 0.0
	lack := func(want, have int64) {
		if want > 0 && have < want {
			worst = max(worst, float64(want-have)/float64(want))
		}
	}
	lack(req.MilliCPU, avail.MilliCPU)
	lack(req.Memory, avail.Memory)
	lack(req.EphemeralStorage, avail.EphemeralStorage)
	for name, v := range req.Scalars {
		lack(v, avail.Scalar(name))
	}
	return worst
}
