package scenario

import (
	"fmt"
	"time"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
)

// The node shapes every scenario uses: internal/demo's, so that the
// benchmark's cluster looks like the one newcomers see.
func cpuPool(n int) NodePool {
	return NodePool{Name: "cpu", Count: n, CPU: "16", Memory: "64Gi"}
}

func gpuPool(name, model string, n int) NodePool {
	return NodePool{Name: name, Count: n, CPU: "32", Memory: "256Gi", GPUs: 8, Model: model}
}

var onCPUNodes = map[string]string{PoolLabel: PoolCPU}

// pytorchRoles is the design's gang: 1 CPU master on the CPU nodes and
// workers with gpus GPUs each (tolerating the GPU taint), whose extra
// nodeSelector, if any, is workerSelector.
func pytorchRoles(workers, gpus int, workerSelector map[string]string) []Role {
	return []Role{
		{Type: kubeflowv1.PyTorchJobReplicaTypeMaster, Replicas: 1, CPU: "1", Memory: "4Gi", NodeSelector: onCPUNodes},
		{Type: kubeflowv1.PyTorchJobReplicaTypeWorker, Replicas: workers, CPU: "4", Memory: "16Gi", GPUs: gpus, TolerateGPU: true, NodeSelector: workerSelector},
	}
}

// Names are the scenarios in the order they run.
var Names = []string{"S1", "S2", "S3", "S4", "S4x4", "Q", "S5", "T0", "T", "TM", "TS", "S6", "S6x5", "S7x5"}

// Catalog returns every scenario at scale (1 is the design's reference
// point: 1000 nodes, 500 gangs of 4 pods, client QPS 1000); hold is how
// long S3's and S7x5's gangs run (TS has its own).
func Catalog(scale float64, hold time.Duration) []Scenario {
	return []Scenario{s1(scale), s2(scale), s3(scale, hold), s4(scale, 1), s4(scale, 4), quality(scale), s5(scale), rackless(scale), racked(scale), mixedRacks(scale),
		topologyStream(scale), gangTest(scale, 1), gangTest(scale, 5), gangBacklog(scale, hold)}
}

// s1, many small gangs: the design's reference workload; everything fits.
func s1(scale float64) Scenario {
	return Scenario{
		Name: "S1", Title: "many small gangs",
		Pools: []NodePool{cpuPool(scaled(200, scale, 1)), gpuPool("gpu", "A100", scaled(800, scale, 1))},
		Gangs: scaled(500, scale, 1), Kind: kubeflowv1.PyTorchJobKind,
		Roles:       pytorchRoles(3, 2, nil),
		MustBindAll: true,
	}
}

// s2, few giant gangs: four MPIJob-shaped gangs of a CPU launcher and
// hundreds of workers, about S1's pod count; everything fits.
func s2(scale float64) Scenario {
	return Scenario{
		Name: "S2", Title: "few giant gangs",
		Pools: []NodePool{cpuPool(scaled(200, scale, 1)), gpuPool("gpu", "A100", scaled(800, scale, 1))},
		Gangs: 4, Kind: kubeflowv1.MPIJobKind,
		Roles: []Role{
			{Type: kubeflowv1.MPIJobReplicaTypeLauncher, Replicas: 1, CPU: "1", Memory: "4Gi", NodeSelector: onCPUNodes},
			{Type: kubeflowv1.MPIJobReplicaTypeWorker, Replicas: scaled(500, scale, 2), CPU: "4", Memory: "16Gi", GPUs: 2, TolerateGPU: true},
		},
		MustBindAll: true,
	}
}

// s3, oversubscribed backlog: S1's gangs, three times as many as the GPU
// nodes hold at once; each runs for hold, then the harness deletes it, so
// the backlog drains in waves.
func s3(scale float64, hold time.Duration) Scenario {
	gpuNodes := scaled(100, scale, 1)
	const workers, gpus = 3, 2
	fit := gpuNodes * (8 / gpus) / workers
	return Scenario{
		Name: "S3", Title: "oversubscribed backlog (3× what fits)",
		Pools: []NodePool{cpuPool(scaled(100, scale, 1)), gpuPool("gpu", "A100", gpuNodes)},
		Gangs: 3 * max(fit, 1), Kind: kubeflowv1.PyTorchJobKind,
		Roles:       pytorchRoles(workers, gpus, nil),
		Hold:        hold,
		MustBindAll: true,
	}
}

