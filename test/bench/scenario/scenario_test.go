package scenario_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kubeflowv1 "github.com/troupe-ml/troupe/apis/kubeflow/v1"
	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/integrations/schedulerplugins"
	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/integrations/volcano"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

func byName(t *testing.T, scale float64) map[string]scenario.Scenario {
	t.Helper()
	out := map[string]scenario.Scenario{}
	var names []string
	for _, s := range scenario.Catalog(scale, 5*time.Second) {
		out[s.Name] = s
		names = append(names, s.Name)
	}
	if !slices.Equal(names, scenario.Names) {
		t.Fatalf("catalog order %v, Names %v", names, scenario.Names)
	}
	return out
}

// The reference point is the design's: its node and gang counts are what
// the documented results mean.
func TestCatalogAtTheReferencePoint(t *testing.T) {
	tests := []struct {
		name                string
		nodes, gangs, pods  int
		hold                bool
		mustBindAll         bool
		scarceNodes, scarce int // S4: nodes of the selected model
	}{
		{name: "S1", nodes: 1000, gangs: 500, pods: 2000, mustBindAll: true},
		{name: "S2", nodes: 1000, gangs: 4, pods: 2004, mustBindAll: true},
		{name: "S3", nodes: 200, gangs: 399, pods: 1596, hold: true, mustBindAll: true},
		{name: "S4", nodes: 1000, gangs: 47, pods: 188, mustBindAll: true, scarceNodes: 20},
		{name: "S4x4", nodes: 4000, gangs: 47, pods: 188, mustBindAll: true, scarceNodes: 20},
		{name: "Q", nodes: 300, gangs: 100, pods: 500},
		{name: "S5", nodes: 1000, gangs: 500, pods: 2000, mustBindAll: true},
		{name: "T0", nodes: 612, gangs: 60, pods: 420, mustBindAll: true},
		{name: "T", nodes: 612, gangs: 60, pods: 420, mustBindAll: true},
		// TM's cluster; 5 gangs for every rack, 4.5 workers each on average.
		{name: "TS", nodes: 612, gangs: 320, pods: 1760, hold: true, mustBindAll: true},
		// Kubernetes' scheduler_perf gang test: 5000 nodes, 3000 gangs
		// of 3, and the same shape at 1000 nodes.
		{name: "S6", nodes: 1000, gangs: 600, pods: 1800, mustBindAll: true},
		{name: "S6x5", nodes: 5000, gangs: 3000, pods: 9000, mustBindAll: true},
		{name: "S7x5", nodes: 5000, gangs: 4000, pods: 12000, hold: true, mustBindAll: true},
	}
	all := byName(t, 1)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := all[tc.name]
			if s.Nodes() != tc.nodes || s.Gangs != tc.gangs || s.Pods() != tc.pods {
				t.Errorf("%d nodes, %d gangs, %d pods; want %d, %d, %d", s.Nodes(), s.Gangs, s.Pods(), tc.nodes, tc.gangs, tc.pods)
			}
			if (s.Hold > 0) != tc.hold || s.MustBindAll != tc.mustBindAll {
				t.Errorf("hold %v, must bind all %v", s.Hold, s.MustBindAll)
			}
			if got := len(s.NodeObjects()); got != tc.nodes {
				t.Errorf("%d node objects, want %d", got, tc.nodes)
			}
			if tc.scarceNodes > 0 {
				n := 0
				for _, node := range s.NodeObjects() {
					if node.Labels[scenario.ModelLabel] == "H100" {
						n++
					}
				}
				if n != tc.scarceNodes {
					t.Errorf("%d H100 nodes, want %d", n, tc.scarceNodes)
				}
			}
		})
	}
	if got := float64(20) / float64(all["S4"].Nodes()); got != 0.02 {
		t.Errorf("S4's scarce share = %v, want the issue's 2%%", got)
	}
}

