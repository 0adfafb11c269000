package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Whether a gang's pending members could be placed on the cluster's free
// room, worked out from the watch alone, with the rules the soak's pods
// use: resources (every requested resource, and one of the node's
// allocatable "pods"), nodeSelector, tolerations of NoSchedule and
// NoExecute taints, and cordoned nodes. The soak's pods use no affinity,
// spread or volumes; a pod that did would be judged here as if it had
// none, which is why these functions serve the soak's shapes and no more.

// room is what a node has free for new pods: its allocatable less the
// requests of the pods bound to it that have not finished (terminating
// ones included, as in nodeUsage).
type room struct {
	node Node
	free corev1.ResourceList
}

// admits reports whether the node takes the pod by everything but
// resources.
func admits(n Node, p Pod) bool {
	if n.Unschedulable {
		return false
	}
	for k, v := range p.NodeSelector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, t := range n.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(p.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, t) }) {
			return false
		}
	}
	return true
}

// tolerates is Kubernetes' rule for Exists and Equal (the soak's pods use
// no other operator): an empty key with Exists tolerates every taint; an
// empty effect, every effect.
func tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return tol.Key != "" && tol.Value == t.Value
	}
	return false
}

// podsResource is the allocatable count of pods a node holds; each pod
// takes one.
const podsResource = corev1.ResourcePods

// take returns free less what p requests, and whether p fits in it.
func take(free corev1.ResourceList, p Pod) (corev1.ResourceList, bool) {
	out := free.DeepCopy()
	need := maps.Clone(p.Requests)
	if _, ok := free[podsResource]; ok {
		if need == nil {
			need = corev1.ResourceList{}
		}
		one := resource.MustParse("1")
		if q, ok := need[podsResource]; ok {
			one.Add(q)
		}
		need[podsResource] = one
	}
	for name, q := range need {
		if q.IsZero() {
			continue
		}
		have := out[name]
		if have.Cmp(q) < 0 {
			return nil, false
		}
		have.Sub(q)
		out[name] = have
	}
	return out, true
}

// freeRoom is each node's room, given the pods bound to it.
func freeRoom(nodes []Node, usage func(node string) corev1.ResourceList) []room {
	out := make([]room, 0, len(nodes))
	for _, n := range nodes {
		free := n.Allocatable.DeepCopy()
		for name, used := range usage(n.Name) {
			q := free[name]
			q.Sub(used)
			free[name] = q
		}
		out = append(out, room{node: n, free: free})
	}
	return out
}

// placement is the search over where pods may go. Pods and nodes that no
// choice can tell apart are tried once: pods by their requests, selector
// and tolerations, nodes by their free room and what they admit of the
// pods at hand.
type placement struct {
	pods  []Pod
	class []string // each pod's class
	memo  map[string]bool
}

func newPlacement(pods []Pod) *placement {
	pl := &placement{pods: pods, memo: map[string]bool{}}
	for _, p := range pods {
		pl.class = append(pl.class, fmt.Sprint(resourceKey(p.Requests), p.NodeSelector, p.Tolerations))
	}
	return pl
}

func resourceKey(l corev1.ResourceList) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		q := l[k]
		parts = append(parts, string(k)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// state names the remaining pods (by class) and the nodes' room (by what
// a choice could tell apart), for the memo.
func (pl *placement) state(left []int, rooms []room) string {
	var ps, ns []string
	for _, i := range left {
		ps = append(ps, pl.class[i])
	}
	for _, r := range rooms {
		ns = append(ns, pl.nodeClass(r, left))
	}
	slices.Sort(ps)
	slices.Sort(ns)
	return strings.Join(ps, ";") + "|" + strings.Join(ns, ";")
}

// nodeClass is the node's room and which of the remaining pods it
// admits: two nodes alike in both are the same choice.
func (pl *placement) nodeClass(r room, left []int) string {
	var b strings.Builder
	b.WriteString(resourceKey(r.free))
	for _, i := range left {
		if admits(r.node, pl.pods[i]) {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// choices are the (pod, node) moves from a state, one per class of pod
// and node: the pod's index in left, the node's in rooms, and the room
// the node keeps.
type move struct {
	pod, node int
	after     corev1.ResourceList
}

func (pl *placement) moves(left []int, rooms []room, pod int) []move {
	var out []move
	seen := map[string]bool{}
	for ni, r := range rooms {
		if !admits(r.node, pl.pods[left[pod]]) {
			continue
		}
		after, ok := take(r.free, pl.pods[left[pod]])
		if !ok {
			continue
		}
		if c := pl.nodeClass(r, left); !seen[c] {
			seen[c] = true
			out = append(out, move{pod: pod, node: ni, after: after})
		}
	}
	return out
}

func apply(left []int, rooms []room, m move) ([]int, []room) {
	l := slices.Delete(slices.Clone(left), m.pod, m.pod+1)
	rs := slices.Clone(rooms)
	rs[m.node] = room{node: rs[m.node].node, free: m.after}
	return l, rs
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// canPlace reports whether some placement puts every pod on a node that
// admits it and has room for it, node by node (several pods may share a
// node).
func canPlace(pods []Pod, rooms []room) bool {
	return newPlacement(pods).search(indexes(len(pods)), rooms, false)
}

// alwaysPlaces reports whether every greedy placement succeeds: whatever
// pod is placed next and whichever node that admits it and has room it
// goes to, every pod finds a node. A scheduler that places a gang's pods
// one by one, each on a feasible node, in any order and by any score,
// and never goes back, cannot fail to place such a gang; one that
// canPlace only may be missed by such a scheduler through no fault of
// its rules (its order or scores led it into a dead end).
func alwaysPlaces(pods []Pod, rooms []room) bool {
	return newPlacement(pods).search(indexes(len(pods)), rooms, true)
}

// search answers canPlace (every false) or alwaysPlaces (every true) for
// the pods left and the rooms, remembering each state's answer (a
// placement answers one of the two questions only).
func (pl *placement) search(left []int, rooms []room, every bool) bool {
	if len(left) == 0 {
		return true
	}
	key := pl.state(left, rooms)
	if v, ok := pl.memo[key]; ok {
		return v
	}
	var ok bool
	if every {
		ok = pl.everyMove(left, rooms)
	} else {
		// Every pod must go somewhere: trying the first one's nodes covers
		// every placement.
		ok = slices.ContainsFunc(pl.moves(left, rooms, 0), func(m move) bool {
			l, r := apply(left, rooms, m)
			return pl.search(l, r, false)
		})
	}
	pl.memo[key] = ok
	return ok
}

// everyMove reports whether every pod left has a node, and every move
// leads to a placement of all of them however it goes on.
func (pl *placement) everyMove(left []int, rooms []room) bool {
	tried := map[string]bool{}
	for i := range left {
		if c := pl.class[left[i]]; tried[c] {
			continue
		} else {
			tried[c] = true
		}
		ms := pl.moves(left, rooms, i)
		if len(ms) == 0 {
			return false
		}
		for _, m := range ms {
			if l, r := apply(left, rooms, m); !pl.search(l, r, true) {
				return false
			}
		}
	}
	return true
}
