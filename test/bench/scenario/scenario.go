// Package scenario defines the benchmark's workloads: the nodes of a
// cluster and the gangs every scheduler gets to place, as plain values. A
// scenario is sized at the design's reference point (1000 nodes, 500 gangs
// of 4 pods) and scaled down by one factor for quick runs.
package scenario

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// Labels and taints of the simulated cluster, as internal/demo's nodes.
const (
	// PoolLabel names a node's pool: PoolCPU or PoolGPU.
	PoolLabel = "node-pool"
	PoolCPU   = "cpu"
	PoolGPU   = "gpu"
	// ModelLabel is the GPU model of a GPU node (S4 selects a scarce one).
	ModelLabel = "nvidia.com/gpu.product"
	// GPU is the GPU resource; pods ask for it as a limit, as users do.
	GPU corev1.ResourceName = "nvidia.com/gpu"
	// RackLabel and BlockLabel place a node on the network tree (T).
	RackLabel  = "topology.example.com/rack"
	BlockLabel = "topology.example.com/block"
)

// GPUTaint keeps pods that do not tolerate it off the GPU nodes.
var GPUTaint = corev1.Taint{Key: string(GPU), Value: "present", Effect: corev1.TaintEffectNoSchedule}

// NodePool is a set of identical nodes.
type NodePool struct {
	// Name prefixes the nodes' names: <name>-<index>.
	Name   string
	Count  int
	CPU    string
	Memory string
	GPUs   int
	// Model is the GPU model label value; empty on CPU nodes.
	Model string
	// Zones, if set, spreads the pool's nodes over that many zones
	// (topology.kubernetes.io/zone zone-0, zone-1, ..., round robin).
	Zones int
	// RackSize, if set, puts the pool's nodes in racks of that many, in
	// order, and the racks in blocks of RacksPerBlock (labels RackLabel
	// and BlockLabel: rack-0, rack-1, ...; block-0, ...).
	RackSize, RacksPerBlock int
}

// Role is one replica type of the gangs.
type Role struct {
	// Type is the replica type ("Master", "Worker", "Launcher").
	Type     kubeflowv1.ReplicaType
	Replicas int
	CPU      string
	Memory   string
	GPUs     int
	// NodeSelector is the role's template nodeSelector.
	NodeSelector map[string]string
	// TolerateGPU adds a toleration of GPUTaint.
	TolerateGPU bool
	// OnePerNode gives the role's pods required pod anti-affinity toward
	// the role's other pods of their gang, by hostname: one per node.
	OnePerNode bool
	// SpreadZones gives them a DoNotSchedule topology spread constraint
	// over zones, maxSkew 1, among the role's pods of their gang.
	SpreadZones bool
}

// Scenario is one workload: a cluster and the gangs to place on it.
type Scenario struct {
	// Name is short ("S1"); Title says what it stands for.
	Name  string
	Title string
	Pools []NodePool
	// Gangs is how many gangs of Roles there are: identical, unless
	// Sizes is set.
	Gangs int
	// Sizes, if set, makes gangs of several shapes: gang i's last role
	// has Sizes[i%len(Sizes)] replicas instead of its Replicas.
	Sizes []int
	// BusyPerRack is background load: in rack r of a racked pool, the
	// first BusyPerRack[r%len(BusyPerRack)] nodes are taken whole by pods
	// outside the gangs (BackgroundPods), bound before the placer starts.
	BusyPerRack []int
	// Kind is the job kind the gangs are shaped after (PyTorchJob,
	// MPIJob): their pods' labels and owner.
	Kind  string
	Roles []Role
	// Hold, when set, is how long a gang runs: the harness deletes its
	// pods and PodGroup that long after its last pod is bound, so that a
	// backlog drains (S3).
	Hold time.Duration
	// ArrivalEvery, when set, streams the gangs (TS): none exists when
	// the placer starts; the harness creates gang i during the run, at
	// ArrivalAt(i) after the clock's start.
	ArrivalEvery time.Duration
	// FirstArrival is when a stream's first gang arrives, after the
	// clock's start: the placers' start-up is nobody's wait.
	FirstArrival time.Duration
	// WarmRound asks for a second round on the same cluster, for placers
	// that count their own work (Troupe): once the run is measured, the
	// harness deletes the gangs, creates as many new ones and reads the
	// placer's counters over their placing. The first round's cost
	// includes reading a cluster the placer has never seen, once per
	// node; the warm round's is what a pod costs a scheduler that has
	// been running (S4).
	WarmRound bool
	// MustBindAll says that every gang fits, so a run that leaves one
	// unbound failed. The quality check (Q) can strand gangs by bad
	// placement; its unbound gangs are a result, not a harness failure.
	MustBindAll bool
	// Topology, if set, is the gangs' topology policy (the PodGroup's
	// spec.topology, as the operator writes it from a job's
	// gangPolicy.topology) over the Topology TopologyObject returns, for
	// the roles TopologyRoles names.
	Topology      *schedulingv1alpha1.TopologyPolicy
	TopologyRoles []string
	// Placers, if set, are the only placers that run the scenario: those
	// that keep its rules, and the null binder as a reference that keeps
	// none.
	Placers []string
}

