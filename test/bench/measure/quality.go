package measure

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Quality is how good the final placement is, from the state at the end.
type Quality struct {
	// Masters counts the gangs' first-role pods that are bound;
	// MastersOnCPU those of them on CPU-only nodes.
	Masters, MastersOnCPU int
	// GPUs is the cluster's GPU capacity; GPUsUsed what bound pods take.
	GPUs, GPUsUsed int64
	// PendingGPUPods are GPU pods left unbound. Stranded counts, while
	// there are some, the free GPUs on nodes where none of them fits any
	// more (another resource of the node is used up): GPUs the placement
	// lost. Free GPUs a pending pod would still fit on are not stranded,
	// only not used yet.
	PendingGPUPods int
	Stranded       int64
	// RuleBreaches counts the gangs whose bound pods break a rule they
	// carry (S5's): two pods on one node whose required anti-affinity by
	// hostname selects each other, or pods of a DoNotSchedule spread
	// constraint over zones more than maxSkew apart (counted over every
	// zone the nodes have).
	RuleBreaches int
	// Racks is the gangs' use of racks, in scenarios whose nodes are in
	// racks (RacksOf).
	Racks Racks
	// Stranding is the GPUs left free at the end, and how many of them
	// no waiting gang can use, in the same scenarios.
	Stranding Stranding
}

// Occupancy is the share of the GPUs in use.
func (q Quality) Occupancy() float64 {
	if q.GPUs == 0 {
		return 0
	}
	return float64(q.GPUsUsed) / float64(q.GPUs)
}

// request is what a pod takes of a node, as the benchmark's pods ask.
type request struct{ milliCPU, memory, gpus int64 }

func requestOf(p *corev1.Pod) request {
	var r request
	for _, c := range p.Spec.Containers {
		r.milliCPU += c.Resources.Requests.Cpu().MilliValue()
		r.memory += c.Resources.Requests.Memory().Value()
	}
	r.gpus = scenario.GPURequest(p)
	return r
}

// Assess computes the quality of the placement of pods on nodes.
func Assess(nodes []*corev1.Node, pods []*corev1.Pod) Quality {
	var q Quality
	free := map[string]request{}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
		a := n.Status.Allocatable
		g := a[scenario.GPU]
		free[n.Name] = request{milliCPU: a.Cpu().MilliValue(), memory: a.Memory().Value(), gpus: g.Value()}
		q.GPUs += g.Value()
	}
	var pending []*corev1.Pod
	for _, p := range pods {
		r := requestOf(p)
		if p.Spec.NodeName == "" {
			if r.gpus > 0 {
				pending = append(pending, p)
			}
			continue
		}
		f := free[p.Spec.NodeName]
		free[p.Spec.NodeName] = request{f.milliCPU - r.milliCPU, f.memory - r.memory, f.gpus - r.gpus}
		q.GPUsUsed += r.gpus
		if scenario.IsMaster(p) {
			q.Masters++
			if n := byName[p.Spec.NodeName]; n != nil && n.Labels[scenario.PoolLabel] == scenario.PoolCPU {
				q.MastersOnCPU++
			}
		}
	}
	q.RuleBreaches = ruleBreaches(nodes, pods)
	q.PendingGPUPods = len(pending)
	if len(pending) == 0 {
		return q
	}
	for name, f := range free {
		if f.gpus > 0 && !anyFits(pending, byName[name], f) {
			q.Stranded += f.gpus
		}
	}
	return q
}

// anyFits says whether one of pods would fit on node with free left: its
// selector matches and every resource it asks is free.
func anyFits(pods []*corev1.Pod, node *corev1.Node, free request) bool {
	for _, p := range pods {
		r := requestOf(p)
		if labels.SelectorFromSet(p.Spec.NodeSelector).Matches(labels.Set(node.Labels)) &&
			r.milliCPU <= free.milliCPU && r.memory <= free.memory && r.gpus <= free.gpus {
			return true
		}
	}
	return false
}

// ruleBreaches counts the gangs that break S5's rules (see Quality). It
// judges the placement from the pods' own rules, so a placer that ignores
// them shows.
func ruleBreaches(nodes []*corev1.Node, pods []*corev1.Pod) int {
	zones := map[string]bool{}
	zoneOf := map[string]string{}
	for _, n := range nodes {
		if z, ok := n.Labels[corev1.LabelTopologyZone]; ok {
			zones[z] = true
			zoneOf[n.Name] = z
		}
	}
	byGang := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			byGang[scenario.GangOf(p)] = append(byGang[scenario.GangOf(p)], p)
		}
	}
	breaches := 0
	for _, gang := range byGang {
		if gangBreaks(gang, zones, zoneOf) {
			breaches++
		}
	}
	return breaches
}

func gangBreaks(gang []*corev1.Pod, zones map[string]bool, zoneOf map[string]string) bool {
	for _, p := range gang {
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
				if err != nil || term.TopologyKey != corev1.LabelHostname {
					continue
				}
				for _, o := range gang {
					if o != p && o.Spec.NodeName == p.Spec.NodeName && sel.Matches(labels.Set(o.Labels)) {
						return true
					}
				}
			}
		}
		for _, c := range p.Spec.TopologySpreadConstraints {
			sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
			if err != nil || c.TopologyKey != corev1.LabelTopologyZone || c.WhenUnsatisfiable != corev1.DoNotSchedule {
				continue
			}
			count := map[string]int{}
			for z := range zones {
				count[z] = 0
			}
			for _, o := range gang {
				if z, ok := zoneOf[o.Spec.NodeName]; ok && sel.Matches(labels.Set(o.Labels)) {
					count[z]++
				}
			}
			lo, hi := len(gang), 0
			for _, n := range count {
				lo, hi = min(lo, n), max(hi, n)
			}
			if hi-lo > int(c.MaxSkew) {
				return true
			}
		}
	}
	return false
}
