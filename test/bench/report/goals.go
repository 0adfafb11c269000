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

// Goal thresholds. Each goal is defined once, in docs/benchmarks.md
// ("Goals") and here; a change to one is a new goal, not a new reading of
// the old one.
const (
	// CeilingGoal is the most troupe-scheduler's median makespan may be
	// over the ceiling's (the null binder's best median makespan over its
	// binds in flight) in S1 and S6x5.
	CeilingGoal = 1.15
	// NodeGrowthGoal is the most troupe-scheduler's whole-process CPU per
	// pod may grow from S6 (1000 nodes) to S6x5 (5000 nodes, the same
	// shape).
	NodeGrowthGoal = 1.25
	// TickGoal is the coarsest a CPU time a goal reads may be: one /proc
	// tick (10 ms) over the time, at most 5%.
	TickGoal = 0.05
	// FlatCycleGoal is the most the mean decision CPU time per cycle may
	// differ between any two of S3's backlog ranges.
	FlatCycleGoal = 1.5
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
	// NoTarget marks a figure reported with no target (writes per pod).
	NoTarget bool
}

// String is "met", "not met", "reported" for a figure with no target, or
// "not run" when the runs needed were not made.
func (v Verdict) String() string {
	switch {
	case !v.Known:
		return "not run"
	case v.NoTarget:
		return "reported"
	case v.Met:
		return "met"
	}
	return "not met"
}

// index finds each placer's runs of each scenario.
type index map[string]map[string]Runs

func newIndex(groups []Runs) index {
	return indexBy(groups, func(g Runs) (string, string) { return g.Scenario.Name, g.Placer })
}

// indexBy files items by scenario and placer, as key says.
func indexBy[T any](items []T, key func(T) (scenario, placer string)) map[string]map[string]T {
	ix := map[string]map[string]T{}
	for _, it := range items {
		sc, p := key(it)
		if ix[sc] == nil {
			ix[sc] = map[string]T{}
		}
		ix[sc][p] = it
	}
	return ix
}

// get returns a placer's runs of a scenario, if it ran it.
func (ix index) get(scenario, placer string) (Runs, bool) {
	g, ok := ix[scenario][placer]
	return g, ok
}

// troupeAndVolcano returns troupe-scheduler's and Volcano's runs of a
// scenario; ok is false unless both ran it.
func (ix index) troupeAndVolcano(scenario string) (t, vc Runs, ok bool) {
	t, ok1 := ix.get(scenario, Troupe)
	vc, ok2 := ix.get(scenario, "volcano")
	return t, vc, ok1 && ok2
}

// nulls are the null binder's runs of a scenario, at every number of
// binds in flight.
func (ix index) nulls(scenario string) []Runs {
	var out []Runs
	for _, p := range placerOrder(ix, scenario) {
		if isNull(p) {
			out = append(out, ix[scenario][p])
		}
	}
	return out
}

// failuresOf lists the failed runs among groups.
func failuresOf(groups ...Runs) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.Failures()...)
	}
	return out
}

// failedVerdict is v not met because runs it reads failed: a failed run
// of any placer fails every goal it feeds, so that a failure never counts
// for Troupe, nor drops out of a goal.
func failedVerdict(v Verdict, fails []string) Verdict {
	v.Known, v.Met = true, false
	v.Detail = fmt.Sprintf("%d failed runs: %s", len(fails), strings.Join(fails, "; "))
	return v
}

// judge finishes a goal over the runs it read: not run without them, not
// met if one of them failed, else what met says.
func judge(v Verdict, read []Runs, met bool, detail string) Verdict {
	if len(read) == 0 {
		return v
	}
	if fails := failuresOf(read...); len(fails) > 0 {
		v = failedVerdict(v, fails)
		if detail != "" {
			v.Detail += "; " + detail
		}
		return v
	}
	v.Known, v.Met, v.Detail = true, met, detail
	return v
}

