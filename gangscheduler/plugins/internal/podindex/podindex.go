// Package podindex finds the pods on nodes that a label selector may
// select without visiting every pod: an index of the pods on nodes by
// label, built per label key on first use and kept up to date with the
// session's placements. The plugins that count pods per topology domain
// (interpodaffinity, podtopologyspread) build their counts from it: a
// selector that names a gang's own label then costs that gang's pods, not
// every pod of the cluster.
package podindex

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// Placed is a pod on a node.
type Placed struct {
	Task *api.TaskInfo
	Node *api.NodeInfo
}

// Index indexes the pods on the nodes of one session. Not safe for
// concurrent use; a session is single-threaded.
type Index struct {
	nodes func() []*api.NodeInfo
	all   []Placed
	// byKey holds, for each label key asked about, the pods by their value
	// of it.
	byKey map[string]map[string][]Placed
	built bool
}

// New returns an index over the pods on nodes, listed by nodes (the
// session's NodesTaken) when first needed.
func New(nodes func() []*api.NodeInfo) *Index {
	return &Index{nodes: nodes, byKey: map[string]map[string][]Placed{}}
}

func (x *Index) build() {
	if x.built {
		return
	}
	x.built = true
	for _, n := range x.nodes() {
		for t := range n.Occupants() {
			if t.Pod != nil {
				x.all = append(x.all, Placed{Task: t, Node: n})
			}
		}
	}
}

// Candidates returns the pods on nodes that sel may select: those with the
// value one of its equality requirements asks for, or every pod when it
// has none. The caller still matches sel (and the namespace) itself.
func (x *Index) Candidates(sel labels.Selector) []Placed {
	x.build()
	reqs, ok := sel.Requirements()
	if !ok { // labels.Nothing()
		return nil
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if vals := r.Values(); vals.Len() == 1 {
				return x.byValue(r.Key())[vals.UnsortedList()[0]]
			}
		}
	}
	return x.all
}

func (x *Index) byValue(key string) map[string][]Placed {
	m, ok := x.byKey[key]
	if !ok {
		m = map[string][]Placed{}
		for _, p := range x.all {
			if v, has := p.Task.Pod.Labels[key]; has {
				m[v] = append(m[v], p)
			}
		}
		x.byKey[key] = m
	}
	return m
}

// Add records a pod the session placed on node.
func (x *Index) Add(t *api.TaskInfo, n *api.NodeInfo) {
	if !x.built || t.Pod == nil {
		return
	}
	p := Placed{Task: t, Node: n}
	x.all = append(x.all, p)
	for key, m := range x.byKey {
		if v, has := t.Pod.Labels[key]; has {
			m[v] = append(m[v], p)
		}
	}
}

// Remove undoes Add, or records a pod taken off its node (an eviction).
func (x *Index) Remove(t *api.TaskInfo) {
	if !x.built || t.Pod == nil {
		return
	}
	x.all = remove(x.all, t)
	for key, m := range x.byKey {
		if v, has := t.Pod.Labels[key]; has {
			m[v] = remove(m[v], t)
		}
	}
}

func remove(ps []Placed, t *api.TaskInfo) []Placed {
	// The newest first: an undone placement is usually the last one.
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Task == t {
			return slices.Delete(ps, i, i+1)
		}
	}
	return ps
}
