package api

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodeMemo carries what a snapshot derives from the node objects alone
// from one snapshot to the next: each node's parsed allocatable, the name
// order of the set, the total allocatable and the label indexes sessions
// asked for (Snapshot.NodesByLabel). A scheduling cycle otherwise
// spends most of its fixed cost redoing this for thousands of nodes that
// did not change.
//
// An informer never changes a node object in place: every update replaces
// it. So an entry stays valid while the same pointer is listed under its
// name; a new pointer is parsed again, and a name no longer listed is
// dropped.
//
// A snapshot's NodeInfos are its own, since its session changes them. Once
// released (Snapshot.Release), they are made over for the next snapshot of
// the same node set, where only the nodes that held a task or changed need
// making over: a cycle then allocates and writes nothing for the many
// nodes no pod was placed on.
//
// The zero value is ready to use. A NodeMemo is not safe for concurrent
// use: one scheduler builds one snapshot at a time.
type NodeMemo struct {
	byName map[string]*nodeEntry
	// sorted are the entries of the last snapshot's nodes, by name.
	sorted []*nodeEntry
	// total is the sum of their allocatable. Read-only: snapshots share it.
	total Resource
	// labels are the label indexes of that set, in that order.
	labels *labelIndexes
	// preferNoSchedule says some node of the set has a PreferNoSchedule
	// taint.
	preferNoSchedule bool
	// gen numbers the snapshots, to mark the entries each one listed.
	gen uint64
	// spare are the nodes of a released snapshot, if any.
	spare *nodeArena
	// marked says the entries were marked from a new list since spare's
	// snapshot was built: node objects may have changed under them.
	marked bool
}

// nodeEntry is one node as the memo keeps it.
type nodeEntry struct {
	node *corev1.Node
	// alloc is node's parsed status.allocatable. Read-only: the NodeInfos
	// of every snapshot share it.
	alloc Resource
	seen  uint64
}

// Len is the number of nodes the memo holds: those of the last snapshot.
func (m *NodeMemo) Len() int { return len(m.byName) }

// nodeSet is what a snapshot takes of its nodes: the entries sorted by
// name, their total allocatable and the label indexes in that order; all
// read-only.
type nodeSet struct {
	sorted           []*nodeEntry
	total            Resource
	labels           *labelIndexes
	preferNoSchedule bool
}

// nodes returns the node set of list. With a nil memo everything is
// derived afresh. With unchanged, list is not read: the caller knows the
// nodes are the last snapshot's objects (Cluster.NodesUnchanged). It is an
// error for two nodes to have the same name.
func (m *NodeMemo) nodes(list []*corev1.Node, unchanged bool) (nodeSet, error) {
	if m == nil {
		return parseNodes(list)
	}
	if unchanged && m.labels != nil {
		return nodeSet{sorted: m.sorted, total: m.total, labels: m.labels, preferNoSchedule: m.preferNoSchedule}, nil
	}
	sameSet, err := m.mark(list)
	if err != nil {
		*m = NodeMemo{} // half-marked: start afresh next time
		return nodeSet{}, err
	}
	if !sameSet || m.labels == nil {
		m.resort(list)
	}
	// Some node may have a new object: the nodes a released snapshot
	// lends must all be checked.
	m.marked = true
	m.preferNoSchedule = anyPreferNoSchedule(m.sorted)
	return nodeSet{sorted: m.sorted, total: m.total, labels: m.labels, preferNoSchedule: m.preferNoSchedule}, nil
}

// anyPreferNoSchedule reports whether a node has a PreferNoSchedule taint.
func anyPreferNoSchedule(entries []*nodeEntry) bool {
	for _, e := range entries {
		for _, t := range e.node.Spec.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				return true
			}
		}
	}
	return false
}

// mark records the objects of list in the memo and reports whether list
// names the same nodes as the last snapshot, whose order then still holds.
// It recomputes the total when an allocatable changed.
func (m *NodeMemo) mark(list []*corev1.Node) (sameSet bool, err error) {
	if m.byName == nil {
		m.byName = make(map[string]*nodeEntry, len(list))
	}
	m.gen++
	added, allocChanged := false, false
	for _, n := range list {
		e := m.byName[n.Name]
		switch {
		case e == nil:
			e = &nodeEntry{node: n, alloc: NewResource(n.Status.Allocatable)}
			m.byName[n.Name] = e
			added = true
		case e.seen == m.gen:
			return false, fmt.Errorf("node %s listed twice", n.Name)
		case e.node != n:
			// Most node updates (conditions, labels, taints) leave the
			// allocatable as it was: keep the total then.
			if alloc := NewResource(n.Status.Allocatable); !alloc.Equal(&e.alloc) {
				e.alloc, allocChanged = alloc, true
			}
			if m.labels != nil {
				m.labels = m.labels.without(e.node, n)
			}
			e.node = n
		}
		e.seen = m.gen
	}
	// Without new names and without duplicates, as many names as last
	// time are the same names.
	sameSet = !added && len(list) == len(m.sorted)
	if sameSet && allocChanged {
		m.total = sumAllocatable(m.sorted)
	}
	return sameSet, nil
}

