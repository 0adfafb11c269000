// Package topology places a gang on a Topology's tree of network domains
// by its topology policy (api.TopologyPolicy): a rule per level (pack,
// spread or partition, with a range or a factor per domain, required or
// preferred), for the members of the roles it covers, whatever the other
// members do (a CPU-only master need not sit in the GPU rack).
//
// The search decides the whole gang at once, top down, on summaries: each
// node's room (how many members fit on it now) and, summed, each
// domain's, which the session keeps for a shape of member from gang to
// gang and brings up to date with the nodes placements change
// (framework.Session.DomainRoom); at each level the rule splits the
// members over the domains of the level by their room (split); then the
// members are placed, in rank order, on the nodes of the last level's
// domains, in the order the tree lists them, each on its best node there
// (framework.Session.BestNodeIn). So a gang costs a walk up the tree per
// node changed since the last gang of its shape (one pass over its
// candidate nodes for the first of a cycle) and a search per member over
// the nodes of its own domain, not over every node; the tree itself is
// built once per node set and shared by every session
// (api.Snapshot.TopologyTree).
//
// A level's rule splits the members of each domain of the level above
// (spread evens out the racks of each block, say), with three exceptions
// that make a rule hold for the whole gang: a required pack keeps every
// member in one domain of its level, hence of every level above; a
// partition into P makes P partitions in all, whole, however the levels
// above split the gang (they split it in whole partitions, and a
// required partition into shares of two sizes keeps to one domain above);
// a factor's groups likewise stay whole. A level without a rule packs,
// but second to the packed level below it that has one: the fewest racks
// first, then the fewest blocks; a gang that one rack holds goes to the
// tightest rack of the tree that does (best fit at the rule's level),
// whichever block that is in.
//
// Members placed later than the others (a replacement of a lost member,
// the members above minMember) are placed with the gang's members already
// on nodes: those count in their domains' room and stay where they are,
// every split gives their domains at least as many, and the rules hold
// for the whole gang. When they cannot (the rack of a packed gang is full
// now), a required rule keeps the newcomers pending and says why.
//
// Ranks follow the tree: members are taken in rank order (the policy's
// roles in its order, then the replica index) and given to the domains
// in the tree's order, so that members with neighbouring ranks share the
// closest domain the placement allows; the ranks the operator already
// gave the pods (RANK, TF_CONFIG's task index, the MPI hostfile) are then
// topology-ordered without any rewrite. Each member gets, with its bind
// and no write of its own, its domain at every level and its rank along
// the tree, as labels and annotations (the binder says why both).
package topology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Labels a placed member gets with its bind.
const (
	// LevelLabelPrefix plus a level's name holds the member's domain at
	// that level: topology.scheduling.troupe.dev/rack=rack-3.
	LevelLabelPrefix = "topology.scheduling.troupe.dev/"
	// RankLabel holds the member's position along the tree, from 0.
	RankLabel = "scheduling.troupe.dev/topology-rank"
	// ReplicaIndexLabel is the operator's (and upstream's) replica index
	// of a pod, which the rank order reads.
	ReplicaIndexLabel = "training.kubeflow.org/replica-index"
)

// Reasons a gang is not placed, in the PodGroup API's words.
const (
	ReasonTopologyNotFound     = "TopologyNotFound"
	ReasonTopologyNotSatisfied = "TopologyNotSatisfied"
	ReasonNotEnoughResources   = "NotEnoughResources"
)

// Result is a placement, or why there is none.
type Result struct {
	// Stmt holds the covered members' placements, open for the caller to
	// add the other members and commit or discard; nil when not placed.
	Stmt    *framework.Statement
	Outcome framework.TopologyOutcome
	// Reason and Message say why not, when Stmt is nil.
	Reason, Message string
	// QueueShort says it was the queue's share or capability, not the
	// nodes, that stopped it.
	QueueShort bool
}

// RoomWouldHelp says more free room on the nodes could place the gang:
// neither its queue's share stopped it nor a policy its Topology cannot
// express (ReasonTopologyNotFound), which no room changes. Only such a
// gang may hold nodes while it waits.
func (r Result) RoomWouldHelp() bool {
	return !r.QueueShort && r.Reason != ReasonTopologyNotFound
}

// attempts bounds the searches of one gang: a placement that finds a
// domain holding fewer members than its room said (rules the room does
// not count, such as one member per node) is searched again with that
// domain's room corrected.
const attempts = 3

