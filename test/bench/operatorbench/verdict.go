package operatorbench

import (
	"fmt"
	"math"
	"strings"
)

// Metric is the figure a goal compares.
type Metric int

const (
	// MetricThroughput is jobs per second until every pod and PodGroup
	// exists; higher is better.
	MetricThroughput Metric = iota
	// MetricRunning is the time from the apply until every pod is
	// Running; lower is better.
	MetricRunning
)

// GoalJobs is the scale at which issue 16 sets the goals.
const GoalJobs = 500

// Goal is one of issue 16's targets: Ours at least Factor times better
// than Theirs on Metric.
type Goal struct {
	Title        string
	Ours, Theirs string
	Metric       Metric
	Factor       float64
}

// Goals are issue 16's goals for the operator. Throughput compares the
// operators over the same backend, Volcano, so that only the operator
// differs (both wait for Volcano to admit a PodGroup before they create
// its pods); apply -> all Running compares Troupe's whole stack with
// training-operator's usual one.
var Goals = []Goal{
	{Title: "Troupe's operator ≥ 2× training-operator's job throughput (both over Volcano)",
		Ours: "troupe+volcano", Theirs: "training-operator+volcano", Metric: MetricThroughput, Factor: 2},
	{Title: "apply → every pod Running: Troupe's operator + troupe-scheduler ≥ 5× faster than training-operator + Volcano",
		Ours: "troupe+troupe-scheduler", Theirs: "training-operator+volcano", Metric: MetricRunning, Factor: 5},
}

// Status is a goal's outcome.
type Status string

const (
	Met       Status = "met"
	NotMet    Status = "not met"
	NotJudged Status = "not judged"
)

// Verdict is a goal's outcome with the ratio it rests on.
type Verdict struct {
	Goal   Goal
	Status Status
	// Ratio is how many times better Ours was than Theirs (medians); NaN
	// when not judged.
	Ratio  float64
	Detail string
}

// Judge decides every goal from the runs. An errored run of any
// combination leaves every goal not judged: a run that could not be
// measured might have been the one that changed the outcome, so nothing
// is claimed. A goal whose combinations did not run, or whose figure is
// zero, is not judged either. jobs is the runs' scale; below GoalJobs the
// verdict says so.
func Judge(goals []Goal, summaries []Summary, jobs int) []Verdict {
	var failed []string
	for _, s := range summaries {
		for _, err := range s.Errors {
			failed = append(failed, fmt.Sprintf("%s: %v", s.Combination, err))
		}
	}
	out := make([]Verdict, 0, len(goals))
	for _, g := range goals {
		v := Verdict{Goal: g, Status: NotJudged, Ratio: math.NaN()}
		ours, okOurs := find(summaries, g.Ours)
		theirs, okTheirs := find(summaries, g.Theirs)
		switch {
		case len(failed) > 0:
			v.Detail = fmt.Sprintf("%d run(s) failed, so nothing is claimed: %s", len(failed), strings.Join(failed, "; "))
		case !okOurs || !okTheirs || ours.Runs == 0 || theirs.Runs == 0:
			v.Detail = fmt.Sprintf("needs runs of both %s and %s", g.Ours, g.Theirs)
		default:
			a, b := metric(ours, g.Metric), metric(theirs, g.Metric)
			if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
				v.Detail = fmt.Sprintf("a figure is missing or zero (%s %v, %s %v)", g.Ours, a, g.Theirs, b)
				break
			}
			v.Ratio = a / b
			if g.Metric == MetricRunning {
				v.Ratio = b / a
			}
			if v.Ratio >= g.Factor {
				v.Status = Met
				v.Detail = fmt.Sprintf("%.2f× (asked %g×)", v.Ratio, g.Factor)
			} else {
				v.Status = NotMet
				v.Detail = fmt.Sprintf("%.2f×, short of the %g× asked by %.0f%%", v.Ratio, g.Factor, 100*(1-v.Ratio/g.Factor))
			}
			if jobs < GoalJobs {
				v.Detail += fmt.Sprintf("; at %d jobs, not the %d the goal is set at", jobs, GoalJobs)
			}
		}
		out = append(out, v)
	}
	return out
}

func find(summaries []Summary, name string) (Summary, bool) {
	for _, s := range summaries {
		if s.Combination == name {
			return s, true
		}
	}
	return Summary{}, false
}

func metric(s Summary, m Metric) float64 {
	if m == MetricRunning {
		return s.RunningSeconds.Median
	}
	return s.JobsPerSecond.Median
}
