package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// labelIndex maps a node label's key and value to the nodes that carry it,
// in NodeList order.
type labelIndex map[string]map[string][]*api.NodeInfo

func newLabelIndex(nodes []*api.NodeInfo) labelIndex {
	ix := labelIndex{}
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		for k, v := range n.Node.Labels {
			if ix[k] == nil {
				ix[k] = map[string][]*api.NodeInfo{}
			}
			ix[k][v] = append(ix[k][v], n)
		}
	}
	return ix
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
	if cls != nil && cls.candidates != nil {
		return cls.candidates
	}
	out := ssn.NodeList
	if task.Pod != nil {
		for k, v := range task.Pod.Spec.NodeSelector {
			if nodes := ssn.labels[k][v]; len(nodes) < len(out) {
				out = nodes
			}
		}
	}
	if out == nil {
		out = []*api.NodeInfo{} // none carries the label: cached as such
	}
	if cls != nil {
		cls.candidates = out
	}
	return out
}