// Place places the covered members (pending tasks of job whose roles its
// policy covers) in a new statement. mayPlace, if not nil, is asked
// before each member is placed (the queue's share); a member it refuses
// fails the placement.
func Place(ssn *framework.Session, job *api.JobInfo, covered []*api.TaskInfo, mayPlace func(*api.TaskInfo) bool) Result {
	pol := job.Topology
	topo := ssn.Topologies[pol.Topology]
	if topo == nil {
		return Result{Reason: ReasonTopologyNotFound, Message: fmt.Sprintf("topology %q does not exist", pol.Topology)}
	}
	for _, r := range pol.Rules {
		if topo.Level(r.Level) < 0 {
			var names []string
			for _, l := range topo.Levels {
				names = append(names, l.Name)
			}
			return Result{Reason: ReasonTopologyNotFound, Message: fmt.Sprintf("topology %q has no level %q; its levels are %s", topo.Name, r.Level, strings.Join(names, ", "))}
		}
	}
	if len(covered) == 0 {
		return Result{Stmt: ssn.Statement()}
	}
	p := &placement{ssn: ssn, tree: ssn.TopologyTree(topo), policy: pol, mayPlace: mayPlace, ceiling: map[*api.Domain]int{}}
	p.members = RankOrder(pol, append(slices.Clone(covered), p.placedMembers(job)...))
	var lastErr error
	for range attempts {
		p.measure()
		shares, unmet, err := p.distribute(p.tree.Root, len(p.members))
		if err != nil {
			if errors.Is(err, errQueue) {
				return Result{Reason: ReasonNotEnoughResources, Message: err.Error(), QueueShort: true}
			}
			if !anyRequired(pol) {
				return p.withoutTopology(err)
			}
			return Result{Reason: ReasonTopologyNotSatisfied, Message: err.Error()}
		}
		if err := p.keepsPlaced(shares); err != nil {
			if !anyRequired(pol) {
				return p.withoutTopology(err)
			}
			return Result{Reason: ReasonTopologyNotSatisfied, Message: err.Error()}
		}
		stmt := ssn.Statement()
		short, placed, err := p.place(stmt, shares)
		if err == nil {
			return Result{Stmt: stmt, Outcome: framework.TopologyOutcome{Levels: p.outcome(stmt), Unmet: unmet}}
		}
		// What the domain that fell short held, per node, bounds what any
		// node holds, when the resources were not what stopped it.
		mostOnANode := p.mostPerNode(stmt, short)
		stmt.Discard()
		if errors.Is(err, errQueue) {
			return Result{Reason: ReasonNotEnoughResources, Message: err.Error(), QueueShort: true}
		}
		lastErr = err
		p.ceiling[short] = placed // the domain holds no more than that
		if mostOnANode > 0 && (p.perNode == 0 || mostOnANode < p.perNode) {
			p.perNode = mostOnANode
		}
	}
	if !anyRequired(pol) {
		return p.withoutTopology(lastErr)
	}
	return Result{Reason: ReasonTopologyNotSatisfied, Message: lastErr.Error()}
}

func anyRequired(p *api.TopologyPolicy) bool {
	return slices.ContainsFunc(p.Rules, func(r api.LevelRule) bool { return r.Required })
}

// errQueue says a member's queue has no share or capability left.
var errQueue = errors.New("the queue has no share or capability left for the gang")

// ReplicaIndex is a member's replica index from the operator's label; -1
// without one.
func ReplicaIndex(t *api.TaskInfo) int {
	n, err := strconv.Atoi(t.Pod.Labels[ReplicaIndexLabel])
	if err != nil {
		return -1
	}
	return n
}

