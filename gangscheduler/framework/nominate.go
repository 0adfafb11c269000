package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// Nominate records, for the commit to write on the pods, where each task of
// a gang that preempted will go once its room is free (a pod's
// status.nominatedNodeName, as kube-scheduler writes it for a preemptor):
// so the sessions after this one know the gang preempted for that room
// (actions.Preempt places such a gang before allocate's queue walk), and
// a user sees it (kubectl get pods -o wide). A Decision without a Node
// clears the task's nomination. A task nominated there already is left
// alone; a task nominated twice in a session keeps the last.
func (ssn *Session) Nominate(ds []Decision) {
	for _, d := range ds {
		if i, ok := ssn.nominations[d.Task.UID]; ok {
			ssn.nominationOrder[i].Node = d.Node
			continue
		}
		if d.Task.NominatedNode == d.Node {
			continue
		}
		if ssn.nominations == nil {
			ssn.nominations = map[api.TaskID]int{}
		}
		ssn.nominations[d.Task.UID] = len(ssn.nominationOrder)
		ssn.nominationOrder = append(ssn.nominationOrder, d)
	}
}

// Nominations are the nominated nodes the session changes, in the order
// first changed, each different from the task's: Node "" clears one.
func (ssn *Session) Nominations() []Decision {
	out := make([]Decision, 0, len(ssn.nominationOrder))
	for _, d := range ssn.nominationOrder {
		if d.Node != d.Task.NominatedNode {
			out = append(out, d)
		}
	}
	return out
}