// gpuCapacity is the GPUs of the nodes a role's pods may use.
func gpuCapacity(s scenario.Scenario, r scenario.Role) int {
	total := 0
	for _, p := range s.Pools {
		if r.NodeSelector[scenario.ModelLabel] == "" || r.NodeSelector[scenario.ModelLabel] == p.Model {
			total += p.Count * (p.GPUs / max(r.GPUs, 1))
		}
	}
	return total
}

// What "fits", "three times what fits", "exactly fits" and "more than fit" claim, checked
// at both the reference point and the smoke test's scale.
func TestCatalogFits(t *testing.T) {
	for _, scale := range []float64{1, 0.02} {
		all := byName(t, scale)
		for _, name := range scenario.Names {
			s := all[name]
			workers := s.Roles[len(s.Roles)-1]
			slots := gpuCapacity(s, workers) // worker pods the GPU nodes hold at once
			need := s.Gangs * workers.Replicas
			switch name {
			case "S3":
				fit := slots / workers.Replicas
				if s.Gangs != 3*fit {
					t.Errorf("scale %v: S3 has %d gangs, %d fit at once: want three times", scale, s.Gangs, fit)
				}
			case "S7x5":
				if fit := slots / workers.Replicas; s.Gangs != 2*fit {
					t.Errorf("scale %v: S7x5 has %d gangs, %d fit at once: want twice", scale, s.Gangs, fit)
				}
			case "TM":
				need = 0
				for i := range s.Gangs {
					need += s.ReplicasOf(len(s.Roles)-1, i)
				}
				if free := slots - len(s.BackgroundPods()); need <= free {
					t.Errorf("scale %v: TM needs %d worker slots, %d are free of background load: want more than fit", scale, need, free)
				}
			case "TS":
				// Every gang fits a rack free of background load, alone;
				// together they offer a bit more than the free nodes hold.
				free := slots - len(s.BackgroundPods())
				if load := offeredNodes(s) / float64(free); load <= 1 || load > 1.2 {
					t.Errorf("scale %v: TS offers %.2f× its %d free GPU nodes, want a bit more than 1×", scale, load, free)
				}
				if largest := slices.Max(s.Sizes); largest > s.Pools[1].RackSize || s.BusyPerRack[0] != 0 {
					t.Errorf("scale %v: TS's largest gang has %d workers, racks hold %d, rack 0 has %d busy", scale, largest, s.Pools[1].RackSize, s.BusyPerRack[0])
				}
			case "Q":
				if need != slots {
					t.Errorf("scale %v: Q needs %d worker slots, the GPU nodes hold %d: want an exact fit", scale, need, slots)
				}
			default:
				if need > slots {
					t.Errorf("scale %v: %s needs %d worker slots, the GPU nodes hold %d", scale, name, need, slots)
				}
			}
			if s.Gangs < 1 || s.Nodes() < 2 {
				t.Errorf("scale %v: %s is empty: %s", scale, name, s.Describe())
			}
		}
	}
}

// offeredNodes is the GPU nodes a stream keeps busy on average (Little's
// law): its gangs' mean whole-node workers, each held Hold, arriving one
// every ArrivalEvery.
func offeredNodes(s scenario.Scenario) float64 {
	workers := 0
	for i := range s.Gangs {
		workers += s.ReplicasOf(len(s.Roles)-1, i)
	}
	return float64(workers) / float64(s.Gangs) * s.Hold.Seconds() / s.ArrivalEvery.Seconds()
}

