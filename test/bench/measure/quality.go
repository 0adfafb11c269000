package measure

import (
	corev1 "k8s.io/api/core/v1"
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
