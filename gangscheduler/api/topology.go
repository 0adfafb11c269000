package api

import (
	"slices"
	"strings"
)

// TopologyInfo is a Topology: the node label of each level, top to
// bottom.
type TopologyInfo struct {
	Name   string
	Levels []TopologyLevel
}

// TopologyLevel is one level of a Topology.
type TopologyLevel struct {
	Name      string
	NodeLabel string
}

// Level returns the index of the level named name, -1 if there is none.
func (t *TopologyInfo) Level(name string) int {
	return slices.IndexFunc(t.Levels, func(l TopologyLevel) bool { return l.Name == name })
}

// TopologyPolicy is a gang's topology policy, as its PodGroup states it:
// which Topology, a rule per level, and the roles it places, in rank
// order.
type TopologyPolicy struct {
	Topology string
	Rules    []LevelRule
	// Roles are the roles whose members the policy places, in rank order;
	// empty means every role, by name.
	Roles []string
}

// Rule returns the rule of the level named level, and whether the
// policy has one.
func (p *TopologyPolicy) Rule(level string) (LevelRule, bool) {
	i := slices.IndexFunc(p.Rules, func(r LevelRule) bool { return r.Level == level })
	if i < 0 {
		return LevelRule{}, false
	}
	return p.Rules[i], true
}

// Covers reports whether the policy places members of role.
func (p *TopologyPolicy) Covers(role string) bool {
	return len(p.Roles) == 0 || slices.Contains(p.Roles, role)
}

// RuleKind is what a level's rule asks of the domains used there.
type RuleKind string

// The kinds of rule (the TopologyPolicyType values).
const (
	RulePack      RuleKind = "Pack"
	RuleSpread    RuleKind = "Spread"
	RulePartition RuleKind = "Partition"
)

// LevelRule is the rule at one level; zero Partitions, Min, Max and
// Factor mean unset.
type LevelRule struct {
	Level      string
	Kind       RuleKind
	Partitions int
	Min, Max   int
	Factor     int
	Required   bool
}

// TopologyTree is the domains of a Topology over a snapshot's nodes: a
// domain at a level is the nodes with one value of the level's label
// under one domain of the level above. Nodes lacking a level's label are
// outside the tree. It is read-only: the snapshots of an unchanged node
// set share it (Snapshot.TopologyTree), so it names nodes by their index
// in NodeList rather than by pointer.
type TopologyTree struct {
	Levels []TopologyLevel
	Root   *Domain
	// Leaf holds, per NodeList index, the node's domain at the last level;
	// nil for a node outside the tree.
	Leaf []*Domain
	// Domains counts the domains of every level, the root included: the
	// IDs are 0 to Domains-1.
	Domains int
}

// Domain is one domain of a TopologyTree.
type Domain struct {
	// ID numbers the tree's domains from 0 (the root) to Domains-1: a
	// search keeps a figure per domain in a slice indexed by it.
	ID int
	// Level is the index of the domain's level; -1 for the root.
	Level int
	// Value is the level's label value ("rack-3"); "" for the root.
	Value  string
	Parent *Domain
	// Children are the domains of the next level within it, by value;
	// none at the last level.
	Children []*Domain
	// Nodes are the NodeList indexes of every node within it, ascending.
	Nodes []int32
}

// Path is the values of the domain and its ancestors, top down
// ("block-1/rack-3").
func (d *Domain) Path() string {
	var parts []string
	for x := d; x != nil && x.Level >= 0; x = x.Parent {
		parts = append(parts, x.Value)
	}
	slices.Reverse(parts)
	return strings.Join(parts, "/")
}

// TopologyTree returns the tree of t over the snapshot's nodes, building
// it on first ask from the label indexes of its levels' keys; the
// snapshots of an unchanged node set share it.
func (s *Snapshot) TopologyTree(t *TopologyInfo) *TopologyTree {
	keys := make([]string, len(t.Levels))
	for i, l := range t.Levels {
		keys[i] = l.NodeLabel
		s.NodesByLabel(l.NodeLabel) // the tree lives as long as these indexes
	}
	if s.labels == nil {
		s.labels = &labelIndexes{}
	}
	return s.labels.tree(keys, func() *TopologyTree { return buildTree(s, t) })
}

func buildTree(s *Snapshot, t *TopologyInfo) *TopologyTree {
	tree := &TopologyTree{Levels: slices.Clone(t.Levels), Root: &Domain{Level: -1}, Leaf: make([]*Domain, len(s.NodeList)), Domains: 1}
	ixs := make([]*LabelIndex, len(t.Levels))
	for i, l := range t.Levels {
		ixs[i] = s.NodesByLabel(l.NodeLabel)
	}
	// A node's domain at each level is found by walking down from the
	// root; children are kept by value while building, sorted after.
	byValue := map[*Domain]map[string]*Domain{}
	for i, n := range s.NodeList {
		// A node without every level's label is outside the tree, and
		// makes no domain of the levels it has.
		if slices.ContainsFunc(ixs, func(ix *LabelIndex) bool { return ix.Pos[i] < 0 }) {
			continue
		}
		d := tree.Root
		for lv := range t.Levels {
			v := n.Node.Labels[t.Levels[lv].NodeLabel]
			kids := byValue[d]
			if kids == nil {
				kids = map[string]*Domain{}
				byValue[d] = kids
			}
			child := kids[v]
			if child == nil {
				child = &Domain{ID: tree.Domains, Level: lv, Value: v, Parent: d}
				kids[v] = child
				d.Children = append(d.Children, child)
				tree.Domains++
			}
			d = child
		}
		tree.Leaf[i] = d
		for x := d; x != nil; x = x.Parent {
			x.Nodes = append(x.Nodes, int32(i))
		}
	}
	var sortKids func(d *Domain)
	sortKids = func(d *Domain) {
		slices.SortFunc(d.Children, func(a, b *Domain) int { return strings.Compare(a.Value, b.Value) })
		for _, c := range d.Children {
			sortKids(c)
		}
	}
	sortKids(tree.Root)
	return tree
}
