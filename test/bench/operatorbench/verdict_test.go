package operatorbench

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// run is a successful run of combination name: jobs jobs created in
// created seconds and Running in running seconds.
func run(name string, jobs int, created, running float64) Result {
	return Result{Combination: name, Jobs: jobs, Pods: 4 * jobs,
		Created: time.Duration(created * float64(time.Second)), Running: time.Duration(running * float64(time.Second))}
}

func failed(name string) Result {
	return Result{Combination: name, Jobs: 500, Err: errors.New("kube-apiserver exited")}
}

func TestJudge(t *testing.T) {
	const (
		ours, theirs = "troupe+volcano", "training-operator+volcano"
		stack        = "troupe+troupe-scheduler"
	)
	throughput := Goal{Title: "throughput", Ours: ours, Theirs: theirs, Metric: MetricThroughput, Factor: 2}
	running := Goal{Title: "running", Ours: stack, Theirs: theirs, Metric: MetricRunning, Factor: 5}
	tests := []struct {
		name    string
		goal    Goal
		jobs    int
		results []Result
		want    Status
		ratio   float64 // NaN: not judged
		detail  string  // a part of the detail
	}{{
		name:    "twice the throughput is met",
		goal:    throughput,
		jobs:    500,
		results: []Result{run(ours, 500, 50, 60), run(theirs, 500, 100, 120)},
		want:    Met, ratio: 2,
	}, {
		name:    "1.5 times the throughput is not met, by 25%",
		goal:    throughput,
		jobs:    500,
		results: []Result{run(ours, 500, 100, 60), run(theirs, 500, 150, 120)},
		want:    NotMet, ratio: 1.5, detail: "short of the 2× asked by 25%",
	}, {
		name: "medians decide, not the best run",
		goal: throughput,
		jobs: 500,
		results: []Result{
			run(ours, 500, 10, 60), run(ours, 500, 80, 60), run(ours, 500, 90, 60),
			run(theirs, 500, 100, 120), run(theirs, 500, 100, 120), run(theirs, 500, 100, 120),
		},
		want: NotMet, ratio: 100.0 / 80,
	}, {
		name:    "running time: five times faster is met",
		goal:    running,
		jobs:    500,
		results: []Result{run(stack, 500, 10, 20), run(theirs, 500, 50, 100)},
		want:    Met, ratio: 5,
	}, {
		name:    "running time: slower is not met",
		goal:    running,
		jobs:    500,
		results: []Result{run(stack, 500, 10, 200), run(theirs, 500, 50, 100)},
		want:    NotMet, ratio: 0.5,
	}, {
		name:    "an errored run of ours never yields met",
		goal:    throughput,
		jobs:    500,
		results: []Result{run(ours, 500, 1, 2), failed(ours), run(theirs, 500, 100, 120)},
		want:    NotJudged, detail: "kube-apiserver exited",
	}, {
		name:    "an errored run of theirs never yields met",
		goal:    throughput,
		jobs:    500,
		results: []Result{run(ours, 500, 1, 2), run(theirs, 500, 100, 120), failed(theirs)},
		want:    NotJudged,
	}, {
		name:    "an errored run of a combination outside the goal never yields met",
		goal:    throughput,
		jobs:    500,
		results: []Result{run(ours, 500, 1, 2), run(theirs, 500, 100, 120), failed("training-operator+coscheduling")},
		want:    NotJudged, detail: "training-operator+coscheduling",
	}, {
		name:    "every run of ours errored",
		goal:    running,
		jobs:    500,
		results: []Result{failed(stack), run(theirs, 500, 100, 120)},
		want:    NotJudged,
	}, {
		name:    "a combination that did not run",
		goal:    throughput,
		jobs:    500,
		results: []Result{run(ours, 500, 1, 2)},
		want:    NotJudged, detail: "needs runs of both",
	}, {
		name:    "a zero figure is not judged",
		goal:    running,
		jobs:    500,
		results: []Result{run(stack, 500, 0, 0), run(theirs, 500, 100, 120)},
		want:    NotJudged, detail: "zero",
	}, {
		name:    "below the goal's scale the verdict says so",
		goal:    throughput,
		jobs:    5,
		results: []Result{run(ours, 5, 1, 2), run(theirs, 5, 4, 5)},
		want:    Met, ratio: 4, detail: "at 5 jobs, not the 500",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := []string{stack, ours, theirs, "training-operator+coscheduling"}
			got := Judge([]Goal{tt.goal}, Summarize(names, tt.results), tt.jobs)
			if len(got) != 1 {
				t.Fatalf("got %d verdicts, want 1", len(got))
			}
			v := got[0]
			if v.Status != tt.want {
				t.Errorf("status %q, want %q (%s)", v.Status, tt.want, v.Detail)
			}
			if tt.want == NotJudged {
				if !math.IsNaN(v.Ratio) {
					t.Errorf("ratio %v for a goal not judged, want NaN", v.Ratio)
				}
			} else if math.Abs(v.Ratio-tt.ratio) > 1e-9 {
				t.Errorf("ratio %v, want %v", v.Ratio, tt.ratio)
			}
			if !strings.Contains(v.Detail, tt.detail) {
				t.Errorf("detail %q does not say %q", v.Detail, tt.detail)
			}
		})
	}
}

func TestFigureOf(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   Figure
		shown  string
	}{
		{name: "one run", values: []float64{2}, want: Figure{Median: 2, Min: 2, Max: 2, N: 1}, shown: "2.0"},
		{name: "odd count", values: []float64{3, 1, 2}, want: Figure{Median: 2, Min: 1, Max: 3, N: 3}, shown: "2.0 (1.0–3.0)"},
		{name: "even count", values: []float64{4, 1, 2, 3}, want: Figure{Median: 2.5, Min: 1, Max: 4, N: 4}, shown: "2.5 (1.0–4.0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FigureOf(tt.values); got != tt.want {
				t.Errorf("FigureOf(%v) = %+v, want %+v", tt.values, got, tt.want)
			}
			if got := FigureOf(tt.values).Format("%.1f"); got != tt.shown {
				t.Errorf("shown %q, want %q", got, tt.shown)
			}
		})
	}
	if got := FigureOf(nil); got.N != 0 || !math.IsNaN(got.Median) || got.Format("%.1f") != "–" {
		t.Errorf("FigureOf(nil) = %+v", got)
	}
}