// over says by how much a ratio passes its ceiling: "" within it.
func over(ratio, goal float64) string {
	if ratio <= goal {
		return ""
	}
	return fmt.Sprintf(", %.0f%% over the goal's %.2f×", 100*(ratio/goal-1), goal)
}

// Goals judges the runs against the goals, every run of every placer
// (each placer's runs of a scenario as one group, figures their medians).
func Goals(results []Result) []Verdict {
	groups := Group(results)
	ix := newIndex(groups)
	return []Verdict{
		nearCeiling(ix, groups),
		aheadOfPeers(ix, groups),
		noPartial(groups),
		nodeGrowth(ix),
		writesReported(groups),
		flatCycles(ix),
		rulesCost(ix),
		topologyKept(ix),
		topologyVsVolcano(ix),
		topologyCost(ix),
		topologyUnderPressure(ix),
		topologyStream(ix),
	}
}

// CeilingScenarios are the scenarios nearCeiling judges.
var CeilingScenarios = []string{"S1", "S6x5"}

// nearCeiling judges troupe-scheduler's median makespan against the
// ceiling's in each of CeilingScenarios; every one must have run.
func nearCeiling(ix index, groups []Runs) Verdict {
	v := Verdict{Goal: fmt.Sprintf("troupe-scheduler's makespan at most %.2f× the ceiling's in %s (medians; the ceiling: the null binder's best over its binds in flight)",
		CeilingGoal, strings.Join(CeilingScenarios, " and "))}
	var read []Runs
	var parts []string
	met := true
	for _, sc := range CeilingScenarios {
		// Every width of the sweep feeds the ceiling, a failed one too.
		read = append(read, ix.nulls(sc)...)
		t, ok := ix.get(sc, Troupe)
		if ok {
			read = append(read, t)
		}
		ceil, okc := Ceiling(groups, sc)
		if !ok || !okc {
			met = false
			parts = append(parts, sc+": no measured run of troupe and of the null binder")
			continue
		}
		tm, cm := t.Stat(makespan).Median, ceil.Stat(makespan).Median
		ratio := tm / cm
		met = met && ratio <= CeilingGoal
		parts = append(parts, fmt.Sprintf("%s: %.2f× (%v against %s's %v%s)", sc, ratio, round(secs(tm)), ceil.Placer, round(secs(cm)), over(ratio, CeilingGoal)))
	}
	return judge(v, read, met, strings.Join(parts, "; "))
}

// ahead says whether a beat b on a scenario, by their medians: fewer
// gangs left unbound, then the shorter makespan.
func ahead(a, b Runs) bool {
	if ua, ub := a.Stat(unbound).Median, b.Stat(unbound).Median; ua != ub {
		return ua < ub
	}
	return a.Stat(makespan).Median < b.Stat(makespan).Median
}

func aheadOfPeers(ix index, groups []Runs) Verdict {
	v := Verdict{Goal: "troupe-scheduler ahead of every peer in every scenario by makespan (medians; where gangs are left unbound, fewer unbound first)"}
	var read []Runs
	var behind []string
	for _, g := range groups {
		if isTroupe(g.Placer) || isNull(g.Placer) {
			continue
		}
		t, ok := ix.get(g.Scenario.Name, Troupe)
		if !ok {
			continue
		}
		read = append(read, t, g)
		// A placer with no run measured has failed; judge says so.
		if g.Stat(makespan).N > 0 && !ahead(t, g) {
			tm, pm := t.Stat(makespan).Median, g.Stat(makespan).Median
			behind = append(behind, fmt.Sprintf("%s: %s %v against troupe's %v (%.2f×), %.0f against %.0f gangs unbound",
				g.Scenario.Name, g.Placer, round(secs(pm)), round(secs(tm)), tm/max(pm, 1e-9), g.Stat(unbound).Median, t.Stat(unbound).Median))
		}
	}
	compared := len(read) / 2
	detail := fmt.Sprintf("ahead in all %d comparisons", compared)
	if len(behind) > 0 {
		detail = fmt.Sprintf("behind in %d of %d comparisons: %s", len(behind), compared, strings.Join(behind, "; "))
	}
	return judge(v, read, len(behind) == 0, detail)
}

