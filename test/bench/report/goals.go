package report

import (
	"fmt"
	"strings"
	"time"
)

// Placer names the goals compare. TroupeGangEvents is troupe-scheduler
// with --pod-scheduled-events=false; the goals judge Troupe as it ships,
// and show the variant beside.
const (
	Null             = "null"
	Troupe           = "troupe"
	TroupeGangEvents = "troupe-gang-events"
)

// isTroupe says whether a placer is troupe-scheduler, in any variant.
func isTroupe(placer string) bool { return strings.HasPrefix(placer, Troupe) }

// Goal thresholds, from the issue and the design.
const (
	// NullShareGoal is the least share of the null binder's mean rate
	// Troupe must reach in S1.
	NullShareGoal = 0.85
	// FlatCycleGoal is the most the mean cycle time may grow from the
	// smallest backlog to the largest in S3 and still count as flat.
	FlatCycleGoal = 1.5
	// NodeCostGoal is the most Troupe's decision CPU per pod in S4's
	// warm round may grow from S4 to S4x4 (four times the nodes) and
	// still count as independent of the node count.
	NodeCostGoal = 1.25
	// RulesCostGoal is the most Troupe's CPU per pod may grow from S1 to
	// S5 (the same gangs, with pod anti-affinity and topology spread), and
	// from T0 to T (the same gangs, with a required rack rule).
	RulesCostGoal = 1.5
)

// Verdict is one goal's outcome.
type Verdict struct {
	Goal   string
	Met    bool
	Detail string
	// Known is false when the runs needed were not made.
	Known bool
}

// String is "met", "not met", or "not run" when the runs needed were
// not made.
func (v Verdict) String() string {
	switch {
	case !v.Known:
		return "not run"
	case v.Met:
		return "met"
	}
	return "not met"
}

// index finds results by scenario and placer.
type index map[string]map[string]Result

func newIndex(results []Result) index {
	ix := index{}
	for _, r := range results {
		if ix[r.Scenario.Name] == nil {
			ix[r.Scenario.Name] = map[string]Result{}
		}
		ix[r.Scenario.Name][r.Placer] = r
	}
	return ix
}

func (ix index) get(scenario, placer string) (Result, bool) {
	r, ok := ix[scenario][placer]
	return r, ok && r.Err == nil
}

// Goals judges the results against the goals.
func Goals(results []Result) []Verdict {
	ix := newIndex(results)
	return []Verdict{
		nullShare(ix),
		aheadOfPeers(ix, results),
		noPartial(results),
		flatCycles(ix),
		nodeIndependent(ix),
		rulesCost(ix),
		topologyKept(ix),
		topologyVsVolcano(ix),
		topologyCost(ix),
		topologyUnderPressure(ix),
	}
}

// topologyUnderPressure judges Troupe against Volcano with HyperNodes on
// TM, where more gangs come than the racks hold: Troupe keeps the rule
// (none split), binds at least as many gangs whole, strands no more
// GPUs, and takes less time per gang bound.
func topologyUnderPressure(ix index) Verdict {
	v := Verdict{Goal: "On TM, Troupe keeps the rack rule and, against Volcano with HyperNodes, binds at least as many gangs whole, strands no more GPUs and takes less time per gang bound"}
	t, ok1 := ix.get("TM", Troupe)
	vc, ok2 := ix.get("TM", "volcano")
	if !ok1 || !ok2 || vc.Err != nil {
		return v
	}
	tb, vb := t.Scenario.Gangs-len(t.NeverUp), vc.Scenario.Gangs-len(vc.NeverUp)
	ts, vs := t.Quality.Stranding.StrandedGPUs, vc.Quality.Stranding.StrandedGPUs
	v.Known = true
	v.Met = t.Quality.Racks.Split == 0 && tb >= vb && ts <= vs && perGangBound(t) < perGangBound(vc)
	v.Detail = fmt.Sprintf("Troupe: %d gangs bound, %d split, %d GPUs stranded, %v per gang; Volcano: %d bound, %d split, %d stranded, %v per gang",
		tb, t.Quality.Racks.Split, ts, round(perGangBound(t)), vb, vc.Quality.Racks.Split, vs, round(perGangBound(vc)))
	return v
}

