package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// Class is an equivalence class of tasks: one job, one role, one class
// signature (api.TaskInfo.ClassSignature: requests, nodeSelector, affinity,
// tolerations, host ports). Every task of a class gets the same static
// predicate answer on every node, so the answer is computed once per
// (class, node) and shared.
//
// The job and the role are part of the key even when signatures are equal:
// a gang's master and its workers never share answers, and neither do two
// jobs, so a predicate that later reads something per job (e.g. pod
// affinity to the job's own pods) stays correct.
type Class struct {
	Job  api.JobID
	Role string
	Hash uint64

	signature string
	// candidates are the nodes its tasks may fit on (CandidateNodes).
	candidates []*api.NodeInfo
	// at maps a node's Index to its position among the nodes with its
	// value of the label that chose the candidates (api.LabelIndex.Pos):
	// for a candidate, its position in candidates. It is nil when the
	// candidates are all nodes, where the position is the Index itself.
	at []int32
	// static holds, per candidate, 0 (not evaluated yet), 1 (fits) or 2+i
	// (fails with predicateCache.reasons[i]). One byte per candidate keeps
	// the cache small and its cost independent of the nodes a class can
	// never use: 94 classes that select 20 nodes of 4000 take 1880 bytes.
	static []uint8
	// dynamic are the session's dynamic predicates that apply to the
	// class (Session.AddPredicateFnFor).
	dynamic []PredicateFn
	// fitNodeLocal says whether a task of the class fits a node by
	// nothing but the node's state and the class signature: every
	// dynamic predicate that applies is node-local and the job has no
	// refused nodes. Then DomainRoom may answer for the class.
	fitNodeLocal bool
	// indexable says whether a bestIndex may answer BestNode for the
	// class (its fit node-local, and no preference applies); index is the
	// one it got.
	indexable bool
	index     *bestIndex
	// others holds the same for the nodes outside candidates, per node
	// Index. They fail the nodeSelector, and only a diagnosis of the whole
	// cluster asks about them, so it is allocated on the first such ask.
	others []uint8
}

type classKey struct {
	job  api.JobID
	role string
	hash uint64
}

const (
	codeUnknown uint8 = 0
	codeFit     uint8 = 1
	codeFirst   uint8 = 2
	// codeOverflow stands for any failure once 253 distinct reasons are
	// interned; predicates return a handful, so it is a guard, not a path.
	codeOverflow uint8 = 255
)

var overflowStatus = Unfit("predicate failed")

// predicateCache maps tasks to classes and holds the static answers.
type predicateCache struct {
	byKey   map[classKey][]*Class
	classes int
	// reasons interns static failure statuses so a cache entry is a byte.
	// Predicates return a handful of distinct statuses, so a linear scan
	// beats hashing a Status (two strings) on every miss.
	reasons []Status
	stats   Stats
}

func (c *predicateCache) init() {
	c.byKey = map[classKey][]*Class{}
}

// ClassOf returns task's equivalence class, making it on first sight
// (with its candidate nodes: the signature fixes the nodeSelector). It
// returns nil for a task without a class signature (a pod of no gang that
// was already placed); its static predicates are then evaluated every time.
//
// The hash is the map key; the full signature is compared too, so a hash
// collision can never make two different classes share answers.
func (ssn *Session) ClassOf(task *api.TaskInfo) *Class {
	if task.ClassSignature == "" {
		return nil
	}
	c := &ssn.cache
	key := classKey{job: task.Job, role: task.Role, hash: task.ClassHash}
	for _, cls := range c.byKey[key] {
		if cls.signature == task.ClassSignature {
			return cls
		}
	}
	cls := &Class{
		Job: task.Job, Role: task.Role, Hash: task.ClassHash,
		signature: task.ClassSignature,
	}
	cls.candidates, cls.at = ssn.candidates(task)
	var nodeLocal bool
	cls.dynamic, nodeLocal = ssn.dynamicFor(task)
	cls.fitNodeLocal = nodeLocal && !ssn.refusedNodes(task.Job)
	cls.indexable = cls.fitNodeLocal && !ssn.preferenceApplies(task)
	cls.static = make([]uint8, len(cls.candidates))
	c.byKey[key] = append(c.byKey[key], cls)
	c.classes++
	return cls
}

// staticStatus returns the cached static answer for (cls, node), evaluating
// the static predicates with task on a miss.
func (ssn *Session) staticStatus(cls *Class, task *api.TaskInfo, node *api.NodeInfo) Status {
	if cls == nil {
		return ssn.evalStatic(task, node)
	}
	codes, i := cls.static, 0
	if j, ok := cls.candidateSlot(node); ok { // the hot path: a search visits candidates
		i = j
	} else if codes, i = ssn.otherSlot(cls, node); codes == nil {
		return ssn.evalStatic(task, node) // a node of another snapshot: nothing to cache it by
	}
	c := &ssn.cache
	code := codes[i]
	if code == codeFit { // the common case, first
		c.stats.CacheHits++
		return Fit
	}
	if code == codeUnknown {
		code = c.encode(ssn.evalStatic(task, node))
		codes[i] = code
	} else {
		c.stats.CacheHits++
	}
	return c.decode(code)
}

// candidateSlot returns node's position in cls.candidates, if it is one.
func (cls *Class) candidateSlot(node *api.NodeInfo) (int, bool) {
	i := node.Index
	if cls.at != nil {
		if uint(i) >= uint(len(cls.at)) {
			return 0, false
		}
		i = int(cls.at[i]) // its position among the nodes with its value of the label
	}
	return i, uint(i) < uint(len(cls.candidates)) && cls.candidates[i] == node
}

// otherSlot returns where the answer for a node outside cls's candidates
// is cached, or nil for a node that is not in the session's snapshot.
func (ssn *Session) otherSlot(cls *Class, node *api.NodeInfo) ([]uint8, int) {
	if uint(node.Index) >= uint(len(ssn.NodeList)) || ssn.NodeList[node.Index] != node {
		return nil, 0
	}
	if cls.others == nil {
		cls.others = make([]uint8, len(ssn.NodeList))
	}
	return cls.others, node.Index
}

func (c *predicateCache) encode(s Status) uint8 {
	if s.Fit {
		return codeFit
	}
	for i, r := range c.reasons {
		if r == s {
			return codeFirst + uint8(i)
		}
	}
	if len(c.reasons) >= int(codeOverflow-codeFirst) {
		return codeOverflow
	}
	c.reasons = append(c.reasons, s)
	return codeFirst + uint8(len(c.reasons)-1)
}

func (c *predicateCache) decode(code uint8) Status {
	switch code {
	case codeFit:
		return Fit
	case codeOverflow:
		return overflowStatus
	}
	return c.reasons[code-codeFirst]
}