// noPartial judges troupe-scheduler's every run: no gang partly bound at
// the end, nor for longer than the grace during the run.
func noPartial(groups []Runs) Verdict {
	v := Verdict{Goal: "0 partial gangs in every run of troupe-scheduler (none partly bound at the end, none for longer than the grace during a run)"}
	var read []Runs
	runs, during := 0, 0
	var longest time.Duration
	var where []string
	for _, g := range groups {
		if g.Placer != Troupe {
			continue
		}
		read = append(read, g)
		for _, r := range g.All {
			runs++
			during += len(r.PartialDuring)
			for _, e := range r.PartialDuring {
				longest = max(longest, e.Duration())
			}
			if len(r.PartialDuring) > 0 {
				where = append(where, fmt.Sprintf("%s: %d", g.Scenario.Name, len(r.PartialDuring)))
			}
		}
	}
	detail := fmt.Sprintf("%d runs: none partial at the end; %d partly bound for longer than the grace during a run", runs, during)
	if during > 0 {
		detail += fmt.Sprintf(" (%s; the longest %v)", strings.Join(where, ", "), round(longest))
	}
	return judge(v, read, during == 0, detail)
}

// GrowthScenarios are the scenarios of 1000 and 5000 nodes of one shape
// that nodeGrowth and the growth table compare.
var GrowthScenarios = [2]string{"S6", "S6x5"}

// nodeGrowth judges troupe-scheduler's whole-process CPU per pod at 5000
// nodes against 1000, both fine enough for the tick.
func nodeGrowth(ix index) Verdict {
	small, big := GrowthScenarios[0], GrowthScenarios[1]
	v := Verdict{Goal: fmt.Sprintf("troupe-scheduler's whole-process CPU per pod at most %.2f× from 1000 to 5000 nodes (%s / %s, medians, each CPU time at least %.0f ticks)",
		NodeGrowthGoal, big, small, 1/TickGoal)}
	s, b, ratio, ok := troupeCPU(ix, small, big)
	switch {
	case !ok:
		return v
	case ratio == 0:
		return judge(v, []Runs{s, b}, false, "no CPU time measured at 1000 nodes")
	}
	sc, bc := s.Stat(cpuPerPod).Median, b.Stat(cpuPerPod).Median
	coarse := max(s.Stat(tickShare).Max, b.Stat(tickShare).Max)
	detail := fmt.Sprintf("%v per pod at %d nodes, %v at %d (%.2f×%s); the coarsest CPU time is %.1f%% of a tick",
		round(secs(sc)), s.Scenario.Nodes(), round(secs(bc)), b.Scenario.Nodes(), ratio, over(ratio, NodeGrowthGoal), 100*coarse)
	if coarse > TickGoal {
		detail += fmt.Sprintf(", coarser than the %.0f%% the goal needs", 100*TickGoal)
	}
	return judge(v, []Runs{s, b}, ratio <= NodeGrowthGoal && coarse <= TickGoal, detail)
}

// writesReported reports troupe-scheduler's API writes per pod in each
// scenario: no target beyond the fewest that keep the events a user needs.
func writesReported(groups []Runs) Verdict {
	v := Verdict{Goal: "troupe-scheduler's API writes per pod (no target: the fewest that keep the events a user needs)", NoTarget: true}
	var parts []string
	for _, g := range groups {
		if g.Placer == Troupe {
			if s := g.Stat(writesPerPod); s.N > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2f", g.Scenario.Name, s.Median))
			}
		}
	}
	if len(parts) > 0 {
		v.Known, v.Detail = true, strings.Join(parts, ", ")
	}
	return v
}

