package topology

import (
	"cmp"
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Nearest returns the nodes a gang that cannot be placed should hold
// while it waits (framework.Session.Hold), by its innermost required pack
// or partition rule: the gang's covered members go to one domain of that
// level (k, for a pack with a maximum per domain or for k partitions),
// so it holds nodes in the domains that could take their share once
// empty and come closest to it now (the most members fit there now; ties
// to the first in node order), and in each, the nodes with the most room
// now, as many as the share needs once empty.
//
// ok is false when the policy has no such rule: the caller holds nodes
// by the members alone. It is true with no nodes when no domain could
// ever take its share: holding would keep room from others for a gang
// that cannot be placed as asked.
func Nearest(ssn *framework.Session, job *api.JobInfo, covered []*api.TaskInfo) (nodes []*api.NodeInfo, ok bool) {
	pol := job.Topology
	topo := ssn.Topologies[pol.Topology]
	if topo == nil || len(covered) == 0 {
		return nil, false
	}
	level, domains := -1, 0
	for _, r := range pol.Rules {
		lv := topo.Level(r.Level)
		if !r.Required || lv <= level {
			continue
		}
		switch {
		case r.Kind == api.RulePack && r.Max > 0:
			level, domains = lv, ceilDiv(len(covered), r.Max)
		case r.Kind == api.RulePack:
			level, domains = lv, 1
		case r.Kind == api.RulePartition:
			level, domains = lv, r.Partitions
		}
	}
	if level < 0 {
		return nil, false
	}
	share := ceilDiv(len(covered), domains)
	tree := ssn.TopologyTree(topo)
	rep := covered[0]
	cls := ssn.ClassOf(rep)

	type candidate struct {
		node       *api.NodeInfo
		now, empty int
	}
	type domainRoom struct {
		first      int // the first candidate's NodeList index: the tie-break
		now, empty int
		nodes      []candidate
	}
	byDomain := map[*api.Domain]*domainRoom{}
	var order []*domainRoom
	for _, n := range ssn.CandidateNodes(cls, rep) {
		d := tree.Leaf[n.Index]
		if d == nil || (n.HeldFor != "" && n.HeldFor != job.UID) || !ssn.StaticFit(cls, rep, n) {
			continue
		}
		empty := FitsIn(rep, &n.Allocatable)
		if empty == 0 {
			continue
		}
		for d.Level > level {
			d = d.Parent
		}
		now := 0
		if ssn.PredicateWithClass(cls, rep, n).Fit {
			now = fitCount(rep, n)
		}
		dr := byDomain[d]
		if dr == nil {
			dr = &domainRoom{first: n.Index}
			byDomain[d] = dr
			order = append(order, dr)
		}
		dr.now += now
		dr.empty += empty
		dr.nodes = append(dr.nodes, candidate{n, now, empty})
	}
	order = slices.DeleteFunc(order, func(dr *domainRoom) bool { return dr.empty < share })
	if len(order) < domains {
		return nil, true
	}
	slices.SortStableFunc(order, func(a, b *domainRoom) int {
		return cmp.Or(cmp.Compare(b.now, a.now), cmp.Compare(a.first, b.first))
	})
	for _, dr := range order[:domains] {
		slices.SortStableFunc(dr.nodes, func(a, b candidate) int { return cmp.Compare(b.now, a.now) })
		room := 0
		for _, c := range dr.nodes {
			if room >= share {
				break
			}
			nodes = append(nodes, c.node)
			room += c.empty
		}
	}
	return nodes, true
}

// FitsIn is how many copies of t fit in avail, 0 if none: fitCount for
// an empty node, given its allocatable.
func FitsIn(t *api.TaskInfo, avail *api.Resource) int {
	if !t.Resreq.LessEqual(avail) {
		return 0
	}
	return t.Copies(avail)
}
