package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-ml/troupe/test/bench/measure"
)

// Meta is what the report says about how the results were made.
type Meta struct {
	Command string
	Date    time.Time
	Machine []string
	// Settings are the harness's settings, one line each.
	Settings []string
}

// Markdown renders the results of every run: the settings, one table per
// scenario (each figure the median of each placer's runs, with the
// range), how the 5000-node scenario grows from 1000 nodes, the
// diagnostic tables (each placer's run of median makespan), and the
// goals.
func Markdown(w io.Writer, meta Meta, results []Result) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("Command:\n\n```sh\n%s\n```\n\n", meta.Command)
	p("Run on %s.\n\n", meta.Date.UTC().Format("2006-01-02 15:04 MST"))
	for _, m := range meta.Machine {
		p("- %s\n", m)
	}
	for _, s := range meta.Settings {
		p("- %s\n", s)
	}
	p("\n")

	groups := Group(results)
	for _, name := range scenarioOrder(results) {
		scenarioTable(w, groups, name)
	}
	growthTable(w, newIndex(groups))
	streamTable(w, groups)

	typical := make([]Result, 0, len(groups))
	for _, g := range groups {
		typical = append(typical, g.Typical())
	}
	ix := newRunIndex(typical)
	p("### Details of each placer's run of median makespan\n\nThe tables below show one run per placer and scenario: the one of median makespan.\n\n")
	qualityTable(w, typical)
	rulesTable(w, ix, typical)
	racksTable(w, ix, typical)
	strandingTable(w, typical)
	streamDetailTable(w, typical)
	cycleTable(w, ix)
	nodeCostTable(w, ix)
	writesTable(w, typical)
	troupeTable(w, typical)
	warmTable(w, typical)

	p("### Goals\n\nDefined in [How it measures: the goals](#the-goals); every run of every placer counts, and a failed run fails every goal it feeds.\n\n| goal | verdict | detail |\n| --- | --- | --- |\n")
	for _, v := range Goals(results) {
		verdict := v.String()
		if v.Known && !v.Met && !v.NoTarget {
			verdict = "**" + verdict + "**"
		}
		p("| %s | %s | %s |\n", v.Goal, verdict, v.Detail)
	}
	p("\n")
	for _, r := range typical {
		if r.Profile != "" {
			p("<details><summary>CPU profile of %s in %s</summary>\n\n```\n%s\n```\n\n</details>\n\n", r.Placer, r.Scenario.Name, r.Profile)
		}
	}
}

// runIndex finds one result by scenario and placer.
type runIndex map[string]map[string]Result

func newRunIndex(results []Result) runIndex {
	return indexBy(results, func(r Result) (string, string) { return r.Scenario.Name, r.Placer })
}

// get returns a placer's result of a scenario, if it was measured.
func (ix runIndex) get(scenario, placer string) (Result, bool) {
	r, ok := ix[scenario][placer]
	return r, ok && r.Err == nil
}

// scenarioOrder is the scenarios in the order they first appear.
func scenarioOrder(results []Result) []string {
	var out []string
	for _, r := range results {
		if !slices.Contains(out, r.Scenario.Name) {
			out = append(out, r.Scenario.Name)
		}
	}
	return out
}