// s4, scarce fit: the workers select a GPU model that 2% of the reference
// cluster's nodes have. With nodeFactor 4 the cluster has four times as
// many nodes, all of them more GPU nodes of the common model: the nodes
// each pod may use are the same, so a scheduler whose per-pod cost grows
// with the node count shows it. The warm round measures that cost without
// the one-time reading of the cluster.
func s4(scale float64, nodeFactor int) Scenario {
	total := scaled(1000, scale, 5)
	scarce := scaled(20, scale, 1)
	cpu := scaled(200, scale, 1)
	const workers, gpus = 3, 1
	fit := scarce * (8 / gpus) / workers
	s := Scenario{
		Name: "S4", Title: "scarce fit (2% of the nodes have the GPU model)",
		Pools: []NodePool{
			cpuPool(cpu),
			gpuPool("gpu", "A100", total*nodeFactor-cpu-scarce),
			gpuPool("h100", "H100", scarce),
		},
		// Nine tenths of what fits: the last gangs still have a choice.
		Gangs: max(fit*9/10, 1), Kind: kubeflowv1.PyTorchJobKind,
		Roles:       pytorchRoles(workers, gpus, map[string]string{ModelLabel: "H100"}),
		MustBindAll: true,
		WarmRound:   true,
	}
	if nodeFactor > 1 {
		s.Name = "S4x4"
		s.Title = "scarce fit on 4× the nodes, the same ones selected"
	}
	return s
}

// quality, the mixed CPU/GPU check: masters tolerate the GPU taint and
// select no pool, so they may land on GPU nodes. The GPU nodes hold the
// workers exactly (4 workers of 8 CPU and 2 GPUs fill a node's 32 CPU and
// 8 GPUs), so every master placed on a GPU node strands two GPUs and
// leaves a gang unplaceable.
func quality(scale float64) Scenario {
	gpuNodes := scaled(100, scale, 1)
	return Scenario{
		Name: "Q", Title: "mixed CPU/GPU quality: masters may go anywhere",
		Pools: []NodePool{cpuPool(scaled(200, scale, 1)), gpuPool("gpu", "A100", gpuNodes)},
		Gangs: gpuNodes, Kind: kubeflowv1.PyTorchJobKind,
		Roles: []Role{
			{Type: kubeflowv1.PyTorchJobReplicaTypeMaster, Replicas: 1, CPU: "4", Memory: "16Gi", TolerateGPU: true},
			{Type: kubeflowv1.PyTorchJobReplicaTypeWorker, Replicas: 4, CPU: "8", Memory: "32Gi", GPUs: 2, TolerateGPU: true},
		},
	}
}

// s5, placement rules: S1 with its GPU nodes in 8 zones and workers that
// carry the rules a DDP job commonly does: one worker per node (required
// pod anti-affinity among the gang's workers, by hostname) and the
// workers spread over zones (a DoNotSchedule constraint, maxSkew 1).
// Everything fits. What S5 costs a scheduler beyond S1 is what those
// rules cost it.
func s5(scale float64) Scenario {
	s := s1(scale)
	s.Name, s.Title = "S5", "S1 with placement rules (one worker per node, workers spread over 8 zones)"
	s.Pools[1].Zones = 8
	s.Roles[1].OnePerNode, s.Roles[1].SpreadZones = true, true
	return s
}

