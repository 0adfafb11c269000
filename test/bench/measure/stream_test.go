package measure

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// A stream's figures: each arrived gang's wait, to the end of the run for
// one never bound whole, also by the gang's workers, and the samples'
// medians and maximum.
func TestStreamOf(t *testing.T) {
	tests := []struct {
		name              string
		arrived, done     map[string]time.Duration
		end               time.Duration
		stranded, free    []int64
		wantArrived       int
		wantBound         int
		wantWaits         []time.Duration
		wantP50, wantP90  time.Duration
		wantMed, wantMaxS int64
		wantFree          int64
		// wantBy are the median waits of gangs of 1 and 2 workers.
		wantBy [2]time.Duration
	}{{
		name:    "every gang bound",
		arrived: map[string]time.Duration{"a": 1000 * time.Millisecond, "b": 1200 * time.Millisecond, "c": 1400 * time.Millisecond},
		done:    map[string]time.Duration{"a": 1010 * time.Millisecond, "b": 1500 * time.Millisecond, "c": 1430 * time.Millisecond},
		end:     2 * time.Second, stranded: []int64{0, 16, 8}, free: []int64{40, 16, 24},
		wantArrived: 3, wantBound: 3, wantWaits: ms(10, 30, 300),
		wantP50: 30 * time.Millisecond, wantP90: 300 * time.Millisecond, wantMed: 8, wantMaxS: 16, wantFree: 24,
		wantBy: [2]time.Duration{10 * time.Millisecond, 300 * time.Millisecond},
	}, {
		// A gang left waiting waits until the end at least: leaving it
		// does not shorten the figure.
		name:        "a gang never bound waits to the end",
		arrived:     map[string]time.Duration{"a": 1000 * time.Millisecond, "b": 1200 * time.Millisecond},
		done:        map[string]time.Duration{"a": 1010 * time.Millisecond},
		end:         5200 * time.Millisecond,
		wantArrived: 2, wantBound: 1, wantWaits: []time.Duration{10 * time.Millisecond, 4 * time.Second},
		wantP50: 10 * time.Millisecond, wantP90: 4 * time.Second,
		wantBy: [2]time.Duration{10 * time.Millisecond, 4 * time.Second},
	}, {
		name:    "a gang not arrived is not counted",
		arrived: map[string]time.Duration{"a": 1000 * time.Millisecond},
		done:    map[string]time.Duration{"a": 1100 * time.Millisecond, "z": 50 * time.Millisecond},
		end:     2 * time.Second, stranded: []int64{24},
		wantArrived: 1, wantBound: 1, wantWaits: ms(100),
		wantP50: 100 * time.Millisecond, wantP90: 100 * time.Millisecond, wantMed: 24, wantMaxS: 24,
		wantBy: [2]time.Duration{100 * time.Millisecond, 0},
	}, {
		name: "nothing arrived", end: time.Second,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// a and c have 1 worker, b 2.
			s := StreamOf(tc.arrived, tc.done, tc.end, map[string]int{"a": 1, "b": 2, "c": 1, "z": 2})
			s.Stranded, s.Free = tc.stranded, tc.free
			if s.Arrived != tc.wantArrived || s.Bound != tc.wantBound || !slices.Equal(s.Waits, tc.wantWaits) {
				t.Errorf("StreamOf = %+v, want %d arrived, %d bound, waits %v", s, tc.wantArrived, tc.wantBound, tc.wantWaits)
			}
			if p50, p90 := s.Wait(0.5), s.Wait(0.9); p50 != tc.wantP50 || p90 != tc.wantP90 {
				t.Errorf("wait p50 %v, p90 %v; want %v, %v", p50, p90, tc.wantP50, tc.wantP90)
			}
			if med, mx := s.StrandedMedian(), s.StrandedMax(); med != tc.wantMed || mx != tc.wantMaxS {
				t.Errorf("stranded median %d, max %d; want %d, %d", med, mx, tc.wantMed, tc.wantMaxS)
			}
			if free := s.FreeMedian(); free != tc.wantFree {
				t.Errorf("free median %d, want %d", free, tc.wantFree)
			}
			if by := [2]time.Duration{s.WaitOf(1, 0.5), s.WaitOf(2, 0.5)}; by != tc.wantBy {
				t.Errorf("median waits of 1 and 2 workers %v, want %v", by, tc.wantBy)
			}
		})
	}
}