// TS is TM's cluster and gangs, arriving over time instead of at once, and
// ending; TM is unchanged. At scale 1 the run takes at most about a minute
// and a half, at the smoke test's a few seconds.
func TestTSStreamsTMsGangs(t *testing.T) {
	tests := []struct {
		scale      float64
		gangs      int
		every      time.Duration
		hold       time.Duration
		longestRun time.Duration // the last arrival plus a hold
	}{
		{scale: 1, gangs: 320, every: 197 * time.Millisecond, hold: 20 * time.Second, longestRun: 90 * time.Second},
		{scale: 0.05, gangs: 15, every: 188 * time.Millisecond, hold: time.Second, longestRun: 10 * time.Second},
		// Every size at least once.
		{scale: 0.02, gangs: 8, every: 511 * time.Millisecond, hold: time.Second, longestRun: 10 * time.Second},
	}
	for _, tc := range tests {
		all := byName(t, tc.scale)
		ts, tm := all["TS"], all["TM"]
		if !reflect.DeepEqual(ts.Pools, tm.Pools) || !reflect.DeepEqual(ts.Roles, tm.Roles) || !slices.Equal(ts.Sizes, tm.Sizes) ||
			!slices.Equal(ts.BusyPerRack, tm.BusyPerRack) || !reflect.DeepEqual(ts.Topology, tm.Topology) ||
			!slices.Equal(ts.TopologyRoles, tm.TopologyRoles) || !slices.Equal(ts.Placers, tm.Placers) || ts.Kind != tm.Kind {
			t.Errorf("scale %v: TS is not TM's cluster and gangs:\nTS %s\nTM %s", tc.scale, ts.Describe(), tm.Describe())
		}
		if tm.Streamed() || tm.Hold != 0 || tm.MustBindAll {
			t.Errorf("scale %v: TM changed: streamed %v, hold %v, must bind all %v", tc.scale, tm.Streamed(), tm.Hold, tm.MustBindAll)
		}
		if !ts.Streamed() || ts.Gangs != tc.gangs || ts.ArrivalEvery != tc.every || ts.Hold != tc.hold || ts.FirstArrival != time.Second {
			t.Errorf("scale %v: TS streamed %v, %d gangs, one every %v from %v, hold %v; want %d every %v from 1s, hold %v",
				tc.scale, ts.Streamed(), ts.Gangs, ts.ArrivalEvery, ts.FirstArrival, ts.Hold, tc.gangs, tc.every, tc.hold)
		}
		if run := ts.ArrivalAt(ts.Gangs-1) + ts.Hold; run > tc.longestRun {
			t.Errorf("scale %v: the last gang arrives at %v and ends %v later: longer than %v", tc.scale, ts.ArrivalAt(ts.Gangs-1), ts.Hold, tc.longestRun)
		}
		// Gang i is TM's gang i: the same workers, the same rack rule.
		for i := range ts.Gangs {
			g, m := ts.Gang(i, "bench", troupe.Backend{}), tm.Gang(i, "bench", troupe.Backend{})
			if len(g.Pods) != len(m.Pods) || !reflect.DeepEqual(g.Spec.Topology, m.Spec.Topology) || g.Spec.Topology == nil {
				t.Errorf("scale %v: TS's gang %d has %d pods and topology %+v; TM's %d and %+v", tc.scale, i, len(g.Pods), g.Spec.Topology, len(m.Pods), m.Spec.Topology)
			}
		}
		if !strings.Contains(ts.Describe(), fmt.Sprintf("one every %v from 1s after the placer starts; each gang deleted %v after it is bound", tc.every, tc.hold)) {
			t.Errorf("scale %v: Describe() = %q", tc.scale, ts.Describe())
		}
	}
}

// A stream's gangs arrive one every ArrivalEvery from FirstArrival; sizes
// are the same whether the gangs arrive or exist at once.
func TestArrivalAt(t *testing.T) {
	s := scenario.Scenario{Name: "X", FirstArrival: time.Second, ArrivalEvery: 200 * time.Millisecond, Gangs: 3, Sizes: []int{1, 3},
		Roles: []scenario.Role{{Replicas: 1}, {Replicas: 9}}}
	for _, tc := range []struct {
		gang int
		want time.Duration
	}{{0, time.Second}, {1, 1200 * time.Millisecond}, {2, 1400 * time.Millisecond}, {10, 3 * time.Second}} {
		if got := s.ArrivalAt(tc.gang); got != tc.want {
			t.Errorf("ArrivalAt(%d) = %v, want %v", tc.gang, got, tc.want)
		}
	}
	if want := map[string]int{"x-0000": 2, "x-0001": 4, "x-0002": 2}; !maps.Equal(s.GangSizes(), want) {
		t.Errorf("GangSizes() = %v, want %v", s.GangSizes(), want)
	}
	if !s.Streamed() || (scenario.Scenario{}).Streamed() {
		t.Error("Streamed: a stream is one with an interval")
	}
}

