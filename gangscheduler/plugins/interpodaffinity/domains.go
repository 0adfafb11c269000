package interpodaffinity

import (
	"slices"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// domains counts per topology domain (a label key and its value on a
// node). Entries that fall to zero are removed, so that "no pod anywhere"
// is empty().
type domains struct {
	byKey map[string]map[string]int64
	n     int
}

func newDomains() domains { return domains{byKey: map[string]map[string]int64{}} }

// addAt adds v to the domain of key node n is in; a node without the key
// is in none.
func (d *domains) addAt(n *api.NodeInfo, key string, v int64) {
	value, ok := n.Node.Labels[key]
	if !ok || v == 0 {
		return
	}
	vals := d.byKey[key]
	if vals == nil {
		vals = map[string]int64{}
		d.byKey[key] = vals
	}
	old := vals[value]
	switch now := old + v; {
	case now == 0:
		delete(vals, value)
		d.n--
	case old == 0:
		vals[value] = now
		d.n++
	default:
		vals[value] = now
	}
}

func (d *domains) get(key, value string) int64 { return d.byKey[key][value] }

func (d *domains) empty() bool { return d.n == 0 }

// sumAt sums the counts of the domains a node with nodeLabels is in.
func (d *domains) sumAt(nodeLabels map[string]string) int64 {
	var total int64
	for key, vals := range d.byKey {
		if value, ok := nodeLabels[key]; ok {
			total += vals[value]
		}
	}
	return total
}

// termRef is a term of a pod on a node, with the weight it scores.
type termRef struct {
	term   *api.AffinityTerm
	task   *api.TaskInfo
	weight int64
}

// termIndex holds the terms of the pods on nodes by the domain of their
// pod's node for the term's topology key: a node is judged by the terms of
// the domains it is in.
type termIndex struct {
	byKey map[string]map[string][]termRef
	// keys are byKey's keys, in the order they came: a node is checked
	// against each, and ranging over a map on every check costs more
	// than the check.
	keys []string
	n    int
}

func (x *termIndex) empty() bool { return x.n == 0 }

// add adds (v > 0) or removes (v < 0) task's term, task being on node n.
func (x *termIndex) add(n *api.NodeInfo, term *api.AffinityTerm, task *api.TaskInfo, weight, v int64) {
	value, ok := n.Node.Labels[term.TopologyKey]
	if !ok {
		return
	}
	if x.byKey == nil {
		x.byKey = map[string]map[string][]termRef{}
	}
	vals := x.byKey[term.TopologyKey]
	if vals == nil {
		vals = map[string][]termRef{}
		x.byKey[term.TopologyKey] = vals
		x.keys = append(x.keys, term.TopologyKey)
	}
	if v > 0 {
		vals[value] = append(vals[value], termRef{term: term, task: task, weight: weight})
		x.n++
		return
	}
	refs := vals[value]
	if i := slices.IndexFunc(refs, func(r termRef) bool { return r.term == term && r.task == task }); i >= 0 {
		vals[value] = slices.Delete(refs, i, i+1)
		x.n--
	}
}

// selects reports whether a term in a domain the node is in selects task.
func (x *termIndex) selects(s *state, task *api.TaskInfo, nodeLabels map[string]string) bool {
	for _, key := range x.keys {
		value, ok := nodeLabels[key]
		if !ok {
			continue
		}
		for _, r := range x.byKey[key][value] {
			if r.task.UID != task.UID && s.selectsTask(r.term, task) {
				return true
			}
		}
	}
	return false
}

// weightAt sums the weights of the terms in the domains the node is in
// that select task.
func (x *termIndex) weightAt(s *state, task *api.TaskInfo, nodeLabels map[string]string) int64 {
	var total int64
	for _, key := range x.keys {
		value, ok := nodeLabels[key]
		if !ok {
			continue
		}
		for _, r := range x.byKey[key][value] {
			if r.task.UID != task.UID && s.selectsTask(r.term, task) {
				total += r.weight
			}
		}
	}
	return total
}
