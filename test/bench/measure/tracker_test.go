package measure

import (
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/troupe-ml/troupe/integrations"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// plain marks pods with their group only.
type plain struct{}

func (plain) DecoratePod(pod *corev1.Pod, group, role string) {
	integrations.Annotate(pod, group, role)
}

// quality is the scenario the quality tests place by hand: 2 CPU nodes, 2
// GPU nodes of 8 GPUs, 2 gangs of a master and 4 workers of 2 GPUs.
func qualityScenario() scenario.Scenario {
	for _, s := range scenario.Catalog(0.02, time.Second) {
		if s.Name == "Q" {
			s.Pools[0].Count, s.Pools[1].Count, s.Gangs = 2, 2, 2
			return s
		}
	}
	panic("no Q scenario")
}

// gangPods returns the scenario's gangs' pods, with UIDs, unbound.
func gangPods(s scenario.Scenario) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range s.Gangs {
		for _, p := range s.Gang(i, "ns", plain{}).Pods {
			p.UID = types.UID(p.Name)
			pods = append(pods, p)
		}
	}
	return pods
}

func bind(p *corev1.Pod, node string) *corev1.Pod {
	b := p.DeepCopy()
	b.Spec.NodeName = node
	return b
}

func TestTracker(t *testing.T) {
	s := qualityScenario()
	pods := gangPods(s) // gang 0: pods[0:5], gang 1: pods[5:10]
	sizes := map[string]int{s.GangName(0): 5, s.GangName(1): 5}
	var up []string
	tr := NewTracker(sizes, func(g string) { up = append(up, g) })
	now := time.Unix(1000, 0)
	tr.now = func() time.Time { return now }
	for _, p := range pods {
		tr.OnAdd(p, true)
	}
	tr.Start()

	for i, p := range pods[:5] {
		now = now.Add(100 * time.Millisecond)
		tr.OnUpdate(p, bind(p, "gpu-0"))
		if i == 2 {
			// A pod seen bound again (a status update) is not a new bind.
			tr.OnUpdate(p, bind(p, "gpu-0"))
		}
	}
	now = now.Add(time.Second)
	tr.OnUpdate(pods[5], bind(pods[5], "cpu-0"))
	tr.OnDelete(toolscache.DeletedFinalStateUnknown{Obj: pods[9]})

	if !slices.Equal(up, []string{s.GangName(0)}) {
		t.Errorf("gangs up = %v, want only %s", up, s.GangName(0))
	}
	p := tr.Progress()
	if p.Bound != 6 || p.GangsDone != 1 || p.Unbound != 3 || p.SinceLastBind != 0 {
		t.Errorf("progress = %+v, want 6 bound, 1 gang, 3 unbound (one deleted), last bind now", p)
	}
	th := tr.Throughput()
	if th.Pods != 6 || th.FirstBind != 100*time.Millisecond || th.Makespan != 500*time.Millisecond || th.LastBind != 1500*time.Millisecond {
		t.Errorf("throughput = %+v", th)
	}
	if got := tr.GangsNeverUp(); !slices.Equal(got, []string{s.GangName(1)}) {
		t.Errorf("never up = %v", got)
	}
	if got, want := tr.DoneAt(), map[string]time.Duration{s.GangName(0): 500 * time.Millisecond}; !maps.Equal(got, want) {
		t.Errorf("done at %v, want %v", got, want)
	}
	if got := tr.Elapsed(); got != 1500*time.Millisecond {
		t.Errorf("elapsed %v, want 1.5s", got)
	}
}