// topologyKept judges whether Troupe keeps T's required rule: every gang
// bound whole, none split across racks, read from the nodes' labels.
func topologyKept(ix index) Verdict {
	v := Verdict{Goal: "Troupe keeps T's required rack rule: every gang bound whole, none split across racks (from the nodes' labels)"}
	t, ok := ix.get("T", Troupe)
	if !ok {
		return v
	}
	unbound, split := len(t.NeverUp), t.Quality.Racks.Split
	v.Known, v.Met = true, unbound == 0 && split == 0 && t.Quality.Racks.Gangs == t.Scenario.Gangs
	v.Detail = fmt.Sprintf("%d of %d gangs bound whole, %d split across racks", t.Scenario.Gangs-unbound, t.Scenario.Gangs, split)
	if n, ok := ix.get("T", Null); ok {
		v.Detail += fmt.Sprintf("; the null binder, blind to racks: %d split", n.Quality.Racks.Split)
	}
	return v
}

// topologyVsVolcano judges Troupe against Volcano with HyperNodes on T:
// at least as good a placement (no more gangs unbound or split across
// racks, no more racks per gang) and a shorter makespan.
func topologyVsVolcano(ix index) Verdict {
	v := Verdict{Goal: "Troupe at least as good as Volcano with HyperNodes on T's placement (gangs unbound, split, racks per gang) and ahead on makespan"}
	t, ok1 := ix.get("T", Troupe)
	vc, ok2 := ix.get("T", "volcano")
	if !ok1 || !ok2 || vc.Err != nil {
		return v
	}
	tq, vq := t.Quality.Racks, vc.Quality.Racks
	asGood := len(t.NeverUp) <= len(vc.NeverUp) && tq.Split <= vq.Split && tq.MeanRacks() <= vq.MeanRacks()
	v.Known, v.Met = true, asGood && t.Throughput.Makespan < vc.Throughput.Makespan
	v.Detail = fmt.Sprintf("Troupe: %d unbound, %d split, %.2f racks per gang, makespan %v; Volcano: %d unbound, %d split, %.2f racks per gang, makespan %v",
		len(t.NeverUp), tq.Split, tq.MeanRacks(), round(t.Throughput.Makespan), len(vc.NeverUp), vq.Split, vq.MeanRacks(), round(vc.Throughput.Makespan))
	return v
}

// topologyCost judges what T's rule costs Troupe: its whole process's CPU
// time per pod in T against T0's (the same gangs without the rule), in
// the same run.
func topologyCost(ix index) Verdict {
	v := Verdict{Goal: fmt.Sprintf("Troupe's CPU per pod with T's rack rule at most %.1f× without (whole-process CPU per pod, T / T0)", RulesCostGoal)}
	plain, ok1 := ix.get("T0", Troupe)
	rules, ok2 := ix.get("T", Troupe)
	if !ok1 || !ok2 || plain.CPUPerPod() == 0 || rules.CPUPerPod() == 0 {
		return v
	}
	ratio := float64(rules.CPUPerPod()) / float64(plain.CPUPerPod())
	v.Known, v.Met = true, ratio <= RulesCostGoal
	v.Detail = fmt.Sprintf("%v per pod in T, %v in T0 (%.2f×)", round(rules.CPUPerPod()), round(plain.CPUPerPod()), ratio)
	return v
}

// rulesCost judges what placement rules cost Troupe: its whole process's
// CPU time per pod bound in S5 against S1's, in the same run.
func rulesCost(ix index) Verdict {
	v := Verdict{Goal: fmt.Sprintf("Troupe's CPU per pod with placement rules at most %.1f× without (whole-process CPU per pod, S5 / S1)", RulesCostGoal)}
	plain, ok1 := ix.get("S1", Troupe)
	rules, ok2 := ix.get("S5", Troupe)
	if !ok1 || !ok2 || plain.CPUPerPod() == 0 || rules.CPUPerPod() == 0 {
		return v
	}
	ratio := float64(rules.CPUPerPod()) / float64(plain.CPUPerPod())
	v.Known, v.Met = true, ratio <= RulesCostGoal
	v.Detail = fmt.Sprintf("%v per pod in S5, %v in S1 (%.2f×)", round(rules.CPUPerPod()), round(plain.CPUPerPod()), ratio)
	return v
}

