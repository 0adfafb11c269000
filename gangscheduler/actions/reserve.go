package actions

import (
	"container/heap"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/topology"
)

// hold lets job, which allocate could not place for want of room on the
// nodes, hold the nodes it lacks from the jobs after it in the session,
// when the session's hold rules allow it (framework.Session.MayHold: the
// reservation plugin).
func hold(ssn *framework.Session, job *api.JobInfo, tasks []*api.TaskInfo) {
	if ssn.MayHold(job) {
		ssn.Hold(job, nodesToHold(ssn, job, tasks))
	}
}

// nodesToHold are the nodes job would hold for tasks: with a required
// topology rule, those topology.Nearest picks for the members the policy
// covers; for the other members (and every member of a gang without such
// a rule), nearestNodes. None when the gang could not be placed even on
// empty nodes: holding would keep room from others for nothing.
func nodesToHold(ssn *framework.Session, job *api.JobInfo, tasks []*api.TaskInfo) []*api.NodeInfo {
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
			return nil // no domain could ever take the members as asked
		case ok:
			nodes = near
		default:
			rest = tasks
		}
	}
	others, ok := nearestNodes(ssn, job, rest)
	if !ok {
		return nil
	}
	return append(nodes, others...)
}

// nearestNodes picks, for each task in order, the node that comes closest
// to fitting it: of the nodes where it could run (static predicates) and
// whose allocatable holds it, not held for another job, the one whose
// idle resources, less what the gang's earlier tasks were given there,
// fall shortest of its request (the largest fraction missing in any
// resource); ties go to the first in node order. ok is false when the
// tasks of one kind outnumber what those nodes could take, empty: the
// gang could never be placed, and holding would keep room from others
// for nothing.
//
// Tasks of one class with one request (a gang's workers) share one heap
// of the candidate nodes by shortfall, which each pick updates for its
// node alone: a gang of t such tasks on n nodes costs n + t log n, not
// t x n.
func nearestNodes(ssn *framework.Session, job *api.JobInfo, tasks []*api.TaskInfo) (_ []*api.NodeInfo, ok bool) {
	left := map[int]api.Resource{}
	idleOf := func(n *api.NodeInfo) api.Resource {
		if idle, ok := left[n.Index]; ok {
			return idle
		}
		return n.Idle
	}
	var out []*api.NodeInfo
	for i := 0; i < len(tasks); {
		t, cls := tasks[i], ssn.ClassOf(tasks[i])
		j := i + 1
		for j < len(tasks) && ssn.ClassOf(tasks[j]) == cls && tasks[j].Resreq.Equal(&t.Resreq) {
			j++
		}
		h := &byShortfall{}
		room := 0
		for _, n := range ssn.CandidateNodes(cls, t) {
			if n.HeldFor != "" && n.HeldFor != job.UID || !ssn.StaticFit(cls, t, n) {
				continue
			}
			empty := topology.FitsIn(t, &n.Allocatable)
			if empty == 0 {
				continue
			}
			room += empty
			idle := idleOf(n)
			h.items = append(h.items, candidate{node: n, short: shortfall(&t.Resreq, &idle)})
		}
		if room < j-i {
			return nil, false
		}
		heap.Init(h)
		for ; i < j; i++ {
			best := h.items[0].node
			idle, ok := left[best.Index]
			if !ok {
				idle = best.Idle.Clone()
				out = append(out, best)
			}
			idle.Sub(&t.Resreq)
			left[best.Index] = idle
			h.items[0].short = shortfall(&t.Resreq, &idle)
			heap.Fix(h, 0)
		}
	}
	return out, true
}

// candidate is a node and how far it falls short of a request.
type candidate struct {
	node  *api.NodeInfo
	short float64
}

// byShortfall is a min-heap of candidates: the smallest shortfall first,
// then the first in node order.
type byShortfall struct{ items []candidate }

func (h *byShortfall) Len() int { return len(h.items) }
func (h *byShortfall) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	return x.short < y.short || (x.short == y.short && x.node.Index < y.node.Index)
}
func (h *byShortfall) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *byShortfall) Push(x any)    { h.items = append(h.items, x.(candidate)) }
func (h *byShortfall) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
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