func TestFinalState(t *testing.T) {
	s := qualityScenario()
	pods := gangPods(s)
	sizes := map[string]int{s.GangName(0): 5, s.GangName(1): 5}
	gpuNodes := []*corev1.Node{}
	for _, n := range s.NodeObjects() {
		if n.Labels[scenario.PoolLabel] == scenario.PoolGPU {
			gpuNodes = append(gpuNodes, n)
		}
	}
	tests := []struct {
		name    string
		place   map[int]string // pod index -> node
		partial []string
		whole   map[string]bool
		quality Quality
	}{{
		name:  "nothing placed",
		whole: map[string]bool{s.GangName(0): false, s.GangName(1): false},
		// Free GPUs that pending pods still fit on are not stranded.
		quality: Quality{GPUs: 16, PendingGPUPods: 8},
	}, {
		// Gang 0 fills gpu-0 and its master is on a CPU node: perfect.
		// Gang 1's master took a GPU node, where only 3 workers fit: 2
		// GPUs are stranded and the gang cannot start.
		name:    "a master on a GPU node strands two GPUs",
		place:   map[int]string{0: "cpu-0", 1: "gpu-0", 2: "gpu-0", 3: "gpu-0", 4: "gpu-0", 5: "gpu-1", 6: "gpu-1", 7: "gpu-1", 8: "gpu-1"},
		partial: []string{s.GangName(1)},
		whole:   map[string]bool{s.GangName(0): true, s.GangName(1): false},
		quality: Quality{Masters: 2, MastersOnCPU: 1, GPUs: 16, GPUsUsed: 14, PendingGPUPods: 1, Stranded: 2},
	}, {
		name:    "both gangs whole",
		place:   map[int]string{0: "cpu-0", 1: "gpu-0", 2: "gpu-0", 3: "gpu-0", 4: "gpu-0", 5: "cpu-1", 6: "gpu-1", 7: "gpu-1", 8: "gpu-1", 9: "gpu-1"},
		whole:   map[string]bool{s.GangName(0): true, s.GangName(1): true},
		quality: Quality{Masters: 2, MastersOnCPU: 2, GPUs: 16, GPUsUsed: 16},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			final := make([]*corev1.Pod, len(pods))
			for i, p := range pods {
				final[i] = p
				if n, ok := tc.place[i]; ok {
					final[i] = bind(p, n)
				}
			}
			if got := PartialGangs(final, sizes); !slices.Equal(got, tc.partial) {
				t.Errorf("partial = %v, want %v", got, tc.partial)
			}
			for g, want := range tc.whole {
				if got := BoundWhole(final, sizes)[g]; got != want {
					t.Errorf("bound whole %s = %v, want %v", g, got, want)
				}
			}
			if got := Assess(s.NodeObjects(), final); got != tc.quality {
				t.Errorf("quality = %+v\nwant      %+v", got, tc.quality)
			}
		})
	}
	if len(gpuNodes) != 2 {
		t.Fatalf("the scenario has %d GPU nodes, the cases assume 2", len(gpuNodes))
	}
	if q := (Quality{GPUs: 16, GPUsUsed: 12}); q.Occupancy() != 0.75 || (Quality{}).Occupancy() != 0 {
		t.Errorf("occupancy wrong: %v", q.Occupancy())
	}
}

func TestPartialLongerThan(t *testing.T) {
	s := qualityScenario()
	pods := gangPods(s) // gang 0: pods[0:5], gang 1: pods[5:10]
	g0, g1 := s.GangName(0), s.GangName(1)
	sizes := map[string]int{g0: 5, g1: 5}
	const grace = 2 * time.Second
	type step struct {
		after time.Duration
		bind  []int // pods bound at that moment
		del   []int // bound pods deleted at that moment
	}
	tests := []struct {
		name  string
		steps []step
		// end is how long after the last step the episodes are read.
		end  time.Duration
		want []PartialEpisode
	}{{
		name:  "a gang bound whole within the grace is not listed",
		steps: []step{{after: time.Second, bind: []int{0, 1}}, {after: 1500 * time.Millisecond, bind: []int{2, 3, 4}}},
		end:   10 * time.Second,
	}, {
		name:  "a gang bound whole after longer than the grace is listed with its duration",
		steps: []step{{after: time.Second, bind: []int{0}}, {after: 3 * time.Second, bind: []int{1, 2, 3, 4}}},
		want:  []PartialEpisode{{Gang: g0, From: time.Second, To: 4 * time.Second}},
	}, {
		name:  "a gang still partial is counted up to now, the longest first",
		steps: []step{{after: time.Second, bind: []int{0}}, {after: time.Second, bind: []int{5}}},
		end:   3 * time.Second,
		want:  []PartialEpisode{{Gang: g0, From: time.Second, To: 5 * time.Second}, {Gang: g1, From: 2 * time.Second, To: 5 * time.Second}},
	}, {
		name:  "a partial gang whose bound members are deleted stops being partial then",
		steps: []step{{after: time.Second, bind: []int{0, 1}}, {after: 2500 * time.Millisecond, del: []int{0}}, {after: time.Second, del: []int{1}}},
		end:   time.Minute,
		want:  []PartialEpisode{{Gang: g0, From: time.Second, To: 4500 * time.Millisecond}},
	}, {
		name:  "a whole gang deleted (a finished job) is not partial",
		steps: []step{{after: time.Second, bind: []int{0, 1, 2, 3, 4}}, {after: time.Second, del: []int{0}}},
		end:   time.Minute,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(sizes, nil)
			now := time.Unix(1000, 0)
			tr.now = func() time.Time { return now }
			for _, p := range pods {
				tr.OnAdd(p, true)
			}
			tr.Start()
			for _, st := range tc.steps {
				now = now.Add(st.after)
				for _, i := range st.bind {
					tr.OnUpdate(pods[i], bind(pods[i], "gpu-0"))
				}
				for _, i := range st.del {
					tr.OnDelete(bind(pods[i], "gpu-0"))
				}
			}
			now = now.Add(tc.end)
			if got := tr.PartialLongerThan(grace); !slices.Equal(got, tc.want) {
				t.Errorf("partial episodes = %+v, want %+v", got, tc.want)
			}
		})
	}
}