// topologyUnderPressure judges Troupe against Volcano with HyperNodes on
// TM, where more gangs come than the racks hold: Troupe keeps the rule
// (none split in any run), binds at least as many gangs whole, strands no
// more GPUs, and takes less time per gang bound (medians).
func topologyUnderPressure(ix index) Verdict {
	v := Verdict{Goal: "On TM, Troupe keeps the rack rule and, against Volcano with HyperNodes, binds at least as many gangs whole, strands no more GPUs and takes less time per gang bound"}
	t, vc, ok := ix.troupeAndVolcano("TM")
	if !ok {
		return v
	}
	bound := func(r Result) float64 { return float64(r.Scenario.Gangs - len(r.NeverUp)) }
	stranded := func(r Result) float64 { return float64(r.Quality.Stranding.StrandedGPUs) }
	perGang := func(r Result) float64 { return perGangBound(r).Seconds() }
	tb, vb := t.Stat(bound).Median, vc.Stat(bound).Median
	ts, vs := t.Stat(stranded).Median, vc.Stat(stranded).Median
	tp, vp := t.Stat(perGang).Median, vc.Stat(perGang).Median
	met := t.Stat(splitGangs).Max == 0 && tb >= vb && ts <= vs && tp < vp
	return judge(v, []Runs{t, vc}, met, fmt.Sprintf("Troupe: %.0f gangs bound, %.0f split at most, %.0f GPUs stranded, %v per gang; Volcano: %.0f bound, %.0f split, %.0f stranded, %v per gang",
		tb, t.Stat(splitGangs).Max, ts, round(secs(tp)), vb, vc.Stat(splitGangs).Median, vs, round(secs(vp))))
}

// topologyStream judges Troupe against Volcano with HyperNodes on TS, the
// gangs arriving over time and ending: Troupe splits no gang in any run
// and, by medians, binds at least as many of the arrived gangs whole,
// strands no more GPUs (each run's figure the median of its samples) and
// has a shorter wait per gang.
func topologyStream(ix index) Verdict {
	v := Verdict{Goal: "TS against Volcano: troupe-scheduler splits no gang in any run, and by medians binds at least as many gangs whole, strands no more GPUs (median of samples) and has a shorter median wait per gang than Volcano with HyperNodes"}
	t, vc, ok := ix.troupeAndVolcano("TS")
	if !ok {
		return v
	}
	tb, vb := t.Stat(streamBound).Median, vc.Stat(streamBound).Median
	ts, vs := t.Stat(streamStranded).Median, vc.Stat(streamStranded).Median
	tw, vw := t.Stat(streamWait).Median, vc.Stat(streamWait).Median
	split := t.Stat(splitGangs).Max
	met := split == 0 && tb >= vb && ts <= vs && tw < vw
	return judge(v, []Runs{t, vc}, met, fmt.Sprintf("Troupe: %.0f of %.0f gangs bound whole, %.0f split at most, %.0f GPUs stranded, wait %v; Volcano: %.0f of %.0f bound, %.0f split, %.0f stranded, wait %v",
		tb, t.Stat(streamArrived).Median, split, ts, round(secs(tw)), vb, vc.Stat(streamArrived).Median, vc.Stat(splitGangs).Max, vs, round(secs(vw))))
}

// topologyKept judges whether Troupe keeps T's required rule in every
// run: every gang bound whole, none split across racks, read from the
// nodes' labels.
func topologyKept(ix index) Verdict {
	v := Verdict{Goal: "Troupe keeps T's required rack rule: every gang bound whole, none split across racks, in every run (from the nodes' labels)"}
	t, ok := ix.get("T", Troupe)
	if !ok {
		return v
	}
	unboundMax := t.Stat(unbound).Max
	split := t.Stat(func(r Result) float64 { return float64(r.Quality.Racks.Split) }).Max
	judged := t.Stat(func(r Result) float64 { return float64(r.Quality.Racks.Gangs) }).Min
	detail := fmt.Sprintf("at most %.0f of %d gangs unbound and %.0f split across racks in a run", unboundMax, t.Scenario.Gangs, split)
	if n, ok := ix.get("T", Null+"-16"); ok {
		detail += fmt.Sprintf("; the null binder, blind to racks: %.0f split", n.Stat(func(r Result) float64 { return float64(r.Quality.Racks.Split) }).Median)
	}
	return judge(v, []Runs{t}, unboundMax == 0 && split == 0 && int(judged) == t.Scenario.Gangs, detail)
}

