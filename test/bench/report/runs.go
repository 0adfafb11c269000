package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Runs are one placer's runs of one scenario, in the order they ran.
type Runs struct {
	Scenario scenario.Scenario
	Placer   string
	All      []Result
}

// Group gathers results into each placer's runs of each scenario, in the
// order each pair first ran.
func Group(results []Result) []Runs {
	var out []Runs
	for _, r := range results {
		i := slices.IndexFunc(out, func(g Runs) bool { return g.Scenario.Name == r.Scenario.Name && g.Placer == r.Placer })
		if i < 0 {
			out = append(out, Runs{Scenario: r.Scenario, Placer: r.Placer})
			i = len(out) - 1
		}
		out[i].All = append(out[i].All, r)
	}
	return out
}

// Failures says why each failed run failed, "run 2: ...": a run that
// could not be measured, or that ended with a gang partly bound.
func (g Runs) Failures() []string {
	var out []string
	for i, r := range g.All {
		if err := r.Failure(); err != nil {
			out = append(out, fmt.Sprintf("%s/%s run %d: %s", g.Scenario.Name, g.Placer, i+1, oneLine(err.Error())))
		}
	}
	return out
}

// Notes names the measured runs in which the harness's watch of the pods
// broke: the run's times are the API server's (its audit log), and the
// note says what the watch, late, saw of them.
func (g Runs) Notes() []string {
	var out []string
	for i, r := range g.All {
		if r.Err == nil && r.WatchErrors > 0 {
			out = append(out, fmt.Sprintf("%s/%s run %d: the harness's watch of the pods broke %d times and saw binds late: the last gang whole at %v (by the audit log: %v), %d gangs partly bound for longer than the grace (by the audit log: %d)",
				g.Scenario.Name, g.Placer, i+1, r.WatchErrors, round(r.Watched.Makespan), round(r.Throughput.Makespan), r.Watched.PartialDuring, len(r.PartialDuring)))
		}
	}
	return out
}

// measured are the runs that could be measured (Err nil): a run with a
// partial gang at the end still has figures, which the tables show; the
// goals it feeds fail on it (Failures).
func (g Runs) measured() []Result {
	var out []Result
	for _, r := range g.All {
		if r.Err == nil {
			out = append(out, r)
		}
	}
	return out
}

// Stat is one figure over a placer's runs: its median and range.
type Stat struct {
	Median, Min, Max float64
	// N is how many runs it is over.
	N int
}

// Stat is f's median and range over the measured runs; N is 0 when none
// was measured.
func (g Runs) Stat(f func(Result) float64) Stat {
	var xs []float64
	for _, r := range g.measured() {
		xs = append(xs, f(r))
	}
	if len(xs) == 0 {
		return Stat{}
	}
	slices.Sort(xs)
	n := len(xs)
	med := xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return Stat{Median: med, Min: xs[0], Max: xs[n-1], N: n}
}

// Typical is the measured run of median makespan (the lower middle of an
// even count), for the tables that show one run's details; the first run
// when none was measured.
func (g Runs) Typical() Result {
	runs := g.measured()
	if len(runs) == 0 {
		return g.All[0]
	}
	slices.SortStableFunc(runs, func(a, b Result) int { return cmp.Compare(a.Throughput.Makespan, b.Throughput.Makespan) })
	return runs[(len(runs)-1)/2]
}

// The figures the tables and goals take the median of.
func makespan(r Result) float64     { return r.Throughput.Makespan.Seconds() }
func overMakespan(r Result) float64 { return r.Throughput.OverMakespan }
func firstBind(r Result) float64    { return r.Throughput.FirstBind.Seconds() }
func cpuPerPod(r Result) float64    { return r.CPUPerPod().Seconds() }
func writesPerPod(r Result) float64 { return r.WritesPerPod() }
func peakRSS(r Result) float64      { return float64(r.PeakRSS) }
func unbound(r Result) float64      { return float64(len(r.NeverUp)) }
func partialDuring(r Result) float64 {
	return float64(len(r.PartialDuring))
}

// The figures of a stream (TS) the goal and its table read: of each run,
// 0 for a run without them (Result.Failure fails it).
func streamOf(r Result) measure.Stream {
	if r.Stream == nil {
		return measure.Stream{}
	}
	return *r.Stream
}

func streamArrived(r Result) float64  { return float64(streamOf(r).Arrived) }
func streamBound(r Result) float64    { return float64(streamOf(r).Bound) }
func streamWait(r Result) float64     { return streamOf(r).Wait(0.5).Seconds() }
func streamWaitP90(r Result) float64  { return streamOf(r).Wait(0.9).Seconds() }
func streamStranded(r Result) float64 { return float64(streamOf(r).StrandedMedian()) }
func strandedMax(r Result) float64    { return float64(streamOf(r).StrandedMax()) }
func strandingSamples(r Result) float64 {
	return float64(len(streamOf(r).Stranded))
}
func splitGangs(r Result) float64 { return float64(r.Quality.Racks.Split) }

// tickShare is how coarse a run's CPU time is: one /proc tick over it.
func tickShare(r Result) float64 { return measure.TickResolution(r.PlacerCPU) }

// isNull says whether a placer is the null binder at some binds in
// flight.
func isNull(placer string) bool { return placer == Null || strings.HasPrefix(placer, Null+"-") }

// Ceiling is a scenario's ceiling: of the null binder's runs at each
// number of binds in flight, those of the best median makespan.
func Ceiling(groups []Runs, scenario string) (Runs, bool) {
	var best Runs
	found := false
	for _, g := range groups {
		if g.Scenario.Name != scenario || !isNull(g.Placer) {
			continue
		}
		s := g.Stat(makespan)
		if s.N == 0 || s.Median == 0 {
			continue
		}
		if !found || s.Median < best.Stat(makespan).Median {
			best, found = g, true
		}
	}
	return best, found
}

// durCell is a figure in seconds, with its range over several runs.
func durCell(s Stat) string {
	d := func(x float64) time.Duration { return round(secs(x)) }
	if s.N < 2 || s.Min == s.Max {
		return d(s.Median).String()
	}
	return fmt.Sprintf("%v (%v–%v)", d(s.Median), d(s.Min), d(s.Max))
}

// numCell is a figure printed with format, with its range over several
// runs.
func numCell(s Stat, format string) string {
	if s.N < 2 || s.Min == s.Max {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}

// mib is a byte count in MiB.
func mib(s Stat) Stat {
	const m = 1 << 20
	return Stat{Median: s.Median / m, Min: s.Min / m, Max: s.Max / m, N: s.N}
}