// TopologyObject is the Topology a scenario's topology policy names: the
// blocks, racks and hosts of the nodes' labels.
func TopologyObject() *schedulingv1alpha1.Topology {
	return &schedulingv1alpha1.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: schedulingv1alpha1.TopologySpec{Levels: []schedulingv1alpha1.TopologyLevel{
			{Name: "block", NodeLabel: BlockLabel},
			{Name: "rack", NodeLabel: RackLabel},
			{Name: "host", NodeLabel: corev1.LabelHostname},
		}},
	}
}

// Racked says whether the scenario's nodes are in racks.
func (s Scenario) Racked() bool {
	return slices.ContainsFunc(s.Pools, func(p NodePool) bool { return p.RackSize > 0 })
}

// RunsWith says whether placer runs the scenario.
func (s Scenario) RunsWith(placer string) bool {
	return len(s.Placers) == 0 || slices.Contains(s.Placers, placer)
}

// Streamed says whether the scenario's gangs arrive during the run.
func (s Scenario) Streamed() bool { return s.ArrivalEvery > 0 }

// ArrivalAt is when gang i of a stream arrives, from the clock's start:
// the first at FirstArrival, then one every ArrivalEvery.
func (s Scenario) ArrivalAt(i int) time.Duration {
	return s.FirstArrival + time.Duration(i)*s.ArrivalEvery
}

// GangSizes is each gang's pod count, by name.
func (s Scenario) GangSizes() map[string]int {
	out := make(map[string]int, s.Gangs)
	for i := range s.Gangs {
		out[s.GangName(i)] = s.PodsPerGang(i)
	}
	return out
}

// Nodes is the scenario's node count.
func (s Scenario) Nodes() int {
	n := 0
	for _, p := range s.Pools {
		n += p.Count
	}
	return n
}

// ReplicasOf is how many replicas role ri has in gang i.
func (s Scenario) ReplicasOf(ri, i int) int {
	if len(s.Sizes) > 0 && ri == len(s.Roles)-1 {
		return s.Sizes[i%len(s.Sizes)]
	}
	return s.Roles[ri].Replicas
}

// PodsPerGang is the size of gang i.
func (s Scenario) PodsPerGang(i int) int {
	n := 0
	for ri := range s.Roles {
		n += s.ReplicasOf(ri, i)
	}
	return n
}

// Pods is the scenario's pod count.
func (s Scenario) Pods() int {
	n := 0
	for i := range s.Gangs {
		n += s.PodsPerGang(i)
	}
	return n
}

// Describe says in one line what the cluster and the gangs are.
func (s Scenario) Describe() string {
	var pools []string
	for _, p := range s.Pools {
		d := fmt.Sprintf("%d×%s (%s CPU", p.Count, p.Name, p.CPU)
		if p.GPUs > 0 {
			d += fmt.Sprintf(", %d GPU", p.GPUs)
		}
		pools = append(pools, d+")")
	}
	var roles []string
	for ri, r := range s.Roles {
		n := fmt.Sprint(r.Replicas)
		if len(s.Sizes) > 0 && ri == len(s.Roles)-1 {
			n = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(s.Sizes)), ", "), "[]")
		}
		d := fmt.Sprintf("%s %s (%s CPU", n, strings.ToLower(string(r.Type)), r.CPU)
		if r.GPUs > 0 {
			d += fmt.Sprintf(", %d GPU", r.GPUs)
		}
		if len(r.NodeSelector) > 0 {
			var sel []string
			for _, k := range slices.Sorted(maps.Keys(r.NodeSelector)) {
				sel = append(sel, k+"="+r.NodeSelector[k])
			}
			d += ", " + strings.Join(sel, ",")
		}
		roles = append(roles, d+")")
	}
	d := fmt.Sprintf("%d nodes: %s; %d gangs of %s; %d pods", s.Nodes(), strings.Join(pools, " + "), s.Gangs, strings.Join(roles, " + "), s.Pods())
	if s.Streamed() {
		d += fmt.Sprintf("; the gangs arrive during the run, one every %v from %v after the placer starts", s.ArrivalEvery, s.FirstArrival)
	}
	if s.Hold > 0 {
		d += fmt.Sprintf("; each gang deleted %v after it is bound", s.Hold)
	}
	if n := len(s.BackgroundPods()); n > 0 {
		d += fmt.Sprintf("; %d GPU nodes taken whole by background pods", n)
	}
	return d
}

// scaled is n×scale rounded, at least least.
func scaled(n int, scale float64, least int) int {
	return max(int(math.Round(float64(n)*scale)), least)
}