// racked, topology: gangs of a CPU master and 6 workers of a whole GPU
// node each, whose workers must share a rack (a required Pack at the rack
// level, as examples/pytorchjob-topology.yaml asks of a block). Racks
// hold 8 GPU nodes, so a rack takes one such gang, with 2 nodes to spare;
// there are 15 gangs for every 16 racks, so everything fits only if no
// gang is split across racks, or takes a rack another one needed. What a
// placer blind to racks does with the same gangs shows next to Troupe:
// the null binder runs T as that reference. Volcano runs it with the
// HyperNodes the operator would generate from the same Topology and its
// network-topology-aware plugin, the rule written as the operator's
// Volcano backend writes it (a hard networkTopology on the workers'
// subgroup); coscheduling cannot express the rule and does not run T.
func racked(scale float64) Scenario {
	s := rackless(scale)
	s.Name, s.Title = "T", "topology: gangs of 6 GPU nodes, each in one rack (required)"
	s.Topology = &schedulingv1alpha1.TopologyPolicy{Levels: []schedulingv1alpha1.TopologyLevelPolicy{
		{Level: "rack", Policy: schedulingv1alpha1.TopologyPack, Required: true},
	}}
	s.TopologyRoles = []string{integrations.RoleOf(string(kubeflowv1.PyTorchJobReplicaTypeWorker))}
	s.Placers = []string{"null", "troupe", "volcano"}
	return s
}

// rackless, T's cluster and gangs without the rule: what the rule costs
// a placer is T's cost beside T0's.
func rackless(scale float64) Scenario {
	const rackSize, workers = 8, 6
	racks := max(scaled(64, scale, 1), 1)
	gpu := gpuPool("gpu", "A100", racks*rackSize)
	gpu.RackSize, gpu.RacksPerBlock = rackSize, 4
	return Scenario{
		Name: "T0", Title: "T's gangs of 6 GPU nodes, without a topology rule",
		Pools: []NodePool{cpuPool(scaled(100, scale, 1)), gpu},
		Gangs: max(racks*15/16, 1), Kind: kubeflowv1.PyTorchJobKind,
		Roles: []Role{
			{Type: kubeflowv1.PyTorchJobReplicaTypeMaster, Replicas: 1, CPU: "1", Memory: "4Gi", NodeSelector: onCPUNodes},
			{Type: kubeflowv1.PyTorchJobReplicaTypeWorker, Replicas: workers, CPU: "16", Memory: "64Gi", GPUs: 8, TolerateGPU: true},
		},
		MustBindAll: true,
	}
}

// mixedRacks, topology under pressure: T's racks with background load (in
// every four racks, 0, 1, 2 and 3 nodes are taken whole by pods outside
// the gangs) and gangs of a CPU master and 1 to 8 whole-node workers (8
// to 64 GPUs), in a fixed order of sizes, each required in one rack: two
// gangs for every rack (at least one of each size), more than the free
// nodes hold, so gangs wait at
// the end and what a placer's choices strand shows (GPUs free but in
// racks where no waiting gang fits). The gangs are created at once, not
// over time.
func mixedRacks(scale float64) Scenario {
	s := racked(scale)
	s.Name, s.Title = "TM", "topology: gangs of 1 to 8 GPU nodes over background load, each in one rack (required), more than fit"
	racks := s.Pools[1].Count / s.Pools[1].RackSize
	s.Sizes = []int{1, 2, 4, 8, 3, 6, 5, 7}
	// Every size at least once, at the smallest scales too.
	s.Gangs = max(2*racks, len(s.Sizes))
	s.BusyPerRack = []int{0, 1, 2, 3}
	s.MustBindAll = false
	return s
}

// The stream's settings (TS) at scale 1.
const (
	// streamGangsPerRack is how many gangs arrive for every rack.
	streamGangsPerRack = 5
	// streamHold is how long a gang runs once bound whole.
	streamHold = 20 * time.Second
	// streamLoad is the load the arrivals offer over the GPU nodes free of
	// background load.
	streamLoad = 1.1
	// streamLead is when the first gang arrives: after the placers'
	// start-up (listing the cluster), which is then nobody's wait.
	streamLead = time.Second
)

