package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// noRole names the pods of a gang that carry no role annotation.
const noRole = "pods"

// Diagnose explains, role by role, why a gang could not be placed whole,
// on the nodes as the session left them (after the gangs placed before
// it). It places the gang's pending pods again, in a statement it then
// discards, and reports per role how many fit and, for the first that did
// not, kube-scheduler's fit summary at that point, e.g.
//
//	Worker: 2 of 3 pending pods fit; then 0/3 nodes are available: 2 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector. Master: 1 of 1 pending pods fit.
//
// Roles that fall short come first. The placement is first-fit by node
// name rather than allocate's scoring, so it can differ from allocate's in
// which nodes it uses; should every pod fit that way, Diagnose returns ""
// and the session's own finding stands.
//
// It costs about one pass over the nodes per fit key (framework.FitKey):
// the statement only fills nodes, so a node that did not fit a pod never
// fits the next one of its key, and the scan for it resumes where the
// previous one stopped; and a key whose pod found no node is not tried
// again. Pods with rules that placements can satisfy (required pod
// affinity, spread constraints) are scanned from the start each time.
func Diagnose(ssn *framework.Session, job *api.JobInfo) string {
	tasks := ssn.PendingTasks(job)
	type roleFit struct {
		name            string
		pending, placed int
		why             string
	}
	roles := map[string]*roleFit{}
	stmt := ssn.Statement()
	defer stmt.Discard()
	resume := map[framework.FitKey]int{}
	failed := map[framework.FitKey]bool{}
	for _, t := range tasks {
		r := roles[t.Role]
		if r == nil {
			r = &roleFit{name: cmp.Or(t.Role, noRole)}
			roles[t.Role] = r
		}
		r.pending++
		cls := ssn.ClassOf(t)
		key, monotone := ssn.FitKey(cls, t)
		if monotone && failed[key] {
			continue
		}
		// A placement can make an earlier node fit a task whose rules it
		// can satisfy: such a task's scan starts over.
		from := 0
		if monotone {
			from = resume[key]
		}
		placed := false
		for i := from; i < len(ssn.NodeList); i++ {
			n := ssn.NodeList[i]
			if ssn.PredicateWithClass(cls, t, n).Fit && stmt.Allocate(t, n) == nil {
				resume[key], placed = i, true
				break
			}
		}
		if placed {
			r.placed++
			continue
		}
		failed[key] = true
		if r.why == "" {
			r.why = ssn.Diagnose(t).String()
		}
	}

	list := make([]*roleFit, 0, len(roles))
	short := false
	for _, r := range roles {
		list = append(list, r)
		short = short || r.why != ""
	}
	if !short {
		// First-fit placed what allocate's scoring could not; the
		// session's own message says more than "everything fits".
		return ""
	}
	slices.SortFunc(list, func(a, b *roleFit) int {
		if (a.why != "") != (b.why != "") {
			if a.why != "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	parts := make([]string, 0, len(list))
	for _, r := range list {
		s := fmt.Sprintf("%s: %d of %d pending pods fit", r.name, r.placed, r.pending)
		if r.why != "" {
			s += "; then " + r.why
		} else {
			s += "."
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}
