package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

func catalog() map[string]scenario.Scenario {
	out := map[string]scenario.Scenario{}
	for _, s := range scenario.Catalog(1, 5*time.Second) {
		out[s.Name] = s
	}
	return out
}

// result is a finished run with a mean rate and a makespan.
func result(s, placer string, mean float64, makespan time.Duration) Result {
	return Result{
		Scenario: catalog()[s], Placer: placer,
		Throughput: measure.Throughput{Pods: 2000, Gangs: 500, Mean: mean, Makespan: makespan},
		PlacerCPU:  2 * time.Second, ActiveCPU: time.Second, APIServerCPU: 2 * time.Second, EtcdCPU: time.Second,
		Writes: measure.Writes{"POST pods/binding": 2000},
	}
}

func TestGoals(t *testing.T) {
	// s4 is a run of S4 or S4x4 whose warm round spent warmCPU deciding
	// for 188 pods; its first round spends ten times as much.
	s4 := func(placer string, nodes string, warmCPU float64) Result {
		r := result(nodes, placer, 100, time.Second)
		r.Counters = map[string]float64{"decision_duration_seconds_sum": 10 * warmCPU}
		r.Warm = &WarmRound{Pods: 188, Counters: map[string]float64{"decision_cpu_seconds_total": warmCPU, "decision_duration_seconds_sum": 2 * warmCPU}}
		return r
	}
	// The first round alone does not count: it reads every node once.
	coldOnly := s4(Troupe, "S4x4", 0.11)
	coldOnly.Warm = nil
	s3 := result("S3", Troupe, 100, 20*time.Second)
	// Flat in CPU (10 and 12 ms a decision), whatever the wall-clock time
	// (30 and 90 ms: the decisions waited for a CPU).
	s3.Cycles = []CycleSample{
		{Backlog: 1200, Cycles: 10, CycleSeconds: 1, DecisionSeconds: 0.9, DecisionCPUSeconds: 0.12},
		{Backlog: 100, Cycles: 10, CycleSeconds: 0.8, DecisionSeconds: 0.3, DecisionCPUSeconds: 0.1},
	}
	noCPU := result("S3", Troupe, 100, 20*time.Second)
	noCPU.Cycles = []CycleSample{{Backlog: 1200, Cycles: 10, DecisionSeconds: 0.1}, {Backlog: 100, Cycles: 10, DecisionSeconds: 0.1}}
	partial := result("S2", Troupe, 100, time.Second)
	partial.Partial = []string{"s2-0001"}
	stranded := result("Q", Troupe, 100, time.Second)
	stranded.NeverUp = []string{"q-0003"}
	failed := result("S2", "volcano", 0, 0)
	failed.Err = errors.New("boom")
	// S5 costs 1.4 and 2 times S1's CPU per pod (2s over 2000 pods).
	rulesCheap, rulesDear := result("S5", Troupe, 900, 2*time.Second), result("S5", Troupe, 900, 2*time.Second)
	rulesCheap.PlacerCPU, rulesDear.PlacerCPU = 2800*time.Millisecond, 4*time.Second
	// T: every gang in its rack, or one split; T0 the same gangs without
	// the rule.
	racked := func(split int, cpu time.Duration) Result {
		r := result("T", Troupe, 100, time.Second)
		r.Quality.Racks = measure.Racks{Gangs: 60, Split: split, RacksUsed: 60 + split}
		r.PlacerCPU = cpu
		return r
	}
	rackless := result("T0", Troupe, 100, time.Second)
	// Volcano keeps the rule in T too, more slowly.
	volcanoT := result("T", "volcano", 50, 3*time.Second)
	volcanoT.Quality.Racks = measure.Racks{Gangs: 60, RacksUsed: 60}
	// TM: gangs left waiting, GPUs stranded.
	pressed := func(placer string, unbound, split int, stranded int64, makespan time.Duration) Result {
		r := result("TM", placer, 100, makespan)
		for i := range unbound {
			r.NeverUp = append(r.NeverUp, fmt.Sprintf("tm-%04d", i))
		}
		r.Quality.Racks = measure.Racks{Gangs: r.Scenario.Gangs - unbound, Split: split}
		r.Quality.Stranding = measure.Stranding{Waiting: unbound, StrandedGPUs: stranded}
		return r
	}

	tests := []struct {
		name    string
		results []Result
		want    map[string]string // goal prefix -> "met", "not met" or "not run"
	}{{
		name: "every goal met",
		results: []Result{
			result("S1", Null, 1000, time.Second), result("S1", Troupe, 900, 2*time.Second), result("S1", "volcano", 90, 20*time.Second),
			s3, s4(Troupe, "S4", 0.1), s4(Troupe, "S4x4", 0.11), rulesCheap, racked(0, 2800*time.Millisecond), rackless, volcanoT,
			pressed(Troupe, 30, 0, 16, time.Second), pressed("volcano", 31, 0, 40, 10*time.Second),
		},
		want: map[string]string{"Troupe at 0.85": "met", "Troupe ahead": "met", "zero partial": "met", "Troupe's cycle": "met", "Troupe's cost": "met", "Troupe's CPU per pod with placement rules": "met",
			"Troupe keeps T's required rack rule": "met", "Troupe's CPU per pod with T's rack rule": "met", "Troupe at least as good as Volcano": "met", "On TM": "met"},
	}, {
		name: "every goal missed",
		results: []Result{
			result("S1", Null, 1000, time.Second), result("S1", Troupe, 800, 3*time.Second), result("S1", "volcano", 900, 2*time.Second),
			partial, s4(Troupe, "S4", 0.1), s4(Troupe, "S4x4", 0.4), rulesDear, racked(1, 4*time.Second), rackless, volcanoT,
			pressed(Troupe, 30, 0, 16, time.Second), pressed("volcano", 29, 0, 40, 10*time.Second),
			{Scenario: catalog()["S3"], Placer: Troupe, Throughput: measure.Throughput{Pods: 10}, Cycles: []CycleSample{
				{Backlog: 1200, Cycles: 10, CycleSeconds: 5, DecisionSeconds: 0.5, DecisionCPUSeconds: 0.4}, {Backlog: 100, Cycles: 10, CycleSeconds: 5, DecisionSeconds: 0.5, DecisionCPUSeconds: 0.1},
			}},
		},
		want: map[string]string{"Troupe at 0.85": "not met", "Troupe ahead": "not met", "zero partial": "not met", "Troupe's cycle": "not met", "Troupe's cost": "not met", "Troupe's CPU per pod with placement rules": "not met",
			"Troupe keeps T's required rack rule": "not met", "Troupe's CPU per pod with T's rack rule": "not met", "Troupe at least as good as Volcano": "not met", "On TM": "not met"},
	}, {
		// Leaving a gang unbound loses whatever the makespan; a failed
		// peer run counts as neither ahead nor behind.
		name: "unbound gangs lose",
		results: []Result{
			stranded, result("Q", "coscheduling", 100, 10*time.Second), failed, result("S2", Troupe, 100, time.Second),
		},
		want: map[string]string{"Troupe at 0.85": "not run", "Troupe ahead": "not met", "Troupe's cycle": "not run", "Troupe's cost": "not run"},
	}, {
		name:    "no decision CPU time: not judged",
		results: []Result{noCPU},
		want:    map[string]string{"Troupe's cycle": "not run"},
	}, {
		name:    "a first round without its warm round",
		results: []Result{s4(Troupe, "S4", 0.1), coldOnly},
		want:    map[string]string{"Troupe's cost": "not run"},
	}, {
		name:    "nothing run",
		results: nil,
		want: map[string]string{"Troupe at 0.85": "not run", "Troupe ahead": "not run", "zero partial": "not run", "Troupe's CPU per pod with placement rules": "not run",
			"Troupe keeps T's required rack rule": "not run"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			verdicts := Goals(tc.results)
			for prefix, want := range tc.want {
				found := false
				for _, v := range verdicts {
					if !strings.HasPrefix(v.Goal, prefix) {
						continue
					}
					found = true
					if got := v.String(); got != want {
						t.Errorf("%s: %s (%s), want %s", v.Goal, got, v.Detail, want)
					}
				}
				if !found {
					t.Errorf("no goal starts with %q", prefix)
				}
			}
		})
	}
}