// topologyStream, topology under churn: TM's cluster (its racks, their
// background load, the CPU pool) and TM's gangs (a CPU master and 1 to 8
// whole-node workers, sizes in TM's order, the workers required in one
// rack), but the gangs arrive during the run, one every ArrivalEvery, and
// each is deleted Hold after it is bound whole (S3's deleter), so that
// the racks fill, empty and fragment as gangs come and go.
//
// The rate: a gang asks 4.5 whole nodes on average and holds them for
// Hold, so gangs arriving every I keep 4.5×Hold/I nodes busy (Little's
// law). I is chosen so that this is streamLoad (1.1) times the GPU nodes
// free of background load: a bit more than they hold, so that once they
// have filled gangs queue, and more so where a placer's choices leave the
// racks too fragmented for the gangs that wait. At scale 1: 320 gangs (5
// per rack) over 416 free nodes (64 racks of 8, less 96 busy), a 20 s
// hold, one gang every 197 ms (457 nodes offered): the free nodes fill
// after about 18 s, the last gang arrives at 64 s and the run ends when
// the queue has drained, within 1.5 minutes. Scale shrinks the racks and
// the gangs with them, and the hold (20 s × scale, at least 1 s); the
// interval follows from the same load, so the run's length follows the
// hold: at the smoke test's 0.02, 1 rack, 8 gangs, a 1 s hold and a gang
// every 511 ms, about 6 s.
func topologyStream(scale float64) Scenario {
	s := mixedRacks(scale)
	s.Name, s.Title = "TS", "topology stream: gangs of 1 to 8 GPU nodes arriving over background load and ending, each in one rack (required), a bit more than fit"
	racks := s.Pools[1].Count / s.Pools[1].RackSize
	s.Gangs = max(streamGangsPerRack*racks, len(s.Sizes))
	s.Hold = max(time.Duration(float64(streamHold)*scale).Round(time.Millisecond), time.Second)
	s.FirstArrival = streamLead
	s.ArrivalEvery = s.arrivalEvery(streamLoad)
	// Every gang fits an empty rack, and the stream ends: every gang is
	// bound in the end by a placer that keeps the rule.
	s.MustBindAll = true
	return s
}

// arrivalEvery is the interval at which s's gangs, each holding a whole
// GPU node per worker for s.Hold, offer load times the GPU nodes free of
// background load, to the millisecond.
func (s Scenario) arrivalEvery(load float64) time.Duration {
	workers, free := 0, -len(s.BackgroundPods())
	for i := range s.Gangs {
		workers += s.ReplicasOf(len(s.Roles)-1, i)
	}
	for _, p := range s.Pools {
		if p.GPUs > 0 {
			free += p.Count
		}
	}
	perGang := float64(workers) / float64(s.Gangs)
	return time.Duration(perGang * float64(s.Hold) / (load * float64(free))).Round(time.Millisecond)
}

// gangTest is in the shape of Kubernetes' own scheduler_perf gang test: a
// fifth of the nodes CPU-only, the rest with 8 GPUs, and 3 gangs for
// every 5 nodes of a CPU master and 2 GPU workers; everything fits. At
// nodeFactor 5 it is the 5000-node test (3000 gangs, 9000 pods); at 1 the
// same shape at 1000 nodes, so that what grows from one to the other
// (time, CPU per pod, memory) is the node and pod count alone.
func gangTest(scale float64, nodeFactor int) Scenario {
	s := Scenario{
		Name: "S6", Title: "scheduler_perf's gang shape at 1000 nodes",
		Pools: []NodePool{cpuPool(scaled(200*nodeFactor, scale, 1)), gpuPool("gpu", "A100", scaled(800*nodeFactor, scale, 1))},
		Gangs: scaled(600*nodeFactor, scale, 1), Kind: kubeflowv1.PyTorchJobKind,
		Roles:       pytorchRoles(2, 2, nil),
		MustBindAll: true,
	}
	if nodeFactor > 1 {
		s.Name, s.Title = fmt.Sprintf("S6x%d", nodeFactor), fmt.Sprintf("scheduler_perf's gang shape at %d nodes", 1000*nodeFactor)
	}
	return s
}

// gangBacklog is the 5000-node cluster of gangTest with twice the gangs
// that fit at once: each worker takes a whole GPU node, so the GPU nodes
// hold half the gangs, and each gang is deleted hold after it is bound,
// as in S3, so that the backlog drains in waves.
func gangBacklog(scale float64, hold time.Duration) Scenario {
	s := gangTest(scale, 5)
	const workers = 2
	fit := max(s.Pools[1].Count/workers, 1)
	s.Name, s.Title = "S7x5", "backlog at 5000 nodes (2× what fits), gangs finishing as in S3"
	s.Gangs = 2 * fit
	s.Roles[1].CPU, s.Roles[1].Memory, s.Roles[1].GPUs = "16", "64Gi", 8
	s.Hold = hold
	return s
}