// scenarioTable shows every placer's runs of a scenario: makespan first,
// against the ceiling, then the rest; each figure the median of the runs
// with its range.
func scenarioTable(w io.Writer, groups []Runs, name string) {
	var rows []Runs
	for _, g := range groups {
		if g.Scenario.Name == name {
			rows = append(rows, g)
		}
	}
	s := rows[0].Scenario
	fmt.Fprintf(w, "### %s: %s\n\n%s.\n\n", name, s.Title, s.Describe())
	ceil, hasCeiling := Ceiling(groups, name)
	if hasCeiling {
		fmt.Fprintf(w, "Ceiling: %s, makespan %v.\n\n", ceil.Placer, round(secs(ceil.Stat(makespan).Median)))
	}
	fmt.Fprintf(w, "| placer | makespan | × ceiling | pods/s over makespan | first bind | CPU/pod | CPU tick | peak RSS (MiB) | API writes/pod | partial > grace during | partial at end | unbound | failed runs |\n")
	fmt.Fprintf(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	var fails, notes []string
	for _, g := range rows {
		fails = append(fails, g.Failures()...)
		notes = append(notes, g.Notes()...)
		failed := fmt.Sprintf("%d of %d", len(g.Failures()), len(g.All))
		m := g.Stat(makespan)
		if m.N == 0 {
			fmt.Fprintf(w, "| %s | failed |%s %s |\n", g.Placer, strings.Repeat(" |", 10), failed)
			continue
		}
		vsCeiling := ""
		if hasCeiling {
			vsCeiling = fmt.Sprintf("%.2f", m.Median/ceil.Stat(makespan).Median)
		}
		partialEnd := g.Stat(func(r Result) float64 { return float64(len(r.Partial)) })
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.1f%% | %s | %s | %s | %s | %s | %s |\n",
			g.Placer, durCell(m), vsCeiling, numCell(g.Stat(overMakespan), "%.0f"), durCell(g.Stat(firstBind)),
			durCell(g.Stat(cpuPerPod)), 100*g.Stat(tickShare).Max, numCell(mib(g.Stat(peakRSS)), "%.0f"), numCell(g.Stat(writesPerPod), "%.2f"),
			partialCell(g), numCell(partialEnd, "%.0f"), numCell(g.Stat(unbound), "%.0f"), failed)
	}
	fmt.Fprintln(w)
	for _, f := range fails {
		fmt.Fprintf(w, "- failed: %s\n", f)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "- note: %s\n", n)
	}
	if len(fails)+len(notes) > 0 {
		fmt.Fprintln(w)
	}
}

// partialCell is the median count of gangs partly bound for longer than
// the grace during a run, and the longest such time over every run.
func partialCell(g Runs) string {
	cell := numCell(g.Stat(partialDuring), "%.0f")
	var longest time.Duration
	for _, r := range g.measured() {
		for _, e := range r.PartialDuring {
			longest = max(longest, e.Duration())
		}
	}
	if longest > 0 {
		cell += fmt.Sprintf(", longest %v", round(longest))
	}
	return cell
}

// growthTable shows how each placer's makespan, CPU per pod and peak
// memory grow from 1000 to 5000 nodes of one shape (GrowthScenarios).
func growthTable(w io.Writer, ix index) {
	small, big := GrowthScenarios[0], GrowthScenarios[1]
	if ix[small] == nil || ix[big] == nil {
		return
	}
	fmt.Fprintf(w, "### From 1000 to 5000 nodes (%s, %s)\n\nThe same shape at five times the nodes and gangs; medians.\n\n", small, big)
	fmt.Fprintf(w, "| placer | makespan, 1000 nodes | 5000 nodes | × | CPU/pod, 1000 nodes | 5000 nodes | × | peak RSS (MiB), 1000 nodes | 5000 nodes | × |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	ratio := func(a, b float64) string {
		if a == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f", b/a)
	}
	for _, placer := range placerOrder(ix, small) {
		s, ok1 := ix.get(small, placer)
		b, ok2 := ix.get(big, placer)
		if !ok1 || !ok2 {
			continue
		}
		sm, bm := s.Stat(makespan).Median, b.Stat(makespan).Median
		sc, bc := s.Stat(cpuPerPod).Median, b.Stat(cpuPerPod).Median
		sr, br := mib(s.Stat(peakRSS)).Median, mib(b.Stat(peakRSS)).Median
		fmt.Fprintf(w, "| %s | %v | %v | %s | %v | %v | %s | %.0f | %.0f | %s |\n", placer, round(secs(sm)), round(secs(bm)), ratio(sm, bm),
			round(secs(sc)), round(secs(bc)), ratio(sc, bc), sr, br, ratio(sr, br))
	}
	fmt.Fprintln(w)
}