func TestNodeObjects(t *testing.T) {
	s := byName(t, 0.02)["S4"]
	for _, n := range s.NodeObjects() {
		gpus := n.Status.Allocatable[scenario.GPU]
		switch n.Labels[scenario.PoolLabel] {
		case scenario.PoolCPU:
			if gpus.Value() != 0 || len(n.Spec.Taints) != 0 {
				t.Errorf("CPU node %s: %d GPUs, taints %v", n.Name, gpus.Value(), n.Spec.Taints)
			}
		case scenario.PoolGPU:
			if gpus.Value() != 8 || len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != scenario.GPUTaint || n.Labels[scenario.ModelLabel] == "" {
				t.Errorf("GPU node %s: %d GPUs, taints %v, labels %v", n.Name, gpus.Value(), n.Spec.Taints, n.Labels)
			}
		default:
			t.Errorf("node %s has no pool: %v", n.Name, n.Labels)
		}
		if n.Labels[corev1.LabelHostname] != n.Name || n.Status.Capacity.Cpu().IsZero() {
			t.Errorf("node %s: labels %v, capacity %v", n.Name, n.Labels, n.Status.Capacity)
		}
	}
}

// Every scheduler gets the same gang in its own dialect, as the
// operator's backend for it writes it.
func TestGangDialects(t *testing.T) {
	s := byName(t, 1)["S1"]
	tests := []struct {
		dialect   integrations.Backend
		scheduler string
		check     func(t *testing.T, pod *corev1.Pod)
	}{{
		dialect:   troupe.Backend{},
		scheduler: "troupe-scheduler",
		check: func(t *testing.T, pod *corev1.Pod) {
			if pod.Annotations[schedulingv1alpha1.PodGroupNameAnnotation] != "s1-0007" {
				t.Errorf("group annotation: %v", pod.Annotations)
			}
		},
	}, {
		dialect:   volcano.Backend{},
		scheduler: "volcano",
		check: func(t *testing.T, pod *corev1.Pod) {
			if pod.Annotations["scheduling.k8s.io/group-name"] != "s1-0007" {
				t.Errorf("group annotation: %v", pod.Annotations)
			}
		},
	}, {
		dialect:   schedulerplugins.Backend{Scheduler: "sp"},
		scheduler: "sp",
		check: func(t *testing.T, pod *corev1.Pod) {
			if pod.Labels["scheduling.x-k8s.io/pod-group"] != "s1-0007" {
				t.Errorf("group label: %v", pod.Labels)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.scheduler, func(t *testing.T) {
			g := s.Gang(7, "bench", tc.dialect)
			if g.Name != "s1-0007" || len(g.Pods) != 4 || g.Owner.Namespace != "bench" || g.Ref.Kind != kubeflowv1.PyTorchJobKind || !*g.Ref.Controller {
				t.Fatalf("gang %s: %d pods, owner %+v, ref %+v", g.Name, len(g.Pods), g.Owner, g.Ref)
			}
			for i, pod := range g.Pods {
				if pod.Spec.SchedulerName != tc.scheduler {
					t.Errorf("%s: scheduler %q", pod.Name, pod.Spec.SchedulerName)
				}
				if pod.Annotations[integrations.TaskSpecAnnotation] != strings.ToLower(pod.Labels[kubeflowv1.ReplicaTypeLabel]) {
					t.Errorf("%s: task-spec %v, labels %v", pod.Name, pod.Annotations, pod.Labels)
				}
				if scenario.GangOf(pod) != g.Name || scenario.IsMaster(pod) != (i == 0) {
					t.Errorf("%s: gang %q, master %v", pod.Name, scenario.GangOf(pod), scenario.IsMaster(pod))
				}
				tc.check(t, pod)
			}
			master, worker := g.Pods[0], g.Pods[1]
			if master.Name != "s1-0007-master-0" || worker.Name != "s1-0007-worker-0" {
				t.Errorf("names %s, %s", master.Name, worker.Name)
			}
			if master.Spec.NodeSelector[scenario.PoolLabel] != scenario.PoolCPU || len(master.Spec.Tolerations) != 0 || scenario.GPURequest(master) != 0 {
				t.Errorf("master: selector %v, tolerations %v", master.Spec.NodeSelector, master.Spec.Tolerations)
			}
			if scenario.GPURequest(worker) != 2 || len(worker.Spec.Tolerations) != 1 {
				t.Errorf("worker: %d GPUs, tolerations %v", scenario.GPURequest(worker), worker.Spec.Tolerations)
			}
			// The PodGroup's content is what ComputeGangSpec gives the
			// operator: the whole gang, per role, and its resources.
			wantCPU := resource.MustParse("13") // 1 + 3×4
			if g.Spec.MinMember != 4 || g.Spec.MinTaskMember["master"] != 1 || g.Spec.MinTaskMember["worker"] != 3 ||
				g.Spec.MinResources.Cpu().Cmp(wantCPU) != 0 || g.Spec.MinResources.Name(scenario.GPU, resource.DecimalSI).Value() != 6 {
				t.Errorf("gang spec %+v", g.Spec)
			}
		})
	}
}

// S5 is S1 with its workers' rules toward the gang's own workers, and its
// GPU nodes spread over 8 zones.
func TestS5CarriesPlacementRules(t *testing.T) {
	s := byName(t, 1)["S5"]
	zones := map[string]int{}
	for _, n := range s.NodeObjects() {
		if n.Labels[scenario.PoolLabel] == scenario.PoolGPU {
			zones[n.Labels[corev1.LabelTopologyZone]]++
		}
	}
	if len(zones) != 8 || zones["zone-0"] != 100 {
		t.Errorf("GPU nodes per zone %v, want 8 zones of 100", zones)
	}
	g := s.Gang(3, "bench", troupe.Backend{})
	master, worker := g.Pods[0], g.Pods[1]
	if master.Spec.Affinity != nil || len(master.Spec.TopologySpreadConstraints) != 0 {
		t.Errorf("the master carries rules: %+v %+v", master.Spec.Affinity, master.Spec.TopologySpreadConstraints)
	}
	want := map[string]string{kubeflowv1.JobNameLabel: g.Name, kubeflowv1.ReplicaTypeLabel: "worker"}
	anti := worker.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].TopologyKey != corev1.LabelHostname || !maps.Equal(anti[0].LabelSelector.MatchLabels, want) {
		t.Errorf("worker anti-affinity %+v, want one per node among %v", anti, want)
	}
	spread := worker.Spec.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != corev1.LabelTopologyZone || spread[0].MaxSkew != 1 ||
		spread[0].WhenUnsatisfiable != corev1.DoNotSchedule || !maps.Equal(spread[0].LabelSelector.MatchLabels, want) {
		t.Errorf("worker spread %+v", spread)
	}
	if s1 := byName(t, 1)["S1"].Gang(3, "bench", troupe.Backend{}); s1.Pods[1].Spec.Affinity != nil {
		t.Errorf("S1's workers carry rules: S5 changed S1")
	}
}

func TestDescribe(t *testing.T) {
	got := byName(t, 1)["S4"].Describe()
	for _, want := range []string{"1000 nodes", "20×h100 (32 CPU, 8 GPU)", "47 gangs", "nvidia.com/gpu.product=H100", "188 pods"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe() = %q, missing %q", got, want)
		}
	}
	if got := byName(t, 1)["S3"].Describe(); !strings.Contains(got, "deleted 5s after it is bound") {
		t.Errorf("S3 does not say its gangs end: %q", got)
	}
}

