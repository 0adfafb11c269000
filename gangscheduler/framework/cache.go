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
	// candidates are the nodes its tasks may fit on (CandidateNodes); nil
	// until asked.
	candidates []*api.NodeInfo
	// static holds, per node index, 0 (not evaluated yet), 1 (fits) or
	// 2+i (fails with predicateCache.reasons[i]). One byte per (class, node)
	// keeps the cache small: 4000 classes x 5000 nodes is 20 MB.
	static []uint8
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
	nodes   int
	byKey   map[classKey][]*Class
	classes int
	// reasons interns static failure statuses so a cache entry is a byte.
	// Predicates return a handful of distinct statuses, so a linear scan
	// beats hashing a Status (two strings) on every miss.
	reasons []Status
	stats   Stats
}

func (c *predicateCache) init(nodes int) {
	c.nodes = nodes
	c.byKey = map[classKey][]*Class{}
}

// ClassOf returns task's equivalence class, making it on first sight. It
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
		static:    make([]uint8, c.nodes),
	}
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
	c := &ssn.cache
	code := cls.static[node.Index]
	if code == codeFit { // the common case, first
		c.stats.CacheHits++
		return Fit
	}
	if code == codeUnknown {
		code = c.encode(ssn.evalStatic(task, node))
		cls.static[node.Index] = code
	} else {
		c.stats.CacheHits++
	}
	return c.decode(code)
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