// RankOrder sorts members in rank order: by their role's place in the
// policy's roles (by role name when it lists none), then replica index,
// then name.
func RankOrder(pol *api.TopologyPolicy, members []*api.TaskInfo) []*api.TaskInfo {
	out := slices.Clone(members)
	rolePos := func(t *api.TaskInfo) int {
		if i := slices.Index(pol.Roles, t.Role); i >= 0 {
			return i
		}
		return len(pol.Roles)
	}
	slices.SortStableFunc(out, func(a, b *api.TaskInfo) int {
		return cmp.Or(cmp.Compare(rolePos(a), rolePos(b)), cmp.Compare(a.Role, b.Role),
			cmp.Compare(ReplicaIndex(a), ReplicaIndex(b)), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// placement is one gang's search.
type placement struct {
	ssn    *framework.Session
	tree   *api.TopologyTree
	policy *api.TopologyPolicy
	// members are the covered members to place and those placed already
	// (on a node of the tree), in rank order.
	members []*api.TaskInfo
	// placed maps the members placed already to their last-level domain;
	// placedIn counts them per domain, at every level.
	placed   map[*api.TaskInfo]*api.Domain
	placedIn map[*api.Domain]int
	mayPlace func(*api.TaskInfo) bool
	// room is how many members fit in each domain now, by measure, per
	// domain ID.
	room []int
	// ceiling caps the room of domains that held fewer members than their
	// room said.
	ceiling map[*api.Domain]int
	// perNode, when not 0, caps every node's room: a node held no more
	// than that many members though its resources had room for more (a
	// host port, a spread constraint), a rule that is the same on every
	// node of a class.
	perNode int
}

// placedMembers are the members of job that the policy covers and that
// are on a node of the tree already (bound, running, or placed earlier in
// the session): a member placed later (a replacement, the members above
// minMember) joins them, and the rules hold for all of them together.
// Members on a node outside the tree stay out of the count.
func (p *placement) placedMembers(job *api.JobInfo) []*api.TaskInfo {
	p.placed, p.placedIn = map[*api.TaskInfo]*api.Domain{}, map[*api.Domain]int{}
	var out []*api.TaskInfo
	for _, t := range job.Tasks {
		if t.Status != api.Allocated && t.Status != api.Bound && t.Status != api.Running || !p.policy.Covers(t.Role) {
			continue
		}
		n, ok := p.ssn.Nodes[t.NodeName]
		if !ok || p.tree.Leaf[n.Index] == nil {
			continue
		}
		leaf := p.tree.Leaf[n.Index]
		p.placed[t] = leaf
		for d := leaf; d != nil; d = d.Parent {
			p.placedIn[d]++
		}
		out = append(out, t)
	}
	return out
}

// keepsPlaced fails when the shares leave a domain fewer members than the
// gang has there already: the rules cannot be kept with the placed
// members where they are.
func (p *placement) keepsPlaced(shares []share) error {
	given := map[*api.Domain]int{}
	for _, sh := range shares {
		given[sh.dom] = sh.n
	}
	for t, d := range p.placed {
		if given[d] < p.placedIn[d] {
			return fmt.Errorf("the gang's %d placed members in %s (%s among them) cannot stay there by the policy with %d more: it gives that domain %d",
				p.placedIn[d], d.Path(), t.Name, len(p.members)-len(p.placed), given[d])
		}
	}
	return nil
}

// measure computes the room of every domain: per node, how many members
// fit on it as the first member sees it (its predicates, then its
// requests against the node's idle resources), summed up the tree. The
// session keeps that sum for the member's signature from gang to gang,
// catching up with the nodes each placement changes, where a node's room
// reads that node alone (sessionRoom); otherwise a pass visits the nodes
// the first member may use (its class's candidate nodes). The first
// member stands for the others: a gang's covered members are mostly of
// one role; where they differ, or where a rule the estimate does not
// count limits a node (one member per node), the placement finds out and
// the search runs again (ceiling).
//
// One rule it does count, as kube-scheduler users write it for DDP jobs:
// required anti-affinity of the members toward each other. Such a term
// lets a domain of its topology key hold one member: a node, for
// kubernetes.io/hostname, or a domain of the level with that label.
func (p *placement) measure() {
	rep := p.members[slices.IndexFunc(p.members, func(t *api.TaskInfo) bool { return p.placed[t] == nil })]
	cls := p.ssn.ClassOf(rep)
	alone := p.aloneKeys(rep)
	if base := p.sessionRoom(cls, rep, alone); base != nil {
		p.room = append(p.room[:0], base...)
	} else {
		p.room = p.nodeRoom(cls, rep, alone)
	}
	for lv, l := range p.tree.Levels {
		if alone[l.NodeLabel] {
			p.capLevel(p.tree.Root, lv, 1)
		}
	}
	for d, c := range p.ceiling {
		if over := p.room[d.ID] - c; over > 0 {
			for x := d; x != nil; x = x.Parent {
				p.room[x.ID] -= over
			}
		}
	}
	// A placed member has its place: room for itself.
	for d, k := range p.placedIn {
		p.room[d.ID] += k
	}
}

// sessionRoom is the room the session keeps for rep's signature
// (framework.Session.DomainRoom), where nothing but the node's resources
// limits a node's room: no member alone per node, no cap per node from an
// earlier attempt. Nil otherwise, or where the session keeps none.
func (p *placement) sessionRoom(cls *framework.Class, rep *api.TaskInfo, alone map[string]bool) []int {
	if p.perNode > 0 || alone[corev1.LabelHostname] {
		return nil
	}
	return p.ssn.DomainRoom(cls, rep, p.tree)
}

// nodeRoom computes the room of every domain from a pass over the nodes
// rep may use, with a node's room capped at one member alone per host,
// and at perNode.
func (p *placement) nodeRoom(cls *framework.Class, rep *api.TaskInfo, alone map[string]bool) []int {
	room := make([]int, p.tree.Domains)
	for _, n := range p.ssn.CandidateNodes(cls, rep) {
		leaf := p.tree.Leaf[n.Index]
		if leaf == nil || !p.ssn.PredicateWithClass(cls, rep, n).Fit {
			continue
		}
		k := fitCount(rep, n)
		if alone[corev1.LabelHostname] {
			k = 1
		}
		if p.perNode > 0 {
			k = min(k, p.perNode)
		}
		for d := leaf; d != nil; d = d.Parent {
			room[d.ID] += k
		}
	}
	return room
}

// aloneKeys are the topology keys of rep's required anti-affinity terms
// that select rep itself: a domain of each holds one such member.
func (p *placement) aloneKeys(rep *api.TaskInfo) map[string]bool {
	out := map[string]bool{}
	if rep.Rules == nil {
		return out
	}
	for i := range rep.Rules.AntiAffinity {
		if t := &rep.Rules.AntiAffinity[i]; t.Matches(rep.Pod, p.ssn.Namespaces[rep.Namespace]) {
			out[t.TopologyKey] = true
		}
	}
	return out
}

// capLevel caps the room of every domain at level lv under d at c, and
// the room of d's descendants above lv at the sum of their children's.
func (p *placement) capLevel(d *api.Domain, lv, c int) int {
	if d.Level == lv {
		p.room[d.ID] = min(p.room[d.ID], c)
		return p.room[d.ID]
	}
	sum := 0
	for _, ch := range d.Children {
		sum += p.capLevel(ch, lv, c)
	}
	p.room[d.ID] = sum
	return sum
}

// fitCount is how many copies of t fit in n's idle resources (and pod
// slots), at least one (the predicates said one fits): the session's
// count (framework.Session.DomainRoom) where it keeps the room.
func fitCount(t *api.TaskInfo, n *api.NodeInfo) int {
	return max(t.Copies(&n.Idle), 1)
}

// share is a last-level domain and how many members go there.
type share struct {
	dom *api.Domain
	n   int
}

// distribute splits n members over the subtree of d, level by level, by
// the policy's rules (a level without one packs, preferred). It returns
// the last-level domains and their counts in the tree's order, and the
// preferred rules it could not keep. A rule that yields one domain tries
// the others that hold the members too, best fit first, when the levels
// below cannot be kept in it, required or preferred.
func (p *placement) distribute(d *api.Domain, n int) ([]share, []string, error) {
	if len(d.Children) == 0 {
		return []share{{d, n}}, nil, nil
	}
	lv := d.Children[0].Level
	name := p.tree.Levels[lv].Name
	rule, explicit := p.policy.Rule(name)
	if !explicit {
		rule = api.LevelRule{Level: name, Kind: api.RulePack}
	}
	asked := rule
	if rule.Kind == api.RulePartition {
		asked.Partitions = p.partitionsOf(rule, n)
	}
	slots := make([]slot, len(d.Children))
	for i, c := range d.Children {
		slots[i] = slot{dom: c, room: p.room[c.ID], placed: p.placedIn[c]}
	}
	// A partition or a factor below asks this level for whole groups.
	at, size, below := p.groups(lv)
	grouped := slots
	if size > 1 {
		grouped = make([]slot, len(slots))
		for i, c := range d.Children {
			grouped[i] = slot{dom: c, room: p.wholeGroups(c, at, size) * size, placed: p.placedIn[c]}
		}
	}
	splitBy := func(r api.LevelRule) ([]int, error) {
		counts, err := split(r, grouped, n, size, !explicit)
		switch {
		case err == nil || size <= 1:
		case below.Required:
			// The rule below cannot be kept: say so in its words.
			return nil, p.groupsError(d, at, size, below, n)
		default:
			// The rule below is preferred: it is broken there, and says so.
			counts, err = split(r, slots, n, 0, !explicit)
		}
		return counts, err
	}
	where := ""
	if d.Level >= 0 {
		where = " in " + d.Path()
	}
	var unmet []string
	counts, err := splitBy(asked)
	if ge := (*groupsError)(nil); errors.As(err, &ge) {
		return nil, nil, ge
	}
	if err == nil && !explicit {
		// A level without a rule packs, but the packed level below, whose
		// rule the user wrote, comes first.
		if at, ok := p.packedBelow(lv); ok {
			counts = p.packFor(d, at, n, counts)
		}
	}
	switch {
	case err == nil:
		if explicit && rule.Kind == api.RulePack && !rule.Required {
			// The fewest domains the rule allows: one, or as many as its
			// largest count per domain needs.
			fewest := 1
			if rule.Max > 0 {
				fewest = ceilDiv(n, rule.Max)
			}
			if used := nonZero(counts); used > fewest {
				unmet = append(unmet, fmt.Sprintf("%s: pack: %d domains%s, not %d (the room allowed no fewer)", name, used, where, fewest))
			}
		}
	case errors.Is(err, errUneven) && !rule.Required:
		unmet = append(unmet, fmt.Sprintf("%s: spread: uneven%s (%s), the room allowed no better", name, where, countsOf(d, counts)))
	case rule.Required:
		return nil, nil, fmt.Errorf("%s: %s%s: %v", name, describe(rule), where, err)
	default:
		// Preferred: pack instead, without range or factor.
		relaxed, perr := splitBy(api.LevelRule{Level: name, Kind: api.RulePack})
		if perr != nil {
			return nil, nil, fmt.Errorf("%s%s: %v", name, where, perr)
		}
		counts = relaxed
		unmet = append(unmet, fmt.Sprintf("%s: %s%s: %v; placed as %s instead", name, describe(rule), where, err, countsOf(d, counts)))
	}
	if i := single(counts); i >= 0 {
		// One domain: if the levels below cannot be kept in it, another
		// that holds every member may do.
		alternatives := []int{i}
		for _, j := range byRoom(roomOf(slots), true) {
			if j != i && slots[j].room >= n {
				alternatives = append(alternatives, j)
			}
		}
		// The first that keeps every rule below wins; failing that, the
		// one that comes closest (p.closer).
		var (
			best      []share
			bestUnmet []string
			firstErr  error
		)
		for _, j := range alternatives {
			shares, below, err := p.distribute(d.Children[j], n)
			switch {
			case err != nil:
				if firstErr == nil {
					firstErr = err
				}
			case len(below) == 0:
				return shares, dedupe(unmet), nil
			case best == nil || p.closer(shares, below, best, bestUnmet):
				best, bestUnmet = shares, below
			}
		}
		if best != nil {
			return best, dedupe(append(unmet, bestUnmet...)), nil
		}
		return nil, nil, firstErr
	}
	var out []share
	for i, c := range d.Children {
		if counts[i] == 0 {
			continue
		}
		shares, below, err := p.distribute(c, counts[i])
		if err != nil {
			return nil, nil, err
		}
		out = append(out, shares...)
		unmet = append(unmet, below...)
	}
	return out, dedupe(unmet), nil
}

// packedBelow returns the nearest level below lv with a plain pack rule
// (no range, no factor).
func (p *placement) packedBelow(lv int) (int, bool) {
	for l := lv + 1; l < len(p.tree.Levels); l++ {
		if r, ok := p.policy.Rule(p.tree.Levels[l].Name); ok {
			return l, r.Kind == api.RulePack && r.Factor <= 1 && r.Min == 0 && r.Max == 0
		}
	}
	return -1, false
}

// packFor splits n members over d's children, which have no rule of
// their own, so that the fewest domains of the packed level at below are
// used (the greedy count: roomiest first); among the ways to do so, one
// child if one can, else several. counts is the packed split. When one
// domain of level at holds them all, the child is the one holding the
// tightest such domain (the best fit at the level whose rule the user
// wrote, so that the roomier domains stay whole for bigger gangs: best
// fit among the children, by their own room, would pick the tightest
// child and then its tightest domain, which may be far roomier than
// another child's); otherwise the tightest child that needs no more
// domains (the packed split counts, when it is one).
func (p *placement) packFor(d *api.Domain, at, n int, counts []int) []int {
	fewest := len(p.fill(d, at, n))
	if fewest == 1 {
		if x := p.tightest(d, at, n); x != nil {
			out := make([]int, len(d.Children))
			out[slices.Index(d.Children, childToward(d, x))] = n
			return out
		}
	}
	if i := single(counts); i >= 0 && len(p.fill(d.Children[i], at, n)) == fewest {
		return counts
	}
	best := -1
	for j, c := range d.Children {
		if p.room[c.ID] >= n && len(p.fill(c, at, n)) == fewest && (best < 0 || p.placedIn[c] > p.placedIn[d.Children[best]] ||
			p.placedIn[c] == p.placedIn[d.Children[best]] && p.room[c.ID] < p.room[d.Children[best].ID]) {
			best = j
		}
	}
	out := make([]int, len(d.Children))
	if best >= 0 {
		out[best] = n
		return out
	}
	for x, k := range p.fill(d, at, n) {
		out[slices.Index(d.Children, childToward(d, x))] += k
	}
	return out
}

// tightest is the domain of level at under d that holds n members with
// the least room to spare, among those that hold most of the gang's
// placed members; on a tie, the one in the tighter child of d, then the
// first in the tree's order; nil when none holds n.
func (p *placement) tightest(d *api.Domain, at, n int) *api.Domain {
	var best *api.Domain
	for _, x := range levelUnder(d, at) {
		if p.room[x.ID] < n {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(p.placedIn[best], p.placedIn[x]), cmp.Compare(p.room[x.ID], p.room[best.ID]),
			cmp.Compare(p.room[childToward(d, x).ID], p.room[childToward(d, best).ID])) < 0 {
			best = x
		}
	}
	return best
}

// childToward is the child of d that x is in (or is).
func childToward(d, x *api.Domain) *api.Domain {
	for x.Parent != d {
		x = x.Parent
	}
	return x
}

// levelUnder lists the domains of level at under d, in the tree's order.
func levelUnder(d *api.Domain, at int) []*api.Domain {
	var out []*api.Domain
	var walk func(x *api.Domain)
	walk = func(x *api.Domain) {
		if x.Level == at {
			out = append(out, x)
			return
		}
		for _, c := range x.Children {
			walk(c)
		}
	}
	walk(d)
	return out
}

// fill takes n members into the domains of level at under d, the roomiest
// first, and returns what each domain it uses takes; fewer than n in all
// when d has no room for them.
func (p *placement) fill(d *api.Domain, at, n int) map[*api.Domain]int {
	doms := levelUnder(d, at)
	slices.SortStableFunc(doms, func(a, b *api.Domain) int {
		return cmp.Or(cmp.Compare(p.placedIn[b], p.placedIn[a]), cmp.Compare(p.room[b.ID], p.room[a.ID]))
	})
	out := map[*api.Domain]int{}
	for _, x := range doms {
		if n == 0 {
			break
		}
		if take := min(p.room[x.ID], n); take > 0 {
			out[x] = take
			n -= take
		}
	}
	return out
}

// groups says what the rules below level lv ask of a split at lv: the
// members go to lv's domains in whole groups of size, each group within
// one domain of level at: a partition's share, or a factor. The nearest
// such rule below counts, if the gang makes whole groups of it. A
// required pack below, or a required partition into shares of two sizes,
// asks for one group of every member: one domain at lv. size 0 when none
// asks. Without it, a gang spread over two blocks would be
// partitioned in each, not across them.
func (p *placement) groups(lv int) (at, size int, rule api.LevelRule) {
	total := len(p.members)
	// A required pack below keeps every member in one domain of its
	// level, so in one domain here too.
	for l := lv + 1; l < len(p.tree.Levels); l++ {
		if r, ok := p.policy.Rule(p.tree.Levels[l].Name); ok && r.Required && r.Kind == api.RulePack {
			return l, total, r
		}
	}
	for l := lv + 1; l < len(p.tree.Levels); l++ {
		r, ok := p.policy.Rule(p.tree.Levels[l].Name)
		if !ok {
			continue
		}
		f := max(r.Factor, 1)
		switch {
		case r.Kind == api.RulePartition && total%r.Partitions == 0 && (total/r.Partitions)%f == 0:
			return l, total / r.Partitions, r
		case r.Kind == api.RulePartition && r.Required:
			// Shares of two sizes: kept whole only in one domain.
			return l, total, r
		case f > 1 && total%f == 0:
			return l, f, r
		}
	}
	return -1, 0, api.LevelRule{}
}

// groupsError is a required rule below a level that no split of the
// level can keep: no domain of that level, or not enough, can hold its
// groups whole.
type groupsError struct{ msg string }

func (e *groupsError) Error() string { return e.msg }

// groupsError says why the groups of size that rule, at level at, asks
// for do not fit in d, naming the roomiest domain of level at.
func (p *placement) groupsError(d *api.Domain, at, size int, rule api.LevelRule, n int) error {
	var roomiest *api.Domain
	var walk func(x *api.Domain)
	walk = func(x *api.Domain) {
		if x.Level == at {
			if roomiest == nil || p.room[x.ID] > p.room[roomiest.ID] {
				roomiest = x
			}
			return
		}
		for _, c := range x.Children {
			walk(c)
		}
	}
	walk(d)
	name := p.tree.Levels[at].Name
	most := fmt.Sprintf("the most is %s with %d", roomiest.Value, p.room[roomiest.ID])
	if size >= n {
		return &groupsError{fmt.Sprintf("%s: %s: no domain has room for all %d members; %s", name, describe(rule), n, most)}
	}
	return &groupsError{fmt.Sprintf("%s: %s: %d members need room for %d groups of %d, each within one domain; there is room for %d (%s)",
		name, describe(rule), n, n/size, size, p.wholeGroups(d, at, size), most)}
}

// wholeGroups is how many groups of size fit in d, each within one
// domain of level at.
func (p *placement) wholeGroups(d *api.Domain, at, size int) int {
	if d.Level == at {
		return p.room[d.ID] / size
	}
	sum := 0
	for _, c := range d.Children {
		sum += p.wholeGroups(c, at, size)
	}
	return sum
}

// partitionsOf is how many partitions of rule n of the gang's members
// make: rule.Partitions for the whole gang; for part of it, placed apart
// by a level above, its share of the partitions, rounded (exact when the
// partitions are of one size, which placement.groups keeps whole).
func (p *placement) partitionsOf(rule api.LevelRule, n int) int {
	total := len(p.members)
	if n == total {
		return rule.Partitions
	}
	return max(1, (rule.Partitions*n+total/2)/total)
}

// closer reports whether distribution a (with the preferred rules it
// breaks) comes closer to the policy than b: it breaks fewer rules, or as
// many and uses fewer domains at the first packed level, top down, where
// the two differ.
func (p *placement) closer(a []share, aUnmet []string, b []share, bUnmet []string) bool {
	if len(aUnmet) != len(bUnmet) {
		return len(aUnmet) < len(bUnmet)
	}
	for lv, l := range p.tree.Levels {
		if rule, ok := p.policy.Rule(l.Name); ok && rule.Kind != api.RulePack {
			continue
		}
		if da, db := domainsAt(a, lv), domainsAt(b, lv); da != db {
			return da < db
		}
	}
	return false
}

// domainsAt counts the domains of level lv that shares use.
func domainsAt(shares []share, lv int) int {
	seen := map[*api.Domain]bool{}
	for _, sh := range shares {
		x := sh.dom
		for x.Level > lv {
			x = x.Parent
		}
		seen[x] = true
	}
	return len(seen)
}

func roomOf(slots []slot) []int {
	out := make([]int, len(slots))
	for i, s := range slots {
		out[i] = s.room
	}
	return out
}

// single returns the one index with a non-zero count, or -1.
func single(counts []int) int {
	at := -1
	for i, c := range counts {
		if c > 0 {
			if at >= 0 {
				return -1
			}
			at = i
		}
	}
	return at
}

func nonZero(counts []int) int {
	n := 0
	for _, c := range counts {
		if c > 0 {
			n++
		}
	}
	return n
}

// countsOf names the domains used and their counts: "rack-1: 6, rack-2: 2".
func countsOf(d *api.Domain, counts []int) string {
	var parts []string
	for i, c := range counts {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", d.Children[i].Value, c))
		}
	}
	return strings.Join(parts, ", ")
}

func dedupe(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// place puts the members on the nodes of the shares' domains, in rank
// order and in the shares' order, each on its best node there. It returns
// the domain that held fewer than its share, and how many it held, when
// one did.
func (p *placement) place(stmt *framework.Statement, shares []share) (*api.Domain, int, error) {
	next := 0
	// nextNew moves next to the next member not placed yet.
	nextNew := func() {
		for next < len(p.members) && p.placed[p.members[next]] != nil {
			next++
		}
	}
	for _, sh := range shares {
		nodes := make([]*api.NodeInfo, len(sh.dom.Nodes))
		for i, idx := range sh.dom.Nodes {
			nodes[i] = p.ssn.NodeList[idx]
		}
		labels := p.domainLabels(sh.dom)
		already := p.placedIn[sh.dom]
		for k := already; k < sh.n; k++ {
			nextNew()
			t := p.members[next]
			if p.mayPlace != nil && !p.mayPlace(t) {
				return nil, 0, errQueue
			}
			node := p.ssn.BestNodeIn(p.ssn.ClassOf(t), t, nodes)
			if node == nil {
				return sh.dom, k, fmt.Errorf("%s: room for %d of the %d members it was given", sh.dom.Path(), k, sh.n)
			}
			l := clone(labels)
			l[RankLabel] = strconv.Itoa(next)
			if err := stmt.AllocateLabelled(t, node, l); err != nil {
				return sh.dom, k, err
			}
			next++
		}
	}
	return nil, 0, nil
}

// mostPerNode is the most members stmt placed on one node of d.
func (p *placement) mostPerNode(stmt *framework.Statement, d *api.Domain) int {
	if d == nil {
		return 0
	}
	perNode := map[string]int{}
	most := 0
	for _, pl := range stmt.Placements() {
		if p.tree.Leaf[p.ssn.Nodes[pl.Node].Index] == d {
			perNode[pl.Node]++
			most = max(most, perNode[pl.Node])
		}
	}
	return most
}

// domainLabels are the labels of a member in d: its domain at every level.
func (p *placement) domainLabels(d *api.Domain) map[string]string {
	out := map[string]string{}
	for x := d; x != nil && x.Level >= 0; x = x.Parent {
		out[LevelLabelPrefix+p.tree.Levels[x.Level].Name] = x.Value
	}
	return out
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// outcome reads, level by level, the domains the gang's covered members
// use, placed before or by the statement, in rank order.
func (p *placement) outcome(stmt *framework.Statement) []framework.LevelOutcome {
	at := map[*api.TaskInfo]*api.Domain{}
	for _, d := range stmt.Placements() {
		at[d.Task] = p.tree.Leaf[p.ssn.Nodes[d.Node].Index]
	}
	var leaves []*api.Domain
	for _, t := range p.members { // rank order
		if d := cmp.Or(p.placed[t], at[t]); d != nil {
			leaves = append(leaves, d)
		}
	}
	levels := make([]framework.LevelOutcome, len(p.tree.Levels))
	for lv, l := range p.tree.Levels {
		levels[lv].Level = l.Name
		for _, leaf := range leaves {
			x := leaf
			for x.Level > lv {
				x = x.Parent
			}
			doms := levels[lv].Domains
			if i := slices.IndexFunc(doms, func(c framework.DomainCount) bool { return c.Name == x.Value }); i >= 0 {
				doms[i].Members++
			} else {
				levels[lv].Domains = append(doms, framework.DomainCount{Name: x.Value, Members: 1})
			}
		}
	}
	return levels
}

// withoutTopology places the members as if the gang had no policy, for a
// policy of preferred rules only that the tree has no room for: the gang
// runs, and its status says the rules were not kept.
func (p *placement) withoutTopology(why error) Result {
	stmt := p.ssn.Statement()
	for _, t := range p.members {
		if p.placed[t] != nil {
			continue
		}
		if p.mayPlace != nil && !p.mayPlace(t) {
			stmt.Discard()
			return Result{Reason: ReasonNotEnoughResources, Message: errQueue.Error(), QueueShort: true}
		}
		cls := p.ssn.ClassOf(t)
		node := p.ssn.BestNode(cls, t)
		if node == nil {
			stmt.Discard()
			return Result{Reason: ReasonNotEnoughResources, Message: fmt.Sprintf("pod %s: %s", t.Key(), p.ssn.Diagnose(t))}
		}
		if err := stmt.Allocate(t, node); err != nil {
			stmt.Discard()
			return Result{Reason: ReasonNotEnoughResources, Message: err.Error()}
		}
	}
	return Result{Stmt: stmt, Outcome: framework.TopologyOutcome{
		Levels: p.outcome(stmt),
		Unmet:  []string{fmt.Sprintf("placed without the topology: %v", why)},
	}}
}
