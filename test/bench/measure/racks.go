package measure

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Racks is how a placement used the racks (T, T0): per gang, the racks its
// GPU pods are in, read from the nodes' labels, not from what the placer
// reports.
type Racks struct {
	// Gangs counts the gangs with a bound GPU pod; Split those whose GPU
	// pods are in more than one rack (each of T's gangs fits one, so a
	// split gang breaks T's required rule, and T0's shows what a placer
	// does without it).
	Gangs, Split int
	// RacksUsed sums, over the gangs, the racks each uses.
	RacksUsed int
}

// MeanRacks is the racks a gang uses, on average.
func (r Racks) MeanRacks() float64 {
	if r.Gangs == 0 {
		return 0
	}
	return float64(r.RacksUsed) / float64(r.Gangs)
}

// RacksOf reads, for every gang, the values of label (the rack) of the
// nodes its bound GPU pods are on. A GPU pod on a node without the label
// counts as a rack of its own.
func RacksOf(nodes []*corev1.Node, pods []*corev1.Pod, label string) Racks {
	rackOf := map[string]string{}
	for _, n := range nodes {
		rackOf[n.Name] = n.Labels[label]
	}
	byGang := map[string]map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || scenario.GPURequest(p) == 0 {
			continue
		}
		g := scenario.GangOf(p)
		if byGang[g] == nil {
			byGang[g] = map[string]bool{}
		}
		rack := rackOf[p.Spec.NodeName]
		if rack == "" {
			rack = "node " + p.Spec.NodeName
		}
		byGang[g][rack] = true
	}
	var r Racks
	for _, racks := range byGang {
		r.Gangs++
		r.RacksUsed += len(racks)
		if len(racks) > 1 {
			r.Split++
		}
	}
	return r
}
