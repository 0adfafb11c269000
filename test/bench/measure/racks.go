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

// Stranding is what is left of a racked cluster at the end of a run (TM):
// the GPUs free, and those of them no waiting gang can use.
type Stranding struct {
	// Waiting counts the gangs not bound whole.
	Waiting int
	// FreeGPUs are the GPU nodes' GPUs no bound pod holds; BoundGPUs
	// those the gangs' bound pods hold.
	FreeGPUs, BoundGPUs int64
	// StrandedGPUs are the free GPUs no waiting gang can use: on a node
	// with fewer free than a waiting gang's GPU pod asks, or in a rack
	// without enough such nodes for all of its GPU pods (its gang must be
	// in one rack). With no gang waiting, nothing is stranded.
	StrandedGPUs int64
}

// StrandingOf reads the free GPUs from the nodes and every bound pod (the
// background's too), and which gangs wait from the gangs' pods and whole
// (the gangs bound whole). A waiting gang's shape is its GPU pods: how
// many, and the most one asks.
func StrandingOf(nodes []*corev1.Node, all, gangPods []*corev1.Pod, whole map[string]bool, label string) Stranding {
	free := map[string]int64{}
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[scenario.GPU]; ok && q.Value() > 0 {
			free[n.Name] = q.Value()
		}
	}
	for _, p := range all {
		if _, ok := free[p.Spec.NodeName]; ok {
			free[p.Spec.NodeName] -= scenario.GPURequest(p)
		}
	}
	type shape struct {
		pods int
		gpus int64
	}
	shapes := map[string]*shape{}
	var st Stranding
	for _, p := range gangPods {
		if p.Spec.NodeName != "" {
			st.BoundGPUs += scenario.GPURequest(p)
		}
		g := scenario.GangOf(p)
		if whole[g] || scenario.GPURequest(p) == 0 {
			continue
		}
		if shapes[g] == nil {
			shapes[g] = &shape{}
		}
		shapes[g].pods++
		shapes[g].gpus = max(shapes[g].gpus, scenario.GPURequest(p))
	}
	st.Waiting = len(shapes)
	byRack := map[string][]string{}
	for _, n := range nodes {
		if _, ok := free[n.Name]; ok {
			st.FreeGPUs += max(free[n.Name], 0)
			byRack[n.Labels[label]] = append(byRack[n.Labels[label]], n.Name)
		}
	}
	if st.Waiting == 0 {
		return st
	}
	for _, names := range byRack {
		for _, node := range names {
			usable := false
			for _, sh := range shapes {
				if free[node] < sh.gpus {
					continue
				}
				fit := 0
				for _, other := range names {
					if free[other] >= sh.gpus {
						fit++
					}
				}
				if fit >= sh.pods {
					usable = true
					break
				}
			}
			if !usable {
				st.StrandedGPUs += max(free[node], 0)
			}
		}
	}
	return st
}
