package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// labelNodes holds, per label key and value, the session's nodes with it:
// the candidates of every class that selects on that label.
type labelNodes map[labelKV][]*api.NodeInfo

type labelKV struct{ key, value string }

// nodesWith returns the nodes labelled key=value, in NodeList order, and
// the position map of key (api.LabelIndex.Pos).
func (ssn *Session) nodesWith(key, value string) ([]*api.NodeInfo, []int32) {
	ix := ssn.NodesByLabel(key)
	kv := labelKV{key, value}
	nodes, ok := ssn.labels[kv]
	if !ok {
		idx := ix.ByValue[value]
		nodes = make([]*api.NodeInfo, len(idx))
		for i, j := range idx {
			nodes[i] = ssn.NodeList[j]
		}
		ssn.labels[kv] = nodes
	}
	return nodes, ix.Pos
}

// CandidateNodes returns the nodes task may fit on, in NodeList order: the
// nodes that carry the rarest label of its nodeSelector (all nodes without
// one). A node outside them fails the static predicates anyway, so a
// search for the best node only needs to visit these: a pod that selects
// 20 nodes of 4000 costs 20 checks, whatever the cluster's size. The list
// is computed once per class, whose signature fixes the nodeSelector.
//
// Required node affinity beyond the nodeSelector is left to the
// predicates; so is everything else. Failure summaries (Diagnose) still
// count every node.
func (ssn *Session) CandidateNodes(cls *Class, task *api.TaskInfo) []*api.NodeInfo {
	if cls != nil {
		return cls.candidates
	}
	nodes, _ := ssn.candidates(task)
	return nodes
}

// candidates computes CandidateNodes and the position map of the list: nil
// when the list is NodeList, where a node's position is its Index.
func (ssn *Session) candidates(task *api.TaskInfo) ([]*api.NodeInfo, []int32) {
	out, pos := ssn.NodeList, []int32(nil)
	if task.Pod != nil {
		for k, v := range task.Pod.Spec.NodeSelector {
			if nodes, p := ssn.nodesWith(k, v); len(nodes) < len(out) {
				out, pos = nodes, p
			}
		}
	}
	if out == nil {
		out = []*api.NodeInfo{} // none carries the label
	}
	return out, pos
}