// topologyVsVolcano judges Troupe against Volcano with HyperNodes on T:
// at least as good a placement (no more gangs unbound or split across
// racks, no more racks per gang) and a shorter makespan, by medians.
func topologyVsVolcano(ix index) Verdict {
	v := Verdict{Goal: "Troupe at least as good as Volcano with HyperNodes on T's placement (gangs unbound, split, racks per gang) and ahead on makespan"}
	t, vc, ok := ix.troupeAndVolcano("T")
	if !ok {
		return v
	}
	split := func(r Result) float64 { return float64(r.Quality.Racks.Split) }
	racks := func(r Result) float64 { return r.Quality.Racks.MeanRacks() }
	tu, vu := t.Stat(unbound).Median, vc.Stat(unbound).Median
	ts, vs := t.Stat(split).Median, vc.Stat(split).Median
	tr, vr := t.Stat(racks).Median, vc.Stat(racks).Median
	tm, vm := t.Stat(makespan).Median, vc.Stat(makespan).Median
	met := tu <= vu && ts <= vs && tr <= vr && tm < vm
	return judge(v, []Runs{t, vc}, met, fmt.Sprintf("Troupe: %.0f unbound, %.0f split, %.2f racks per gang, makespan %v; Volcano: %.0f unbound, %.0f split, %.2f racks per gang, makespan %v",
		tu, ts, tr, round(secs(tm)), vu, vs, vr, round(secs(vm))))
}

// cpuRatio judges Troupe's whole-process CPU per pod in scenario with
// rules against plain (the same gangs without them), by medians.
func cpuRatio(ix index, goal, rules, plain string) Verdict {
	v := Verdict{Goal: goal}
	p, r, ratio, ok := troupeCPU(ix, plain, rules)
	switch {
	case !ok:
		return v
	case ratio == 0:
		return judge(v, []Runs{p, r}, false, "no CPU time measured in "+plain)
	}
	pc, rc := p.Stat(cpuPerPod).Median, r.Stat(cpuPerPod).Median
	return judge(v, []Runs{p, r}, ratio <= RulesCostGoal, fmt.Sprintf("%v per pod in %s, %v in %s (%.2f×%s)",
		round(secs(rc)), rules, round(secs(pc)), plain, ratio, over(ratio, RulesCostGoal)))
}

// troupeCPU reads troupe-scheduler's runs of two scenarios and the ratio
// of their median whole-process CPU per pod, other's over base's (0 when
// base has none); ok is false when either was not run.
func troupeCPU(ix index, base, other string) (b, o Runs, ratio float64, ok bool) {
	b, ok1 := ix.get(base, Troupe)
	o, ok2 := ix.get(other, Troupe)
	if !ok1 || !ok2 {
		return b, o, 0, false
	}
	if bc := b.Stat(cpuPerPod).Median; bc > 0 {
		ratio = o.Stat(cpuPerPod).Median / bc
	}
	return b, o, ratio, true
}

// topologyCost judges what T's rule costs Troupe: T against T0.
func topologyCost(ix index) Verdict {
	return cpuRatio(ix, fmt.Sprintf("Troupe's CPU per pod with T's rack rule at most %.1f× without (whole-process CPU per pod, T / T0)", RulesCostGoal), "T", "T0")
}