// streamTable shows, for TS, what each placer made of gangs arriving over
// time and ending: the gangs bound whole of those that arrived, any split
// across racks, each gang's wait from its arrival to bound whole (the
// median and p90 of a run's gangs), and the GPUs stranded, sampled while
// gangs waited (the median and the largest of a run's samples); each
// figure the median of the runs, with the range.
func streamTable(w io.Writer, groups []Runs) {
	var rows []Runs
	for _, g := range groups {
		if g.Scenario.Name == "TS" && g.Stat(streamArrived).N > 0 {
			rows = append(rows, g)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Topology stream (TS)\n\nGangs arriving during the run and deleted %v after they are bound whole; medians of the runs, with the range. "+
		"Wait: from a gang's arrival to its last pod bound (to the run's end for one never bound), median and p90 of the run's gangs. "+
		"GPUs stranded: free GPUs no waiting gang can use, sampled every %v while some gang waited, the median and largest of the run's samples.\n\n",
		rows[0].Scenario.Hold, measure.StrandingTick)
	fmt.Fprintf(w, "| placer | gangs bound whole | of arrived | split across racks | wait, median | wait, p90 | GPUs stranded, median | GPUs stranded, max | samples | makespan | CPU/pod |\n")
	fmt.Fprintf(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, g := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.Placer,
			numCell(g.Stat(streamBound), "%.0f"), numCell(g.Stat(streamArrived), "%.0f"), numCell(g.Stat(splitGangs), "%.0f"),
			durCell(g.Stat(streamWait)), durCell(g.Stat(streamWaitP90)), numCell(g.Stat(streamStranded), "%.0f"), numCell(g.Stat(strandedMax), "%.0f"),
			numCell(g.Stat(strandingSamples), "%.0f"), durCell(g.Stat(makespan)), durCell(g.Stat(cpuPerPod)))
	}
	fmt.Fprintln(w)
}