// TS at the smallest scale: one rack of 8 GPU nodes, gangs of 1, 2, 4 and
// 8 whole-node workers. A sample is taken only while a gang waits, and
// reads StrandingOf's figure then.
func TestStrandingSampler(t *testing.T) {
	ts := named(0.02, "TS")
	nodes := ts.NodeObjects() // 2 CPU nodes, then gpu-0..gpu-7 in rack-0
	gpuNode := func(i int) string { return nodes[len(nodes)-8+i].Name }
	// Background load: 4 GPUs taken on gpu-7.
	sampler := NewStrandingSampler(nodes, []*corev1.Pod{busyPod(ts, gpuNode(7), 4)}, scenario.RackLabel)

	// gang builds gang i with its workers on the GPU nodes given (nil:
	// waiting, none bound).
	gang := func(i int, workers []int) []*corev1.Pod {
		g := ts.Gang(i, "bench", troupe.Backend{})
		for w, n := range workers {
			g.Pods[1+w].Spec.NodeName = gpuNode(n)
		}
		return g.Pods
	}
	steps := []struct {
		name     string
		pods     [][]*corev1.Pod
		whole    map[string]bool
		wantKept bool
	}{
		{name: "nothing waits: no sample",
			pods: [][]*corev1.Pod{gang(0, []int{0})}, whole: map[string]bool{ts.GangName(0): true}},
		// The 2-node gang waits; 6 whole nodes are free: only gpu-7's 4
		// GPUs, too few for a worker, are stranded.
		{name: "a gang waits and fits", pods: [][]*corev1.Pod{gang(0, []int{0}), gang(1, nil)},
			whole: map[string]bool{ts.GangName(0): true}, wantKept: true},
		// The 8-node gang waits in a rack with one node taken and one
		// half taken: the 6 whole free nodes and gpu-7's 4 are stranded.
		{name: "a gang waits that the rack cannot hold", pods: [][]*corev1.Pod{gang(0, []int{0}), gang(3, nil)},
			whole: map[string]bool{ts.GangName(0): true}, wantKept: true},
		{name: "bound again: no sample", pods: [][]*corev1.Pod{gang(0, []int{0}), gang(1, []int{1, 2})},
			whole: map[string]bool{ts.GangName(0): true, ts.GangName(1): true}},
	}
	for _, st := range steps {
		if kept := sampler.Sample(slices.Concat(st.pods...), st.whole); kept != st.wantKept {
			t.Errorf("%s: kept %v, want %v", st.name, kept, st.wantKept)
		}
	}
	// Free: 6 whole nodes and gpu-7's 4 GPUs at both samples.
	stranded, free := sampler.Samples()
	if want := []int64{4, 6*8 + 4}; !slices.Equal(stranded, want) || !slices.Equal(free, []int64{52, 52}) {
		t.Errorf("samples: stranded %v, free %v; want %v, 52 free at each", stranded, free, want)
	}
}

// The log keeps each pod once, as first seen bound, and keeps it when it
// is deleted: the racks of gangs deleted during a run are still read.
func TestBindLog(t *testing.T) {
	ts := named(0.05, "TS")
	nodes := ts.NodeObjects() // 5 CPU nodes, then 3 racks of 8 GPU nodes
	gpu := func(i int) string { return nodes[5+i].Name }
	log := NewBindLog()
	// Gang 2 (4 workers) split over racks 0 and 1, gang 1 (2 workers) in
	// rack 2; gang 0's worker never bound.
	place := map[int][]int{2: {6, 7, 8, 9}, 1: {16, 17}}
	for i := range 3 {
		for w, p := range ts.Gang(i, "bench", troupe.Backend{}).Pods {
			p.UID = types.UID(p.Name)
			log.OnAdd(p, false)
			if w == 0 || place[i] == nil {
				continue
			}
			b := bind(p, gpu(place[i][w-1]))
			log.OnUpdate(p, b)
			log.OnUpdate(b, bind(p, gpu(0))) // seen again: not a new bind
			log.OnDelete(toolscache.DeletedFinalStateUnknown{Obj: b})
		}
	}
	if got := len(log.Pods()); got != 6 {
		t.Errorf("%d pods logged, want the 6 bound once each", got)
	}
	if got := RacksOf(nodes, log.Pods(), scenario.RackLabel); got.Gangs != 2 || got.Split != 1 || got.RacksUsed != 3 {
		t.Errorf("RacksOf(the log) = %+v, want 2 gangs, 1 split, 3 racks in all", got)
	}
}