// S4x4 adds only nodes no pod of it may use: its CPU and H100 pools, and
// its gangs, are S4's.
func TestS4x4AddsOnlyUnselectedNodes(t *testing.T) {
	for _, scale := range []float64{1, 0.02} {
		all := byName(t, scale)
		s4, x4 := all["S4"], all["S4x4"]
		if x4.Nodes() != 4*s4.Nodes() || x4.Gangs != s4.Gangs || x4.Pods() != s4.Pods() {
			t.Errorf("scale %v: S4 %s; S4x4 %s", scale, s4.Describe(), x4.Describe())
		}
		for i, p := range s4.Pools {
			if p.Model != "A100" && x4.Pools[i] != p {
				t.Errorf("scale %v: pool %s differs: %+v vs %+v", scale, p.Name, p, x4.Pools[i])
			}
		}
	}
}

// T's GPU nodes are racks of 8 in blocks of 4 racks; its gangs carry a
// required rack Pack for their workers, as the operator writes it on the
// PodGroup; T0 is the same without the rule; T runs with the placers that
// keep the rule and the null binder as the reference.
func TestTCarriesARackRule(t *testing.T) {
	all := byName(t, 1)
	racks := map[string]int{}
	blocks := map[string]map[string]bool{}
	for _, n := range all["T"].NodeObjects() {
		if n.Labels[scenario.PoolLabel] != scenario.PoolGPU {
			continue
		}
		rack, block := n.Labels[scenario.RackLabel], n.Labels[scenario.BlockLabel]
		racks[rack]++
		if blocks[block] == nil {
			blocks[block] = map[string]bool{}
		}
		blocks[block][rack] = true
	}
	if len(racks) != 64 || racks["rack-0"] != 8 || len(blocks) != 16 || len(blocks["block-0"]) != 4 {
		t.Errorf("%d racks (rack-0 has %d nodes), %d blocks (block-0 has %d racks); want 64 racks of 8, 16 blocks of 4",
			len(racks), racks["rack-0"], len(blocks), len(blocks["block-0"]))
	}
	g := all["T"].Gang(0, "bench", troupe.Backend{})
	topo := g.Spec.Topology
	if topo == nil || len(topo.Levels) != 1 || topo.Levels[0].Level != "rack" || !topo.Levels[0].Required ||
		topo.Levels[0].Policy != schedulingv1alpha1.TopologyPack || len(topo.Roles) != 1 || topo.Roles[0] != "worker" {
		t.Errorf("T's gang topology %+v, want a required rack Pack of the workers", topo)
	}
	if all["T0"].Gang(0, "bench", troupe.Backend{}).Spec.Topology != nil {
		t.Error("T0's gangs carry a topology rule")
	}
	if !all["T"].RunsWith("troupe") || !all["T"].RunsWith("volcano") || !all["T"].RunsWith("null") || all["T"].RunsWith("coscheduling") || !all["T0"].RunsWith("coscheduling") {
		t.Errorf("T runs with %v; want troupe, volcano and the null binder, not coscheduling; T0 with every placer", all["T"].Placers)
	}
	var levels []string
	for _, l := range scenario.TopologyObject().Spec.Levels {
		levels = append(levels, l.Name+"="+l.NodeLabel)
	}
	if strings.Join(levels, ",") != "block="+scenario.BlockLabel+",rack="+scenario.RackLabel+",host="+corev1.LabelHostname {
		t.Errorf("Topology levels %v", levels)
	}
}