// where are the results that keep says to keep.
func where(results []Result, keep func(Result) bool) []Result {
	var out []Result
	for _, r := range results {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// rulesTable shows, for S5, which placers kept the rules the pods carry
// and what the rules cost them beside S1.
func rulesTable(w io.Writer, ix runIndex, results []Result) {
	rows := where(results, func(r Result) bool { return r.Scenario.Name == "S5" && r.Err == nil })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Placement rules (S5)\n\n")
	fmt.Fprintf(w, "| placer | gangs bound whole | gangs breaking a rule | CPU/pod | CPU/pod in S1 | × S1 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		s1, vs := "", ""
		if plain, ok := ix.get("S1", r.Placer); ok && plain.CPUPerPod() > 0 {
			s1 = round(plain.CPUPerPod()).String()
			vs = fmt.Sprintf("%.2f", float64(r.CPUPerPod())/float64(plain.CPUPerPod()))
		}
		fmt.Fprintf(w, "| %s | %d / %d | %d | %v | %s | %s |\n", r.Placer, r.Scenario.Gangs-len(r.NeverUp), r.Scenario.Gangs,
			r.Quality.RuleBreaches, round(r.CPUPerPod()), s1, vs)
	}
	fmt.Fprintln(w)
}

// racksTable shows, for T and T0, how each placer used the racks: T's
// gangs must each keep their workers in one rack (required), T0's carry
// no rule; and what the rule costs beside T0.
func racksTable(w io.Writer, ix runIndex, results []Result) {
	rows := where(results, func(r Result) bool { return (r.Scenario.Name == "T" || r.Scenario.Name == "T0") && r.Err == nil })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Topology (T, T0)\n\n")
	fmt.Fprintf(w, "| scenario | placer | gangs bound whole | gangs split across racks | racks per gang | makespan | time per gang | CPU/pod | × T0 |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		vs := ""
		if plain, ok := ix.get("T0", r.Placer); ok && r.Scenario.Name == "T" && plain.CPUPerPod() > 0 {
			vs = fmt.Sprintf("%.2f", float64(r.CPUPerPod())/float64(plain.CPUPerPod()))
		}
		q := r.Quality.Racks
		perGang := time.Duration(0)
		if r.Scenario.Gangs > 0 {
			perGang = r.Throughput.Makespan / time.Duration(r.Scenario.Gangs)
		}
		fmt.Fprintf(w, "| %s | %s | %d / %d | %d | %.2f | %v | %v | %v | %s |\n", r.Scenario.Name, r.Placer, r.Scenario.Gangs-len(r.NeverUp), r.Scenario.Gangs,
			q.Split, q.MeanRacks(), round(r.Throughput.Makespan), round(perGang), round(r.CPUPerPod()), vs)
	}
	fmt.Fprintln(w)
}

// strandingTable shows, for TM, what each placer made of racks under
// background load with more gangs than fit: the gangs it bound whole, any
// split across racks, the GPUs bound, and the GPUs left free where no
// waiting gang fits; time per gang is the makespan over the gangs bound.
func strandingTable(w io.Writer, results []Result) {
	rows := where(results, func(r Result) bool { return r.Scenario.Name == "TM" && r.Err == nil })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Topology under pressure (TM)\n\n")
	fmt.Fprintf(w, "| placer | gangs bound whole | split across racks | GPUs bound | GPUs free | of them stranded | makespan | time per gang bound | CPU/pod |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		q, st := r.Quality.Racks, r.Quality.Stranding
		bound := r.Scenario.Gangs - len(r.NeverUp)
		fmt.Fprintf(w, "| %s | %d / %d | %d | %d | %d | %d | %v | %v | %v |\n", r.Placer, bound, r.Scenario.Gangs, q.Split,
			st.BoundGPUs, st.FreeGPUs, st.StrandedGPUs, round(r.Throughput.Makespan), round(perGangBound(r)), round(r.CPUPerPod()))
	}
	fmt.Fprintln(w)
}

// streamDetailTable shows, for TS, which gangs waited in each placer's
// run of median makespan: the median wait by the gang's workers, and the
// GPUs free while gangs waited beside those of them stranded (medians of
// the samples).
func streamDetailTable(w io.Writer, results []Result) {
	rows := where(results, func(r Result) bool { return r.Scenario.Name == "TS" && r.Err == nil && r.Stream != nil })
	if len(rows) == 0 {
		return
	}
	workers := slices.Sorted(maps.Keys(rows[0].Stream.WaitsBy))
	fmt.Fprintf(w, "### Topology stream (TS): who waits\n\nThe median wait of the gangs of each number of workers (whole GPU nodes), and the GPUs free while gangs waited "+
		"beside those of them stranded (medians of the samples).\n\n| placer | GPUs free | of them stranded |")
	for _, n := range workers {
		unit := "workers"
		if n == 1 {
			unit = "worker"
		}
		fmt.Fprintf(w, " wait, %d %s |", n, unit)
	}
	fmt.Fprintf(w, "\n| --- | ---: | ---: |%s\n", strings.Repeat(" ---: |", len(workers)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d |", r.Placer, r.Stream.FreeMedian(), r.Stream.StrandedMedian())
		for _, n := range workers {
			fmt.Fprintf(w, " %v |", round(r.Stream.WaitOf(n, 0.5)))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// perGangBound is the makespan over the gangs bound whole; 0 with none.
func perGangBound(r Result) time.Duration {
	bound := r.Scenario.Gangs - len(r.NeverUp)
	if bound <= 0 {
		return 0
	}
	return r.Throughput.Makespan / time.Duration(bound)
}

func qualityTable(w io.Writer, results []Result) {
	rows := where(results, func(r Result) bool { return r.Scenario.Name == "Q" && r.Err == nil })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Placement quality (Q)\n\n")
	fmt.Fprintf(w, "| placer | gangs bound whole | masters on CPU nodes | GPU occupancy | GPU pods pending | stranded GPUs |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		q := r.Quality
		fmt.Fprintf(w, "| %s | %d / %d | %d / %d | %.1f%% | %d | %d |\n", r.Placer, r.Scenario.Gangs-len(r.NeverUp), r.Scenario.Gangs,
			q.MastersOnCPU, q.Masters, 100*q.Occupancy(), q.PendingGPUPods, q.Stranded)
	}
	fmt.Fprintln(w)
}

func cycleTable(w io.Writer, ix runIndex) {
	t, ok := ix.get("S3", Troupe)
	if !ok {
		return
	}
	buckets := CycleBuckets(t.Cycles)
	if len(buckets) == 0 {
		return
	}
	fmt.Fprintf(w, "### Troupe's cycle time against S3's backlog\n\nFrom troupe-scheduler's own metrics, scraped every second; the backlog is the pods that exist unbound. "+
		"The decision is the cycle's snapshot and session; the whole cycle adds its binds and status writes. "+
		"Cycles without a bind are those of the seconds in which nothing was bound: what a cycle costs with the backlog alone, "+
		"without a wave's placements (a diagnostic; the goal reads the mean over every cycle).\n\n")
	fmt.Fprintf(w, "| backlog (pods) | cycles | mean decision CPU | mean decision | mean cycle | cycles without a bind | their mean decision CPU |\n"+
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, b := range buckets {
		idle := "–"
		if b.IdleCycles > 0 {
			idle = round(b.MeanIdleDecisionCPU).String()
		}
		fmt.Fprintf(w, "| %d–%d | %.0f | %v | %v | %v | %.0f | %s |\n", b.Low, b.High, b.Cycles, round(b.MeanDecisionCPU), round(b.MeanDecision), round(b.Mean),
			b.IdleCycles, idle)
	}
	fmt.Fprintln(w)
}

func nodeCostTable(w io.Writer, ix runIndex) {
	if ix["S4"] == nil || ix["S4x4"] == nil {
		return
	}
	fmt.Fprintf(w, "### Cost per pod against the node count (S4, S4x4)\n\nCPU while binding: from just before the first bind to just after the last.\n\n")
	fmt.Fprintf(w, "| placer | CPU/pod while binding, S4 | S4x4 | ratio | makespan S4 | S4x4 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, placer := range placerOrder(ix, "S4") {
		small, ok1 := ix.get("S4", placer)
		big, ok2 := ix.get("S4x4", placer)
		if !ok1 || !ok2 {
			continue
		}
		ratio := ""
		if small.ActiveCPUPerPod() > 0 {
			ratio = fmt.Sprintf("%.2f", float64(big.ActiveCPUPerPod())/float64(small.ActiveCPUPerPod()))
		}
		fmt.Fprintf(w, "| %s | %v | %v | %s | %v | %v |\n", placer, round(small.ActiveCPUPerPod()), round(big.ActiveCPUPerPod()), ratio,
			round(small.Throughput.Makespan), round(big.Throughput.Makespan))
	}
	fmt.Fprintln(w)
}

// placerOrder is the placers of a scenario in the harness's order.
func placerOrder[T any](ix map[string]map[string]T, scenario string) []string {
	var out []string
	for p := range ix[scenario] {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(placerRank(a), placerRank(b)) })
	return out
}

func placerRank(p string) string {
	switch {
	case isNull(p):
		// The sweep in order of binds in flight.
		n, _ := strconv.Atoi(strings.TrimPrefix(p, Null+"-"))
		return fmt.Sprintf("0%09d", n)
	case p == Troupe:
		return "1"
	case p == TroupeGangEvents:
		return "2"
	case isTroupe(p):
		// Variants at other binds in flight, in order of them.
		n, _ := strconv.Atoi(strings.TrimPrefix(p, Troupe+"-"))
		return fmt.Sprintf("3%09d", n)
	}
	return "4" + p
}

func writesTable(w io.Writer, results []Result) {
	fmt.Fprintf(w, "### API writes and the API server's work\n\nMutating requests counted by the API server (apiserver_request_total), less the harness's own, by verb and resource, "+
		"from the start until the API server has had no write for a second (quiet: no means the harness stopped counting at --trailing); "+
		"and the CPU time kube-apiserver and etcd spent during the run (the harness's watch included), per pod bound.\n\n")
	fmt.Fprintf(w, "| scenario | placer | writes/pod | quiet | API server + etcd CPU/pod | writes |\n| --- | --- | ---: | --- | ---: | --- |\n")
	for _, r := range results {
		if r.Err == nil {
			quiet := "yes"
			if !r.Quiet {
				quiet = "no"
			}
			fmt.Fprintf(w, "| %s | %s | %.2f | %s | %v | %s |\n", r.Scenario.Name, r.Placer, r.WritesPerPod(), quiet, round(r.ServerCPUPerPod()), r.Writes)
		}
	}
	fmt.Fprintln(w)
}

func troupeTable(w io.Writer, results []Result) {
	rows := where(results, func(r Result) bool { return r.Placer == Troupe && r.Err == nil && len(r.Counters) > 0 })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Where Troupe's time goes\n\nFrom troupe-scheduler's metrics at the end of each run. A cycle is snapshot, actions, binds and status writes. "+
		"Caches synced: when its informers had listed the cluster and the pods' tasks were derived, from its start; first bind after: from then to its first bind seen by the harness, the first cycle's own latency. "+
		"A gang's binds apart: for each gang whose binds of a cycle all succeeded, from its first bind request to its last (sent), and from the first answer to the last (answered: "+
		"the API server showed the gang partly bound meanwhile), means over the run; the gangs answered further apart than the partial grace, by the scheduler's histogram. "+
		"Status lag: per status write landed, the time since the oldest decision it carries was handed to the writer (after the cycle's binds returned), mean over the writes landed in the window.\n\n")
	fmt.Fprintf(w, "| scenario | caches synced | first bind after | cycles | mean cycle | mean decision | mean snapshot | decision time/pod | decision CPU/pod | bind latency (mean) | a gang's binds apart: sent | answered | gangs answered apart | predicate evaluations/pod | status writes | status lag (mean) | CPU/pod | CPU/pod while binding |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		c := r.Counters
		pods := float64(max(r.Throughput.Pods, 1))
		cycles := max(c["cycles_total"], 1)
		bind := histogramMean(c, "bind_duration_seconds")
		synced, after := "—", "—"
		if d, ok := r.FirstBindAfterSync(); ok {
			synced, after = round(r.CachesSynced).String(), round(d).String()
		}
		apart := "—"
		if a := r.AnsweredApart; a != nil {
			apart = fmt.Sprintf("%.0f > %v", a.Gangs, a.Bound)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %v | %v | %v | %v | %v | %v | %v | %v | %s | %.0f | %.0f | %v | %v | %v |\n", r.Scenario.Name, synced, after, c["cycles_total"],
			round(secs(c["cycle_duration_seconds_sum"]/cycles)), round(secs(c["decision_duration_seconds_sum"]/cycles)),
			round(secs(c["snapshot_duration_seconds_sum"]/cycles)), round(r.DecisionPerPod()), round(perPod(c["decision_cpu_seconds_total"], r.Throughput.Pods)),
			round(bind), round(histogramMean(c, "gang_bind_request_spread_seconds")), round(histogramMean(c, "gang_bind_answer_spread_seconds")), apart,
			c["predicate_evaluations_total"]/pods, c["status_writes_total"], round(histogramMean(c, "status_write_lag_seconds")), round(r.CPUPerPod()), round(r.ActiveCPUPerPod()))
	}
	fmt.Fprintln(w)
}

// warmTable shows Troupe's warm rounds (scenario.Scenario.WarmRound).
func warmTable(w io.Writer, results []Result) {
	rows := where(results, func(r Result) bool { return r.Placer == Troupe && r.Err == nil && r.Warm != nil })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Troupe's warm rounds\n\nOnce a run is measured, the harness deletes its gangs and creates as many new ones on the same cluster: "+
		"troupe-scheduler, which has read the cluster already, places them while they are created. Its counters over that round, against the first round's.\n\n")
	fmt.Fprintf(w, "| scenario | pods | cycles | mean snapshot | decision time/pod | decision CPU/pod | first round: decision time/pod | decision CPU/pod | predicate evaluations/pod | makespan |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		c := r.Warm.Counters
		fmt.Fprintf(w, "| %s | %d | %.0f | %v | %v | %v | %v | %v | %.0f | %v |\n", r.Scenario.Name, r.Warm.Pods, c["cycles_total"],
			round(r.Warm.SnapshotPerCycle()), round(r.Warm.DecisionPerPod()), round(r.Warm.DecisionCPUPerPod()),
			round(r.DecisionPerPod()), round(perPod(r.Counters["decision_cpu_seconds_total"], r.Throughput.Pods)),
			c["predicate_evaluations_total"]/float64(max(r.Warm.Pods, 1)), round(r.Warm.Makespan))
	}
	fmt.Fprintln(w)
}

// histogramMean is the mean of the histogram name among the counters,
// from its _sum and _count (0 without observations).
func histogramMean(counters map[string]float64, name string) time.Duration {
	return secs(counters[name+"_sum"] / max(counters[name+"_count"], 1))
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", "\\|")
}