func nullShare(ix index) Verdict {
	v := Verdict{Goal: fmt.Sprintf("Troupe at %.2f× the null binder or more in S1 (mean pods/s)", NullShareGoal)}
	t, ok1 := ix.get("S1", Troupe)
	n, ok2 := ix.get("S1", Null)
	if !ok1 || !ok2 || n.Throughput.Mean == 0 {
		return v
	}
	share := t.Throughput.Mean / n.Throughput.Mean
	v.Known, v.Met = true, share >= NullShareGoal
	v.Detail = fmt.Sprintf("%.2f× (%.0f vs %.0f pods/s)", share, t.Throughput.Mean, n.Throughput.Mean)
	if g, ok := ix.get("S1", TroupeGangEvents); ok {
		v.Detail += fmt.Sprintf("; %s: %.2f× (%.0f pods/s)", TroupeGangEvents, g.Throughput.Mean/n.Throughput.Mean, g.Throughput.Mean)
	}
	return v
}

// ahead says whether a beat b on a scenario: more gangs bound whole, then
// the shorter makespan.
func ahead(a, b Result) bool {
	if len(a.NeverUp) != len(b.NeverUp) {
		return len(a.NeverUp) < len(b.NeverUp)
	}
	return a.Throughput.Makespan < b.Throughput.Makespan
}

func aheadOfPeers(ix index, results []Result) Verdict {
	v := Verdict{Goal: "Troupe ahead of every peer in every scenario (fewer gangs left unbound, then shorter makespan)", Known: true, Met: true}
	var behind []string
	compared := 0
	for _, r := range results {
		if isTroupe(r.Placer) || r.Placer == Null {
			continue
		}
		t, ok := ix.get(r.Scenario.Name, Troupe)
		if !ok {
			continue
		}
		compared++
		if r.Err == nil && !ahead(t, r) {
			behind = append(behind, fmt.Sprintf("%s: %s (%v vs %v)", r.Scenario.Name, r.Placer, round(r.Throughput.Makespan), round(t.Throughput.Makespan)))
		}
	}
	switch {
	case compared == 0:
		v.Known, v.Met = false, false
	case len(behind) > 0:
		v.Met = false
		v.Detail = fmt.Sprintf("behind in %d of %d comparisons: %v", len(behind), compared, behind)
	default:
		v.Detail = fmt.Sprintf("ahead in all %d comparisons", compared)
	}
	return v
}

func noPartial(results []Result) Verdict {
	v := Verdict{Goal: "zero partial gangs (Troupe)"}
	partial := 0
	for _, r := range results {
		if r.Placer == Troupe && r.Err == nil {
			v.Known = true
			partial += len(r.Partial)
		}
	}
	if v.Known {
		v.Met = partial == 0
		v.Detail = fmt.Sprintf("%d partial gangs over Troupe's runs", partial)
	}
	return v
}

// BacklogBucket is the mean cycle and decision time, and decision CPU
// time, over the samples whose backlog fell in [Low, High) pods.
type BacklogBucket struct {
	Low, High       int
	Cycles          float64
	Mean            time.Duration
	MeanDecision    time.Duration
	MeanDecisionCPU time.Duration
}

