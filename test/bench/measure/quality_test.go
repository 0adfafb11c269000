package measure

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// S5's rules judged from the pods alone: one worker per node, workers
// spread over the zones with a skew of at most 1.
func TestRuleBreaches(t *testing.T) {
	var s5 scenario.Scenario
	for _, s := range scenario.Catalog(0.02, time.Second) {
		if s.Name == "S5" {
			s5 = s
		}
	}
	nodes := s5.NodeObjects() // 4 CPU nodes, 16 GPU nodes over 8 zones
	gpu := func(i int) string { return nodes[4+i].Name }
	tests := []struct {
		name string
		// workers[i] is the GPU node index of worker i ("-1": unbound).
		workers []int
		want    int
	}{
		{"one per node, three zones", []int{0, 1, 2}, 0},
		{"two workers on one node", []int{0, 0, 2}, 1},
		{"one per node, but two in zone-0 while five zones are empty", []int{0, 8, 1}, 1},
		{"an unbound worker counts for nothing", []int{0, 1, -1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := s5.Gang(0, "bench", troupe.Backend{})
			for i, n := range tt.workers {
				if n >= 0 {
					g.Pods[1+i].Spec.NodeName = gpu(n)
				}
			}
			g.Pods[0].Spec.NodeName = nodes[0].Name
			if got := Assess(nodes, g.Pods).RuleBreaches; got != tt.want {
				t.Errorf("RuleBreaches = %d, want %d", got, tt.want)
			}
		})
	}
	var plain []*corev1.Pod
	for _, p := range s5.Gang(1, "bench", troupe.Backend{}).Pods {
		p.Spec.Affinity, p.Spec.TopologySpreadConstraints = nil, nil
		p.Spec.NodeName = gpu(0)
		plain = append(plain, p)
	}
	if got := Assess(nodes, plain).RuleBreaches; got != 0 {
		t.Errorf("pods without rules breach %d, want 0", got)
	}
}

// T's racks judged from the nodes' labels: a gang's GPU pods in one rack,
// or split.
func TestRacksOf(t *testing.T) {
	tScenario := named(0.05, "T")
	nodes := tScenario.NodeObjects() // 5 CPU nodes, then 3 racks of 8 GPU nodes
	gpu := func(i int) string { return nodes[5+i].Name }
	tests := []struct {
		name string
		// workers[g][i] is the GPU node index of gang g's worker i.
		workers        [][]int
		wantGangs      int
		wantSplit      int
		wantRacksTotal int
	}{
		{"each gang in its rack", [][]int{{0, 1, 2, 3, 4, 5}, {8, 9, 10, 11, 12, 13}}, 2, 0, 2},
		{"a gang over two racks", [][]int{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}}, 2, 1, 3},
		{"a gang over three racks", [][]int{{0, 8, 16, 17, 18, 19}}, 1, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for gi, workers := range tt.workers {
				g := tScenario.Gang(gi, "bench", troupe.Backend{})
				g.Pods[0].Spec.NodeName = nodes[0].Name // the CPU master counts for no rack
				for i, n := range workers {
					g.Pods[1+i].Spec.NodeName = gpu(n)
				}
				pods = append(pods, g.Pods...)
			}
			got := RacksOf(nodes, pods, scenario.RackLabel)
			if got.Gangs != tt.wantGangs || got.Split != tt.wantSplit || got.RacksUsed != tt.wantRacksTotal {
				t.Errorf("RacksOf = %+v, want %d gangs, %d split, %d racks in all", got, tt.wantGangs, tt.wantSplit, tt.wantRacksTotal)
			}
		})
	}
}

// TM at the smallest scale: one rack of 8 GPU nodes of 8 GPUs, and gangs
// of 1 and 2 whole-node workers (with background load none in rack 0).
// What is stranded depends on which gangs wait and where the free GPUs are.
func TestStrandingOf(t *testing.T) {
	tm := named(0.02, "TM")
	nodes := tm.NodeObjects() // 2 CPU nodes, then gpu-0..gpu-7 in rack-0
	gpuNode := func(i int) string { return nodes[len(nodes)-8+i].Name }
	tests := []struct {
		name string
		// busy maps GPU node index to the GPUs background pods take there.
		busy map[int]int64
		// bound lists, per gang, the GPU node indexes of its workers; nil
		// leaves the gang waiting.
		bound                   [][]int
		wantFree, wantStranded  int64
		wantWaiting, wantBoundG int64
	}{
		{name: "every gang bound: nothing wanted, nothing stranded",
			bound: [][]int{{0}, {1, 2}}, wantFree: 40, wantStranded: 0, wantWaiting: 0, wantBoundG: 24},
		{name: "the 2-node gang waits with 7 free nodes: nothing stranded",
			bound: [][]int{{0}, nil}, wantFree: 56, wantStranded: 0, wantWaiting: 1, wantBoundG: 8},
		{name: "the 2-node gang waits with one whole node and fragments free: all stranded",
			busy:  map[int]int64{1: 8, 2: 8, 3: 8, 4: 8, 5: 8, 6: 4},
			bound: [][]int{{0}, nil}, wantFree: 12, wantStranded: 12, wantWaiting: 1, wantBoundG: 8},
		{name: "the 1-node gang waits: whole nodes usable, fragments stranded",
			busy:  map[int]int64{1: 8, 2: 8, 3: 8, 4: 8, 5: 8, 6: 4},
			bound: [][]int{nil, {0, 7}}, wantFree: 4, wantStranded: 4, wantWaiting: 1, wantBoundG: 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gangPods, all []*corev1.Pod
			whole := map[string]bool{}
			for i, workers := range tt.bound {
				g := tm.Gang(i, "bench", troupe.Backend{})
				for w, n := range workers {
					g.Pods[1+w].Spec.NodeName = gpuNode(n)
				}
				whole[g.Name] = workers != nil
				gangPods = append(gangPods, g.Pods...)
			}
			all = append(all, gangPods...)
			for n, gpus := range tt.busy {
				all = append(all, busyPod(tm, gpuNode(n), gpus))
			}
			got := StrandingOf(nodes, all, gangPods, whole, scenario.RackLabel)
			if got.FreeGPUs != tt.wantFree || got.StrandedGPUs != tt.wantStranded || int64(got.Waiting) != tt.wantWaiting || got.BoundGPUs != tt.wantBoundG {
				t.Errorf("got %+v, want free %d, stranded %d, waiting %d, bound %d", got, tt.wantFree, tt.wantStranded, tt.wantWaiting, tt.wantBoundG)
			}
		})
	}
}

// named is the catalog's scenario of that name at scale.
func named(scale float64, name string) scenario.Scenario {
	for _, s := range scenario.Catalog(scale, time.Second) {
		if s.Name == name {
			return s
		}
	}
	panic("no scenario " + name)
}

// busyPod is background load on node: a pod of no gang taking gpus GPUs.
func busyPod(s scenario.Scenario, node string, gpus int64) *corev1.Pod {
	p := s.Gang(99, "bench", troupe.Backend{}).Pods[1]
	p.Labels = map[string]string{}
	p.Spec.NodeName = node
	p.Spec.Containers[0].Resources.Limits[scenario.GPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
	return p
}
