package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Meta is what the report says about how the results were made.
type Meta struct {
	Command string
	Date    time.Time
	Machine []string
	// Settings are the harness's settings, one line each.
	Settings []string
}

// Markdown renders the results: the settings, one table per scenario, the
// quality check, S3's cycle times, S4's cost per pod, the API writes, and
// the goals.
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

	ix := newIndex(results)
	for _, name := range scenarioOrder(results) {
		scenarioTable(w, ix, name, results)
	}
	qualityTable(w, results)
	rulesTable(w, ix, results)
	racksTable(w, ix, results)
	strandingTable(w, results)
	cycleTable(w, ix)
	nodeCostTable(w, ix)
	writesTable(w, results)
	troupeTable(w, results)
	warmTable(w, results)

	p("### Goals\n\n| goal | verdict | detail |\n| --- | --- | --- |\n")
	for _, v := range Goals(results) {
		verdict := v.String()
		if v.Known && !v.Met {
			verdict = "**" + verdict + "**"
		}
		p("| %s | %s | %s |\n", v.Goal, verdict, v.Detail)
	}
	p("\n")
	for _, r := range results {
		if r.Profile != "" {
			p("<details><summary>CPU profile of %s in %s</summary>\n\n```\n%s\n```\n\n</details>\n\n", r.Placer, r.Scenario.Name, r.Profile)
		}
	}
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

func scenarioTable(w io.Writer, ix index, name string, results []Result) {
	var first Result
	for _, r := range results {
		if r.Scenario.Name == name {
			first = r
			break
		}
	}
	fmt.Fprintf(w, "### %s: %s\n\n%s.\n\n", name, first.Scenario.Title, first.Scenario.Describe())
	fmt.Fprintf(w, "| placer | pods/s mean | p50 | p90 | gangs/s | makespan | first bind | CPU/pod | API writes/pod | partial | unbound | × null | Troupe × |\n")
	fmt.Fprintf(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	null, hasNull := ix.get(name, Null)
	troupe, hasTroupe := ix.get(name, Troupe)
	for _, r := range results {
		if r.Scenario.Name != name {
			continue
		}
		if r.Err != nil {
			fmt.Fprintf(w, "| %s | failed: %s |||||||||||| \n", r.Placer, oneLine(r.Err.Error()))
			continue
		}
		t := r.Throughput
		vsNull, vsTroupe := "", ""
		if hasNull && null.Throughput.Mean > 0 {
			vsNull = fmt.Sprintf("%.2f", t.Mean/null.Throughput.Mean)
		}
		if hasTroupe && t.Mean > 0 && !isTroupe(r.Placer) {
			vsTroupe = fmt.Sprintf("%.2f", troupe.Throughput.Mean/t.Mean)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.1f | %v | %v | %v | %.2f | %d | %d | %s | %s |\n",
			r.Placer, meanCell(r), t.P50, t.P90, t.GangsPerSecond, round(t.Makespan), round(t.FirstBind),
			round(r.CPUPerPod()), r.WritesPerPod(), len(r.Partial), len(r.NeverUp), vsNull, vsTroupe)
	}
	fmt.Fprintln(w)
}

// meanCell is a run's mean pods/s, and the range of its runs' means when
// it stands for several.
func meanCell(r Result) string {
	if len(r.Means) < 2 {
		return fmt.Sprintf("%.0f", r.Throughput.Mean)
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", r.Throughput.Mean, slices.Min(r.Means), slices.Max(r.Means))
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
func rulesTable(w io.Writer, ix index, results []Result) {
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
func racksTable(w io.Writer, ix index, results []Result) {
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

func cycleTable(w io.Writer, ix index) {
	t, ok := ix.get("S3", Troupe)
	if !ok {
		return
	}
	buckets := CycleBuckets(t.Cycles)
	if len(buckets) == 0 {
		return
	}
	fmt.Fprintf(w, "### Troupe's cycle time against S3's backlog\n\nFrom troupe-scheduler's own metrics, scraped every second; the backlog is the pods that exist unbound. "+
		"The decision is the cycle's snapshot and session; the whole cycle adds its binds and status writes.\n\n")
	fmt.Fprintf(w, "| backlog (pods) | cycles | mean decision CPU | mean decision | mean cycle |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, b := range buckets {
		fmt.Fprintf(w, "| %d–%d | %.0f | %v | %v | %v |\n", b.Low, b.High, b.Cycles, round(b.MeanDecisionCPU), round(b.MeanDecision), round(b.Mean))
	}
	fmt.Fprintln(w)
}

func nodeCostTable(w io.Writer, ix index) {
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

// placerOrder is the placers of a scenario in the order they ran.
func placerOrder(ix index, scenario string) []string {
	var out []string
	for p := range ix[scenario] {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(placerRank(a), placerRank(b)) })
	return out
}

func placerRank(p string) string {
	switch p {
	case Null:
		return "0"
	case Troupe:
		return "1"
	case TroupeGangEvents:
		return "2"
	}
	return "3" + p
}

func writesTable(w io.Writer, results []Result) {
	fmt.Fprintf(w, "### API writes and the API server's work\n\nMutating requests counted by the API server (apiserver_request_total), less the harness's own, by verb and resource; "+
		"and the CPU time kube-apiserver and etcd spent during the run (the harness's watch included), per pod bound.\n\n")
	fmt.Fprintf(w, "| scenario | placer | writes/pod | API server + etcd CPU/pod | writes |\n| --- | --- | ---: | ---: | --- |\n")
	for _, r := range results {
		if r.Err == nil {
			fmt.Fprintf(w, "| %s | %s | %.2f | %v | %s |\n", r.Scenario.Name, r.Placer, r.WritesPerPod(), round(r.ServerCPUPerPod()), r.Writes)
		}
	}
	fmt.Fprintln(w)
}

func troupeTable(w io.Writer, results []Result) {
	rows := where(results, func(r Result) bool { return r.Placer == Troupe && r.Err == nil && len(r.Counters) > 0 })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Where Troupe's time goes\n\nFrom troupe-scheduler's metrics at the end of each run. A cycle is snapshot, actions, binds and status writes.\n\n")
	fmt.Fprintf(w, "| scenario | cycles | mean cycle | mean decision | mean snapshot | decision time/pod | decision CPU/pod | bind latency (mean) | predicate evaluations/pod | status writes | CPU/pod | CPU/pod while binding |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		c := r.Counters
		pods := float64(max(r.Throughput.Pods, 1))
		cycles := max(c["cycles_total"], 1)
		bind := secs(c["bind_duration_seconds_sum"] / max(c["bind_duration_seconds_count"], 1))
		fmt.Fprintf(w, "| %s | %.0f | %v | %v | %v | %v | %v | %v | %.0f | %.0f | %v | %v |\n", r.Scenario.Name, c["cycles_total"],
			round(secs(c["cycle_duration_seconds_sum"]/cycles)), round(secs(c["decision_duration_seconds_sum"]/cycles)),
			round(secs(c["snapshot_duration_seconds_sum"]/cycles)), round(r.DecisionPerPod()), round(perPod(c["decision_cpu_seconds_total"], r.Throughput.Pods)),
			round(bind), c["predicate_evaluations_total"]/pods, c["status_writes_total"], round(r.CPUPerPod()), round(r.ActiveCPUPerPod()))
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

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", "\\|")
}