// CycleBuckets splits a run's cycle samples into four backlog ranges of
// equal width, from none to the largest backlog seen, and gives each
// range's mean cycle time. Ranges with no cycle are left out.
func CycleBuckets(samples []CycleSample) []BacklogBucket {
	top := 0
	for _, s := range samples {
		top = max(top, s.Backlog)
	}
	if top == 0 {
		return nil
	}
	const n = 4
	width := (top + n) / n
	buckets := make([]BacklogBucket, n)
	cycle, decision, cpu := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range buckets {
		buckets[i].Low, buckets[i].High = i*width, (i+1)*width
	}
	for _, s := range samples {
		i := min(s.Backlog/width, n-1)
		buckets[i].Cycles += s.Cycles
		cycle[i] += s.CycleSeconds
		decision[i] += s.DecisionSeconds
		cpu[i] += s.DecisionCPUSeconds
	}
	var out []BacklogBucket
	for i, b := range buckets {
		if b.Cycles > 0 {
			b.Mean = secs(cycle[i] / b.Cycles)
			b.MeanDecision = secs(decision[i] / b.Cycles)
			b.MeanDecisionCPU = secs(cpu[i] / b.Cycles)
			out = append(out, b)
		}
	}
	return out
}

// flatCycles judges the decision's CPU time, for the reason
// nodeIndependent does: S3's cycles decide while the API server binds and
// deletes on the same two cores, so their wall-clock time is partly
// waiting for a CPU. Both are shown.
func flatCycles(ix index) Verdict {
	v := Verdict{Goal: fmt.Sprintf("Troupe's cycle time flat as S3's backlog grows (decision CPU time per cycle, largest/smallest backlog range ≤ %.1f×)", FlatCycleGoal)}
	t, ok := ix.get("S3", Troupe)
	if !ok {
		return v
	}
	b := CycleBuckets(t.Cycles)
	if len(b) < 2 {
		v.Detail = "too few cycle samples"
		return v
	}
	lo, hi := b[0], b[len(b)-1]
	if lo.MeanDecisionCPU == 0 {
		v.Detail = "no decision CPU time in the samples (troupe_scheduler_decision_cpu_seconds_total is Linux only)"
		return v
	}
	ratio := float64(hi.MeanDecisionCPU) / float64(lo.MeanDecisionCPU)
	v.Known, v.Met = true, ratio <= FlatCycleGoal
	v.Detail = fmt.Sprintf("%v at a backlog of %d–%d pods, %v at %d–%d pods (%.2f×); wall-clock decision %v and %v; whole cycles with their binds: %v and %v",
		round(lo.MeanDecisionCPU), lo.Low, lo.High, round(hi.MeanDecisionCPU), hi.Low, hi.High, ratio,
		round(lo.MeanDecision), round(hi.MeanDecision), round(lo.Mean), round(hi.Mean))
	return v
}

// nodeIndependent judges S4's warm round, where the scheduler has read
// the cluster already: what a pod costs it. The first round also reads
// every node once, a cost per node, not per pod; the detail shows it. CPU
// time rather than wall-clock time, because the warm round's pods arrive
// while the harness creates them, and on two cores the decisions then
// wait for a CPU.
func nodeIndependent(ix index) Verdict {
	v := Verdict{Goal: fmt.Sprintf("Troupe's cost per pod independent of the node count (S4's warm round: decision CPU time per pod, S4x4 / S4 ≤ %.2f×)", NodeCostGoal)}
	small, ok1 := ix.get("S4", Troupe)
	big, ok2 := ix.get("S4x4", Troupe)
	if !ok1 || !ok2 || small.Warm == nil || big.Warm == nil || small.Warm.DecisionCPUPerPod() == 0 {
		return v
	}
	sw, bw := small.Warm, big.Warm
	ratio := float64(bw.DecisionCPUPerPod()) / float64(sw.DecisionCPUPerPod())
	v.Known, v.Met = true, ratio <= NodeCostGoal
	v.Detail = fmt.Sprintf("%v per pod at %d nodes, %v at %d nodes (%.2f×); wall-clock %v and %v; the first round, which also reads every node once: %v and %v per pod",
		round(sw.DecisionCPUPerPod()), small.Scenario.Nodes(), round(bw.DecisionCPUPerPod()), big.Scenario.Nodes(), ratio,
		round(sw.DecisionPerPod()), round(bw.DecisionPerPod()), round(small.DecisionPerPod()), round(big.DecisionPerPod()))
	return v
}

// round shortens a duration for tables: 3 significant digits or so.
func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
