// Package nodeorder scores nodes so that GPUs stay usable for GPU work:
//
//   - a task that requests no GPU is kept off nodes that have GPUs while a
//     node without GPUs fits it (a CPU pod on a GPU node can strand the
//     node's GPUs); it still lands on a GPU node when nothing else fits;
//   - a GPU task is bin-packed: the node with the fewest idle GPUs left
//     after placing it wins, which keeps whole GPU nodes free for big tasks;
//   - ties fall to a least-requested/balanced score on CPU and memory, and
//     the session breaks remaining ties by node name.
//
// Scores are integers in separate bands (penalty >> GPU bin-pack >>
// tiebreak), so a lower band can never outweigh a higher one, and computing
// one is a few map lookups with no allocation.
package nodeorder

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

// Name is the plugin's name.
const Name = "nodeorder"

// DefaultGPUResources are the resources that make a node a GPU node and a
// task a GPU task when Config names none.
var DefaultGPUResources = []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu"}

// Score bands. Tiebreak is at most 200, so one GPU of bin-packing (1000)
// outweighs any tiebreak, and the GPU-node penalty outweighs bin-packing on
// any node with fewer than 2^40/1000 GPUs.
const (
	GPUNodePenalty int64 = 1 << 40
	BinPackWeight  int64 = 1000
	MaxTiebreak    int64 = 200
)

// Config configures the plugin.
type Config struct {
	// GPUResources are the resources that count as GPUs; nil means
	// DefaultGPUResources.
	GPUResources []corev1.ResourceName
}

type plugin struct {
	gpus []corev1.ResourceName
}

// scorer is the plugin's state for one session, so one plugin value can
// serve sessions one after another (or at once).
type scorer struct {
	gpus []corev1.ResourceName
	// gpuNode[i] says whether NodeList[i] has allocatable GPUs: gpuUnknown
	// until a CPU task is first scored on it. It is fixed for the session,
	// so computed once, and only for the nodes scored: a session's start
	// costs nothing per node.
	gpuNode []gpuState
}

type gpuState uint8

const (
	gpuUnknown gpuState = iota
	gpuNone
	gpuSome
)

// New returns the nodeorder plugin.
func New(cfg Config) framework.Plugin {
	gpus := cfg.GPUResources
	if gpus == nil {
		gpus = DefaultGPUResources
	}
	return &plugin{gpus: gpus}
}

func (p *plugin) Name() string { return Name }

// OnSessionOpen registers the GPU-aware node order, and the preferences
// of kube-scheduler's NodeAffinity and TaintToleration score plugins, with
// their weights in its default profile: a pod's preferred node affinity
// terms, and its nodes' PreferNoSchedule taints it does not tolerate.
// Preferences outweigh the GPU bin-packing but not the GPU-node penalty
// (see framework.PreferenceUnit).
func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	s := &scorer{gpus: p.gpus, gpuNode: make([]gpuState, len(ssn.NodeList))}
	ssn.AddNodeOrderFn(s.score)
	ssn.Honour(Name, api.FeaturePreferredNodeAffinity)
	ssn.AddPreference(framework.Preference{
		Name:   "NodeAffinity",
		Weight: 2,
		Applies: func(t *api.TaskInfo) bool {
			return t.Rules != nil && t.Rules.PreferredNodeAffinity != nil
		},
		Score:     func(t *api.TaskInfo, n *api.NodeInfo) int64 { return t.Rules.PreferredNodeAffinity.Score(n.Node) },
		Normalize: framework.NormalizeToMax(false),
	})
	if ssn.PreferNoScheduleTaints() {
		logger := klog.Background()
		ssn.AddPreference(framework.Preference{
			Name:   "TaintToleration",
			Weight: 3,
			Score: func(t *api.TaskInfo, n *api.NodeInfo) int64 {
				var intolerable int64
				for i := range n.Node.Spec.Taints {
					taint := &n.Node.Spec.Taints[i]
					if taint.Effect == corev1.TaintEffectPreferNoSchedule &&
						!corev1helpers.TolerationsTolerateTaint(logger, preferNoScheduleTolerations(t.Pod), taint, false) {
						intolerable++
					}
				}
				return intolerable
			},
			Normalize: framework.NormalizeToMax(true),
		})
	}
}

// preferNoScheduleTolerations are the pod's tolerations that can tolerate
// a PreferNoSchedule taint: those with that effect or none, as
// kube-scheduler's TaintToleration score filters them.
func preferNoScheduleTolerations(pod *corev1.Pod) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			out = append(out, t)
		}
	}
	return out
}

// score scores node for task (see the package comment).
func (s *scorer) score(task *api.TaskInfo, node *api.NodeInfo) int64 {
	score := Tiebreak(task, node)
	gpuTask := false
	var idleAfter int64
	for _, r := range task.ScalarRequests {
		if s.isGPU(r.Name) {
			gpuTask = true
			idleAfter += node.Idle.Scalar(r.Name) - r.Value
		}
	}
	if gpuTask {
		return score - idleAfter*BinPackWeight
	}
	if !s.hasGPUs(node) {
		return score
	}
	// A CPU task that must go on a GPU node prefers the one with the fewest
	// idle GPUs: that node's GPUs are the least likely to be wanted whole.
	var idle int64
	for _, g := range s.gpus {
		idle += max(node.Idle.Scalar(g), 0)
	}
	return score - GPUNodePenalty - idle*BinPackWeight
}

// hasGPUs reports whether node has allocatable GPUs.
func (s *scorer) hasGPUs(node *api.NodeInfo) bool {
	if node.Index < 0 || node.Index >= len(s.gpuNode) {
		return s.countsGPUs(&node.Allocatable) // an Index the session has not: nothing to cache it by
	}
	if s.gpuNode[node.Index] == gpuUnknown {
		s.gpuNode[node.Index] = gpuNone
		if s.countsGPUs(&node.Allocatable) {
			s.gpuNode[node.Index] = gpuSome
		}
	}
	return s.gpuNode[node.Index] == gpuSome
}

func (s *scorer) countsGPUs(alloc *api.Resource) bool {
	for _, g := range s.gpus {
		if alloc.Scalar(g) > 0 {
			return true
		}
	}
	return false
}

func (s *scorer) isGPU(name corev1.ResourceName) bool {
	for _, g := range s.gpus {
		if g == name {
			return true
		}
	}
	return false
}

// Tiebreak is in [0, 200]: the mean share of CPU and memory left free after
// placing task (least requested, in percent) plus how balanced the two are
// (100 minus their difference). It spreads CPU work and avoids leaving a
// node with CPU but no memory, or the reverse.
func Tiebreak(task *api.TaskInfo, node *api.NodeInfo) int64 {
	cpu := freePercent(node.Idle.MilliCPU-task.Resreq.MilliCPU, node.Allocatable.MilliCPU)
	mem := freePercent(node.Idle.Memory-task.Resreq.Memory, node.Allocatable.Memory)
	diff := cpu - mem
	if diff < 0 {
		diff = -diff
	}
	return (cpu+mem)/2 + (100 - diff)
}

func freePercent(free, total int64) int64 {
	if total <= 0 || free <= 0 {
		return 0
	}
	return min(free*100/total, 100)
}
