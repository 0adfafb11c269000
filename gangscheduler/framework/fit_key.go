package framework

import "github.com/troupe-ml/troupe/gangscheduler/api"

// FitKey identifies everything a task's predicate answers depend on
// besides the nodes: its class, and its labels in a session where some
// predicate matches other pods' selectors against them (the required
// anti-affinity of pods on nodes, SetLabelSensitive). Two tasks of one
// key get the same answers on every node.
type FitKey struct {
	cls    *Class
	labels uint64
}

// SetLabelSensitive tells the session that some predicate reads a task's
// labels (the inter-pod affinity plugin does, when a pod with required
// anti-affinity exists): FitKey then tells apart tasks of one class with
// other labels, such as the replica index the operator gives each member.
func (ssn *Session) SetLabelSensitive() { ssn.labelSensitive = true }

// LabelSensitive reports whether SetLabelSensitive was called.
func (ssn *Session) LabelSensitive() bool { return ssn.labelSensitive }

// FitKey returns task's key, and whether a search that found no node for
// it would find none for another task of the key later in the session:
// true unless the task has a rule that placements can satisfy rather than
// only break (required pod affinity, a DoNotSchedule spread constraint:
// api.PodRules.Monotone). Actions skip the other tasks of a key that
// failed only when it is true.
func (ssn *Session) FitKey(cls *Class, task *api.TaskInfo) (FitKey, bool) {
	k := FitKey{cls: cls}
	if ssn.labelSensitive {
		k.labels = task.LabelsHash()
	}
	return k, cls != nil && task.Rules.Monotone()
}
