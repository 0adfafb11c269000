package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// bestIndex answers BestNode for every task of one class signature without
// visiting the candidate nodes: a tournament tree over the signature's
// candidates keeps, per node, whether the signature fits it now and the
// node's score, and its root is the best node, ties to the first in
// NodeList order, exactly as BestNodeIn's scan picks it.
//
// It holds only where the answer for a node reads nothing but that node's
// state and the task's signature: every dynamic predicate that applies is
// node-local (AddNodeLocalPredicateFn), no preference applies (a
// preference is normalised over all feasible nodes), node orders read only
// the node (AddNodeOrderFn), and the job has no refused nodes (the one
// static predicate that reads the job). Then a node's entry changes only
// when the node's own state does, and the session says which nodes changed
// (Session.changed): before each answer, the index recomputes those alone.
// So a backlog of gangs of one shape costs one pass over the nodes for the
// shape, then a few entries per placement, instead of a pass over the
// nodes per pod: the cost per pod no longer follows the cluster's size.
//
// Gangs of one shape share the index whatever their job or role: the
// signature fixes everything the answer reads.
type bestIndex struct {
	ssn *Session
	// cls is the class the index was made for, and task one of its
	// tasks: the static answers are cached in cls, and the predicates and
	// scores are evaluated with task, which stands for every task of the
	// signature.
	cls  *Class
	task *api.TaskInfo
	// tree[size+i] is candidate i's entry; tree[k] the better of
	// tree[2k] and tree[2k+1]; tree[1] the best.
	tree []bestEntry
	size int
	// applied is how much of Session.changed the entries reflect.
	applied int
}

type bestEntry struct {
	fit   bool
	pos   int32
	score int64
}

// better is the entry BestNodeIn's scan would keep of the two: one that
// fits, the higher score, on a tie the earlier candidate.
func better(a, b bestEntry) bestEntry {
	switch {
	case !b.fit:
		return a
	case !a.fit || b.score > a.score || (b.score == a.score && b.pos < a.pos):
		return b
	}
	return a
}

// indexKey finds a signature's index.
type indexKey struct {
	hash      uint64
	signature string
}

// bestIndexFor returns the index for cls's signature, making it on first
// use, or nil where an index cannot answer for cls (see bestIndex).
func (ssn *Session) bestIndexFor(cls *Class, task *api.TaskInfo) *bestIndex {
	if cls == nil || !cls.indexable {
		return nil
	}
	if cls.index != nil {
		return cls.index
	}
	key := indexKey{hash: cls.Hash, signature: cls.signature}
	x := ssn.indexes[key]
	if x == nil {
		x = ssn.newBestIndex(cls, task)
		if ssn.indexes == nil {
			ssn.indexes = map[indexKey]*bestIndex{}
		}
		ssn.indexes[key] = x
	}
	cls.index = x
	return x
}

func (ssn *Session) newBestIndex(cls *Class, task *api.TaskInfo) *bestIndex {
	n := len(cls.candidates)
	size := 1
	for size < n {
		size *= 2
	}
	x := &bestIndex{ssn: ssn, cls: cls, task: task, tree: make([]bestEntry, 2*size), size: size, applied: len(ssn.changed)}
	for i := range n {
		x.tree[size+i] = x.entry(i)
	}
	for k := size - 1; k >= 1; k-- {
		x.tree[k] = better(x.tree[2*k], x.tree[2*k+1])
	}
	return x
}

// entry evaluates candidate i now, as BestNodeIn's scan would.
func (x *bestIndex) entry(i int) bestEntry {
	node := x.cls.candidates[i]
	e := bestEntry{pos: int32(i)}
	if x.ssn.PredicateWithClass(x.cls, x.task, node).Fit {
		e.fit, e.score = true, x.ssn.NodeScore(x.task, node)
	}
	return e
}

// best brings the entries of the nodes changed since the last answer up to
// date and returns the best node, nil if none fits.
func (x *bestIndex) best() *api.NodeInfo {
	for _, idx := range x.ssn.changed[x.applied:] {
		if i, ok := x.cls.candidateSlot(x.ssn.NodeList[idx]); ok {
			k := x.size + i
			x.tree[k] = x.entry(i)
			for k /= 2; k >= 1; k /= 2 {
				x.tree[k] = better(x.tree[2*k], x.tree[2*k+1])
			}
		}
	}
	x.applied = len(x.ssn.changed)
	if top := x.tree[1]; top.fit {
		return x.cls.candidates[top.pos]
	}
	return nil
}

// nodeChanged records that node's state changed (a task added or
// removed), for the indexes to recompute its entries.
func (ssn *Session) nodeChanged(node *api.NodeInfo) {
	ssn.changed = append(ssn.changed, int32(node.Index))
}