func TestCycleBuckets(t *testing.T) {
	samples := []CycleSample{
		{Backlog: 0, Cycles: 2, CycleSeconds: 0.02, DecisionSeconds: 0.002, DecisionCPUSeconds: 0.001},
		{Backlog: 50, Cycles: 2, CycleSeconds: 0.06, DecisionSeconds: 0.006, DecisionCPUSeconds: 0.003},
		{Backlog: 399, Cycles: 4, CycleSeconds: 0.4, DecisionSeconds: 0.02, DecisionCPUSeconds: 0.008},
		{Backlog: 380, Cycles: 0, CycleSeconds: 0},
		{Backlog: 210, Cycles: 0, CycleSeconds: 0},
	}
	got := CycleBuckets(samples)
	want := []BacklogBucket{
		{Low: 0, High: 100, Cycles: 4, Mean: 20 * time.Millisecond, MeanDecision: 2 * time.Millisecond, MeanDecisionCPU: time.Millisecond},
		{Low: 300, High: 400, Cycles: 4, Mean: 100 * time.Millisecond, MeanDecision: 5 * time.Millisecond, MeanDecisionCPU: 2 * time.Millisecond},
	}
	if len(got) != len(want) {
		t.Fatalf("buckets = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if CycleBuckets([]CycleSample{{Backlog: 0, Cycles: 3}}) != nil {
		t.Error("no backlog, yet buckets")
	}
}

func TestMarkdown(t *testing.T) {
	failed := result("S1", "volcano", 0, 0)
	failed.Err = errors.New("vc-scheduler exited | early\nsee log")
	q := result("Q", Troupe, 100, time.Second)
	q.Quality = measure.Quality{Masters: 100, MastersOnCPU: 100, GPUs: 800, GPUsUsed: 800}
	s4 := result("S4", Troupe, 100, time.Second)
	s4.Counters = map[string]float64{"cycles_total": 4, "decision_duration_seconds_sum": 0.04, "decision_cpu_seconds_total": 0.02}
	s4.Warm = &WarmRound{Pods: 200, Makespan: 400 * time.Millisecond, Counters: map[string]float64{
		"cycles_total": 8, "snapshot_duration_seconds_sum": 0.008, "snapshot_duration_seconds_count": 8,
		"decision_duration_seconds_sum": 0.02, "decision_cpu_seconds_total": 0.01, "predicate_evaluations_total": 11000,
	}}
	var b strings.Builder
	Markdown(&b, Meta{Command: "make bench", Date: time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC), Machine: []string{"Machine: 2 cores."}},
		[]Result{result("S1", Null, 1000, time.Second), result("S1", Troupe, 900, 2*time.Second), failed, q, s4})
	out := b.String()
	for _, want := range []string{
		"```sh\nmake bench\n```", "Run on 2026-11-21 06:00 UTC.", "- Machine: 2 cores.",
		"### S1: many small gangs", "1000 nodes: 200×cpu",
		"| troupe | 900 | 0 | 0 | 0.0 | 2s | 0s | 1ms | 1.00 | 0 | 0 | 0.90 |  |",
		"| volcano | failed: vc-scheduler exited \\| early see log |",
		"### Placement quality (Q)", "| troupe | 100 / 100 | 100 / 100 | 100.0% | 0 | 0 |",
		"| S1 | troupe | 1.00 | 1.5ms | POST pods/binding 2000 |",
		"| Troupe at 0.85× the null binder or more in S1 (mean pods/s) | met | 0.90× (900 vs 1000 pods/s) |",
		// The warm round's 200 pods; the first round's 2000.
		"### Troupe's warm rounds", "| S4 | 200 | 8 | 1ms | 100µs | 50µs | 20µs | 10µs | 55 | 400ms |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestSplice(t *testing.T) {
	tests := []struct {
		name, doc, want string
		wantErr         bool
	}{{
		name: "no markers: appended",
		doc:  "# Benchmarks\n\nProse.\n",
		want: "# Benchmarks\n\nProse.\n\n" + BeginMarker + "\n\nNEW\n\n" + EndMarker + "\n",
	}, {
		name: "markers: replaced, prose on both sides kept",
		doc:  "# B\n\nBefore.\n\n" + BeginMarker + "\nOLD\n" + EndMarker + "\n\n## Analysis\n\nAfter.\n",
		want: "# B\n\nBefore.\n\n" + BeginMarker + "\n\nNEW\n\n" + EndMarker + "\n\n## Analysis\n\nAfter.\n",
	}, {
		name:    "end before begin",
		doc:     EndMarker + "\n" + BeginMarker,
		wantErr: true,
	}, {
		name:    "begin alone",
		doc:     BeginMarker + "\nOLD\n",
		wantErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Splice(tc.doc, "\nNEW\n")
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Splice = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestUpdateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := UpdateFile(path, "first"); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	doc := strings.Replace(string(raw), "# Benchmarks\n", "# Benchmarks\n\nKept prose.\n", 1)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateFile(path, "second"); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(path)
	got := string(raw)
	if !strings.Contains(got, "Kept prose.") || !strings.Contains(got, "second") || strings.Contains(got, "first") {
		t.Errorf("after two updates:\n%s", got)
	}
}

// Troupe's variant is shown beside the shipped defaults, never judged in
// their place, nor compared as a peer.
func TestGoalsShowTheVariant(t *testing.T) {
	verdicts := Goals([]Result{
		result("S1", Null, 1000, time.Second), result("S1", Troupe, 600, 3*time.Second),
		result("S1", TroupeGangEvents, 950, 2*time.Second), result("S1", "volcano", 90, 2500*time.Millisecond),
	})
	share, ahead := verdicts[0], verdicts[1]
	if share.Met || !strings.Contains(share.Detail, "0.60× (600 vs 1000 pods/s); troupe-gang-events: 0.95× (950 pods/s)") {
		t.Errorf("null share: %+v", share)
	}
	if !ahead.Known || ahead.Met || !strings.Contains(ahead.Detail, "behind in 1 of 1 comparisons") {
		t.Errorf("ahead of peers: %+v", ahead)
	}
}

func TestMedian(t *testing.T) {
	run := func(mean float64, makespan time.Duration) Result { return result("S1", Troupe, mean, makespan) }
	boom := run(0, 0)
	boom.Err = errors.New("boom")
	tests := []struct {
		name         string
		runs         []Result
		wantMakespan time.Duration // identifies the run returned
		wantErr      bool
		wantCell     string
	}{
		{"one run", []Result{run(900, time.Second)}, time.Second, false, "900"},
		{"odd: the middle", []Result{run(1100, 1*time.Second), run(700, 2*time.Second), run(900, 3*time.Second)}, 3 * time.Second, false, "900 (700–1100)"},
		{"even: the lower middle", []Result{run(1100, 1*time.Second), run(700, 2*time.Second), run(900, 3*time.Second), run(1000, 4*time.Second)}, 3 * time.Second, false, "900 (700–1100)"},
		{"a failure is never hidden", []Result{run(1100, time.Second), boom, run(900, 3*time.Second)}, 0, true, "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Median(tc.runs)
			if got.Throughput.Makespan != tc.wantMakespan || (got.Err != nil) != tc.wantErr {
				t.Errorf("Median = run of makespan %v, error %v; want makespan %v, error %v", got.Throughput.Makespan, got.Err, tc.wantMakespan, tc.wantErr)
			}
			if cell := meanCell(got); cell != tc.wantCell {
				t.Errorf("mean cell %q, want %q", cell, tc.wantCell)
			}
		})
	}
}