// resort makes list, whose entries mark has recorded, the memo's node set:
// it drops the entries of nodes no longer listed and sorts the others.
func (m *NodeMemo) resort(list []*corev1.Node) {
	for name, e := range m.byName {
		if e.seen != m.gen {
			delete(m.byName, name)
		}
	}
	m.sorted = make([]*nodeEntry, 0, len(list))
	for _, n := range list {
		m.sorted = append(m.sorted, m.byName[n.Name])
	}
	sortEntries(m.sorted)
	m.total = sumAllocatable(m.sorted)
	m.labels = &labelIndexes{} // indexes of the old order
}

// parseNodes derives the node set of list without a memo.
func parseNodes(list []*corev1.Node) (nodeSet, error) {
	entries := make([]nodeEntry, len(list))
	sorted := make([]*nodeEntry, len(list))
	for i, n := range list {
		entries[i] = nodeEntry{node: n, alloc: NewResource(n.Status.Allocatable)}
		sorted[i] = &entries[i]
	}
	sortEntries(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i].node.Name == sorted[i-1].node.Name {
			return nodeSet{}, fmt.Errorf("node %s listed twice", sorted[i].node.Name)
		}
	}
	return nodeSet{sorted: sorted, total: sumAllocatable(sorted), labels: &labelIndexes{}, preferNoSchedule: anyPreferNoSchedule(sorted)}, nil
}

func sortEntries(entries []*nodeEntry) {
	slices.SortFunc(entries, func(a, b *nodeEntry) int { return strings.Compare(a.node.Name, b.node.Name) })
}

func sumAllocatable(entries []*nodeEntry) Resource {
	var total Resource
	for _, e := range entries {
		total.Add(&e.alloc)
	}
	return total
}

// nodeArena is the nodes of one snapshot: its NodeInfos in one slice, the
// list and the map of them.
type nodeArena struct {
	// sorted are the memo entries the NodeInfos were made from; the memo
	// makes a new slice whenever the set changes.
	sorted []*nodeEntry
	infos  []NodeInfo
	list   []*NodeInfo
	byName map[string]*NodeInfo
	// touched are the indexes of the nodes that took a task or a hold
	// (AddTask and Hold are the only changes a session makes to a node):
	// those to make over.
	touched []int
}

// newNodeArena makes the empty nodes of set.
func newNodeArena(sorted []*nodeEntry) *nodeArena {
	a := &nodeArena{
		sorted: sorted,
		infos:  make([]NodeInfo, len(sorted)), // one allocation for all nodes
		list:   make([]*NodeInfo, len(sorted)),
		byName: make(map[string]*NodeInfo, len(sorted)),
	}
	for i, e := range sorted {
		ni := &a.infos[i]
		ni.init(e.node, e.alloc, i, &a.touched)
		a.list[i] = ni
		a.byName[ni.Name] = ni
	}
	return a
}

// arena returns empty nodes for sorted: the released ones, made over, if
// they were made from sorted, else new ones.
func (m *NodeMemo) arena(sorted []*nodeEntry) *nodeArena {
	if m == nil {
		return newNodeArena(sorted)
	}
	a, marked := m.spare, m.marked
	m.spare, m.marked = nil, false
	if a == nil || len(a.sorted) != len(sorted) || (len(sorted) > 0 && &a.sorted[0] != &sorted[0]) {
		return newNodeArena(sorted)
	}
	if marked {
		for i, e := range sorted {
			if ni := &a.infos[i]; ni.Tasks != nil || ni.HeldFor != "" || ni.Reserved() || ni.Node != e.node {
				ni.init(e.node, e.alloc, i, &a.touched)
			}
		}
	} else {
		for _, i := range a.touched {
			e := sorted[i]
			a.infos[i].init(e.node, e.alloc, i, &a.touched)
		}
	}
	a.touched = a.touched[:0]
	return a
}

// release keeps a for the next snapshot.
func (m *NodeMemo) release(a *nodeArena) {
	if m != nil {
		m.spare = a
	}
}
