package api

import (
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// LabelIndex is the nodes of a snapshot by their value of one label key.
// It is read-only: the snapshots of an unchanged node set share it (see
// NodeMemo), so a cycle does not look at every node's labels again.
type LabelIndex struct {
	// ByValue holds, per value, the NodeList indexes of the nodes with
	// that value, ascending.
	ByValue map[string][]int32
	// Pos holds, per NodeList index, the node's position in its ByValue
	// list; -1 for a node without the key.
	Pos []int32
}

// NodesByLabel returns the index of label key over s.NodeList, building it
// on first ask: sessions ask for the few keys their pods select on.
func (s *Snapshot) NodesByLabel(key string) *LabelIndex {
	if s.labels == nil { // a snapshot not made by NewSnapshot
		s.labels = &labelIndexes{}
	}
	return s.labels.get(key, func() *LabelIndex { return indexLabel(s.NodeList, key) })
}

func indexLabel(nodes []*NodeInfo, key string) *LabelIndex {
	ix := &LabelIndex{ByValue: map[string][]int32{}, Pos: make([]int32, len(nodes))}
	for i, n := range nodes {
		v, ok := "", false
		if n.Node != nil {
			v, ok = n.Node.Labels[key]
		}
		if !ok {
			ix.Pos[i] = -1
			continue
		}
		ix.Pos[i] = int32(len(ix.ByValue[v]))
		ix.ByValue[v] = append(ix.ByValue[v], int32(i))
	}
	return ix
}

// labelIndexes are the LabelIndexes of one node set, in one order. The
// snapshots of that set share them, and their sessions may run at the same
// time, hence the lock.
type labelIndexes struct {
	mu    sync.Mutex
	byKey map[string]*LabelIndex
	// trees are the topology trees built from these indexes, by their
	// levels' label keys joined; each lives as long as its keys' indexes.
	trees map[string]*treeEntry
}

type treeEntry struct {
	keys []string
	tree *TopologyTree
}

func (l *labelIndexes) tree(keys []string, build func() *TopologyTree) *TopologyTree {
	id := strings.Join(keys, "\x00")
	l.mu.Lock()
	if e, ok := l.trees[id]; ok {
		l.mu.Unlock()
		return e.tree
	}
	l.mu.Unlock()
	t := build() // reads the indexes through get, which locks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.trees == nil {
		l.trees = map[string]*treeEntry{}
	}
	l.trees[id] = &treeEntry{keys: keys, tree: t}
	return t
}

func (l *labelIndexes) get(key string, build func() *LabelIndex) *LabelIndex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ix, ok := l.byKey[key]; ok {
		return ix
	}
	if l.byKey == nil {
		l.byKey = map[string]*LabelIndex{}
	}
	ix := build()
	l.byKey[key] = ix
	return ix
}

// without returns the indexes that stay valid after old is replaced by
// new in the node set: those of the keys whose value did not change. It
// returns l itself when none changed.
func (l *labelIndexes) without(old, new *corev1.Node) *labelIndexes {
	l.mu.Lock()
	defer l.mu.Unlock()
	var kept *labelIndexes
	for key := range l.byKey {
		ov, oldHas := old.Labels[key]
		nv, newHas := new.Labels[key]
		if ov == nv && oldHas == newHas {
			continue
		}
		if kept == nil {
			kept = &labelIndexes{byKey: maps.Clone(l.byKey), trees: maps.Clone(l.trees)}
		}
		delete(kept.byKey, key)
		for id, e := range kept.trees {
			if slices.Contains(e.keys, key) {
				delete(kept.trees, id)
			}
		}
	}
	if kept == nil {
		return l
	}
	return kept
}
