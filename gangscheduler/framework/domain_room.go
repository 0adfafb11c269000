package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// DomainRoom returns how many tasks of cls's signature each domain of tree
// holds now, by Domain.ID: on every candidate node of the tree where the
// predicates let task on, the copies of task its idle resources hold (at
// least one: api.TaskInfo.Copies), summed up the tree. It is kept from search to
// search through the session as a bestIndex is: the first ask for a
// signature and tree visits the candidates, later asks only the nodes
// changed since (Session.changed), each a walk up its domains. So a
// backlog of topology gangs of one shape costs one pass over the nodes,
// then a few nodes per placement, instead of a pass per gang.
//
// The slice is the session's: read it, or copy it to change it. DomainRoom
// returns nil where the answer for a node may read more than that node's
// state (cls's fit is not node-local: see Class.fitNodeLocal); the caller
// then visits the nodes itself.
func (ssn *Session) DomainRoom(cls *Class, task *api.TaskInfo, tree *api.TopologyTree) []int {
	if cls == nil || !cls.fitNodeLocal {
		return nil
	}
	key := roomKey{indexKey{hash: cls.Hash, signature: cls.signature}, tree}
	x := ssn.rooms[key]
	if x == nil {
		x = ssn.newDomainRoom(cls, task, tree)
		if ssn.rooms == nil {
			ssn.rooms = map[roomKey]*domainRoom{}
		}
		ssn.rooms[key] = x
		return x.room
	}
	x.catchUp()
	return x.room
}

// roomKey finds a signature's domainRoom on one tree.
type roomKey struct {
	indexKey
	tree *api.TopologyTree
}

// domainRoom is DomainRoom's answer for one signature and tree, with what
// each node adds to it.
type domainRoom struct {
	ssn *Session
	// cls and task stand for every task of the signature, as in bestIndex.
	cls  *Class
	task *api.TaskInfo
	tree *api.TopologyTree
	// node holds, per candidate of cls, what it adds to its domains: 0
	// where the predicates keep the task off or the node is outside the
	// tree.
	node []int
	// room is the sum of node up the tree, by Domain.ID.
	room []int
	// applied is how much of Session.changed room reflects.
	applied int
}

func (ssn *Session) newDomainRoom(cls *Class, task *api.TaskInfo, tree *api.TopologyTree) *domainRoom {
	x := &domainRoom{
		ssn: ssn, cls: cls, task: task, tree: tree,
		node: make([]int, len(cls.candidates)), room: make([]int, tree.Domains),
		applied: len(ssn.changed),
	}
	for i := range cls.candidates {
		x.set(i)
	}
	return x
}

// catchUp recounts the candidates changed since the last ask.
func (x *domainRoom) catchUp() {
	for _, idx := range x.ssn.changed[x.applied:] {
		if i, ok := x.cls.candidateSlot(x.ssn.NodeList[idx]); ok {
			x.set(i)
		}
	}
	x.applied = len(x.ssn.changed)
}

// set counts candidate i now and moves its domains' room by the change. A
// node listed twice in Session.changed is counted twice, moving nothing
// the second time.
func (x *domainRoom) set(i int) {
	n := x.cls.candidates[i]
	leaf := x.tree.Leaf[n.Index]
	if leaf == nil {
		return
	}
	k := 0
	if x.ssn.PredicateWithClass(x.cls, x.task, n).Fit {
		k = max(x.task.Copies(&n.Idle), 1)
	}
	if delta := k - x.node[i]; delta != 0 {
		x.node[i] = k
		for d := leaf; d != nil; d = d.Parent {
			x.room[d.ID] += delta
		}
	}
}
