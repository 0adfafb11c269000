package bench

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/troupe-ml/troupe/integrations/troupe"
	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Each gang is created at its time from the clock's start, not before, in
// order; its arrival is when its creation began; a failed creation is the
// run's error and leaves the stream incomplete.
func TestArrivals(t *testing.T) {
	s := scenario.Scenario{Name: "X", Gangs: 4, FirstArrival: 30 * time.Millisecond, ArrivalEvery: 20 * time.Millisecond}
	tests := []struct {
		name         string
		fail         int // the gang whose creation fails; -1 none
		wantComplete bool
		wantExisting int
	}{
		{name: "every gang created", fail: -1, wantComplete: true, wantExisting: 4},
		{name: "a creation fails", fail: 2, wantExisting: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin := time.Now()
			var mu sync.Mutex
			called := map[int]time.Duration{}
			var order []int
			a := startArrivals(context.Background(), s, origin, func(_ context.Context, i int) error {
				mu.Lock()
				defer mu.Unlock()
				called[i] = time.Since(origin)
				order = append(order, i)
				if i == tc.fail {
					return errors.New("refused")
				}
				return nil
			})
			<-a.done
			if !slices.Equal(order, []int{0, 1, 2, 3}) {
				t.Errorf("created in the order %v, want 0, 1, 2, 3", order)
			}
			arrived := a.arrived()
			for i := range s.Gangs {
				at, ok := arrived[s.GangName(i)]
				if !ok || at < s.ArrivalAt(i) || called[i] < at {
					t.Errorf("gang %d arrived at %v (recorded: %v), created at %v; due at %v", i, at, ok, called[i], s.ArrivalAt(i))
				}
			}
			if a.complete() != tc.wantComplete {
				t.Errorf("complete %v, want %v", a.complete(), tc.wantComplete)
			}
			err := a.stop()
			if (err == nil) != (tc.fail < 0) || err != nil && err.Error() != "gang x-0002 arriving: refused" {
				t.Errorf("stop() = %v", err)
			}
			if got := len(a.existing()); got != tc.wantExisting {
				t.Errorf("%d gangs exist whole, want %d", got, tc.wantExisting)
			}
		})
	}
}

// Stopping the arrivals stops those not due yet and waits for the
// creation under way, whose cancellation is no failure.
func TestArrivalsStop(t *testing.T) {
	s := scenario.Scenario{Name: "X", Gangs: 3, ArrivalEvery: time.Hour}
	started := make(chan struct{})
	a := startArrivals(context.Background(), s, time.Now(), func(ctx context.Context, _ int) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	<-started
	stopped := make(chan error)
	go func() { stopped <- a.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("stop() = %v, want no failure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stop() is still waiting for an arrival due in an hour")
	}
	if got := slices.Collect(maps.Keys(a.arrived())); !slices.Equal(got, []string{"x-0000"}) || a.complete() {
		t.Errorf("arrived %v, complete %v; want only x-0000, incomplete", got, a.complete())
	}
}

// The stream's creations are the harness's writes, counted by verb and
// resource as the API server counts them, so that the placer is not
// charged with them.
func TestWriteCounter(t *testing.T) {
	var ts scenario.Scenario
	for _, s := range scenario.Catalog(0.02, time.Second) {
		if s.Name == "TS" {
			ts = s
		}
	}
	w := &writeCounter{counts: measure.Writes{}}
	cl := w.client(fake.NewClientBuilder().WithScheme(scheme).Build())
	dialect := troupe.Backend{}
	// Gang 3 has 8 workers: a PodGroup and 9 pods.
	g := ts.Gang(3, namespace, dialect)
	if err := writeGangs(context.Background(), cl, dialect, []scenario.Gang{g}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(context.Background(), g.Pods[0]); err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(context.Background(), g.Pods[1]); err == nil {
		t.Fatal("created a pod twice")
	}
	want := measure.Writes{"POST podgroups": 1, "POST pods": 10, "DELETE pods": 1}
	if got := w.writes(); !maps.Equal(got, want) {
		t.Errorf("writes %v, want %v (a refused create counts: the API server counts it)", got, want)
	}
	var st *stream
	if got := st.writes(); len(got) != 0 {
		t.Errorf("a run without a stream wrote %v", got)
	}
}

// A gang waits, for the stranding samples, from when it exists whole
// until it is bound whole: one still being created, or bound, does not.
func TestStreamSample(t *testing.T) {
	ts := scenario.Catalog(0.02, time.Second)[slices.Index(scenario.Names, "TS")]
	st := &stream{s: ts, arrivals: &arrivals{created: map[string]bool{}}}
	st.sampler = measure.NewStrandingSampler(ts.NodeObjects(), nil, scenario.RackLabel)
	// Gang 3 asks the whole rack; one of gang 0's workers holds a node.
	g0, g3 := ts.Gang(0, namespace, troupe.Backend{}), ts.Gang(3, namespace, troupe.Backend{})
	g0.Pods[1].Spec.NodeName = "gpu-0"
	var objs []any
	for _, p := range slices.Concat(g0.Pods, g3.Pods) {
		objs = append(objs, p)
	}
	done := map[string]time.Duration{g0.Name: time.Second}
	st.sample(done, objs) // gang 3 is being created
	st.arrivals.created[g3.Name] = true
	st.sample(done, objs) // gang 3 waits: the 7 free nodes are stranded
	done[g3.Name] = 2 * time.Second
	st.sample(done, objs)
	if got, _ := st.sampler.Samples(); !slices.Equal(got, []int64{7 * 8}) {
		t.Errorf("samples %v, want 56 stranded once", got)
	}
}