// rulesCost judges what placement rules cost Troupe: S5 against S1.
func rulesCost(ix index) Verdict {
	return cpuRatio(ix, fmt.Sprintf("Troupe's CPU per pod with placement rules at most %.1f× without (whole-process CPU per pod, S5 / S1)", RulesCostGoal), "S5", "S1")
}

// BacklogBucket is the mean cycle and decision time, and decision CPU
// time, over the samples whose backlog fell in [Low, High) pods.
type BacklogBucket struct {
	Low, High       int
	Cycles          float64
	Mean            time.Duration
	MeanDecision    time.Duration
	MeanDecisionCPU time.Duration
	// IdleCycles are the cycles of the range's samples in which nothing
	// was bound, and MeanIdleDecisionCPU their mean decision CPU time: what
	// a cycle costs with the backlog alone, without the placements of a
	// wave, whose cost the means above include wherever it falls. A
	// diagnostic beside the goal, which reads MeanDecisionCPU.
	IdleCycles          float64
	MeanIdleDecisionCPU time.Duration
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
	cycle, decision, cpu, idleCPU := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range buckets {
		buckets[i].Low, buckets[i].High = i*width, (i+1)*width
	}
	for _, s := range samples {
		i := min(s.Backlog/width, n-1)
		buckets[i].Cycles += s.Cycles
		cycle[i] += s.CycleSeconds
		decision[i] += s.DecisionSeconds
		cpu[i] += s.DecisionCPUSeconds
		if s.Binds == 0 {
			buckets[i].IdleCycles += s.Cycles
			idleCPU[i] += s.DecisionCPUSeconds
		}
	}
	var out []BacklogBucket
	for i, b := range buckets {
		if b.Cycles > 0 {
			b.Mean = secs(cycle[i] / b.Cycles)
			b.MeanDecision = secs(decision[i] / b.Cycles)
			b.MeanDecisionCPU = secs(cpu[i] / b.Cycles)
			if b.IdleCycles > 0 {
				b.MeanIdleDecisionCPU = secs(idleCPU[i] / b.IdleCycles)
			}
			out = append(out, b)
		}
	}
	return out
}

// flatCycles judges the decision's CPU time per cycle across every one of
// S3's backlog ranges (the largest mean over the smallest, wherever they
// fall), in troupe-scheduler's run of median makespan; CPU rather than
// wall-clock time, because S3's cycles decide while the API server binds
// and deletes on the same two cores. Both are shown.
func flatCycles(ix index) Verdict {
	v := Verdict{Goal: fmt.Sprintf("Troupe's cycle time flat as S3's backlog grows (decision CPU time per cycle, largest/smallest over every backlog range ≤ %.1f×)", FlatCycleGoal)}
	g, ok := ix.get("S3", Troupe)
	if !ok {
		return v
	}
	b := CycleBuckets(g.Typical().Cycles)
	if len(b) < 2 {
		return judge(v, []Runs{g}, false, "too few cycle samples")
	}
	lo, hi := b[0], b[0]
	for _, x := range b {
		if x.MeanDecisionCPU < lo.MeanDecisionCPU {
			lo = x
		}
		if x.MeanDecisionCPU > hi.MeanDecisionCPU {
			hi = x
		}
	}
	if lo.MeanDecisionCPU == 0 {
		v.Detail = "no decision CPU time in the samples (troupe_scheduler_decision_cpu_seconds_total is Linux only)"
		return v
	}
	ratio := float64(hi.MeanDecisionCPU) / float64(lo.MeanDecisionCPU)
	return judge(v, []Runs{g}, ratio <= FlatCycleGoal, fmt.Sprintf("the least %v at a backlog of %d–%d pods, the most %v at %d–%d pods (%.2f×%s) over %d ranges; wall-clock decision %v and %v",
		round(lo.MeanDecisionCPU), lo.Low, lo.High, round(hi.MeanDecisionCPU), hi.Low, hi.High, ratio, over(ratio, FlatCycleGoal), len(b),
		round(lo.MeanDecision), round(hi.MeanDecision)))
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
