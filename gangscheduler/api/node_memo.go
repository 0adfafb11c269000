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
	// gen numbers the snapshots, to mark the entries each one listed.
	gen uint64
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
	sorted []*nodeEntry
	total  Resource
	labels *labelIndexes
}

// nodes returns the node set of list. With a nil memo everything is
// derived afresh. It is an error for two nodes to have the same name.
func (m *NodeMemo) nodes(list []*corev1.Node) (nodeSet, error) {
	if m == nil {
		return parseNodes(list)
	}
	sameSet, err := m.mark(list)
	if err != nil {
		*m = NodeMemo{} // half-marked: start afresh next time
		return nodeSet{}, err
	}
	if !sameSet || m.labels == nil {
		m.resort(list)
	}
	return nodeSet{sorted: m.sorted, total: m.total, labels: m.labels}, nil
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
	return nodeSet{sorted: sorted, total: sumAllocatable(sorted), labels: &labelIndexes{}}, nil
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
