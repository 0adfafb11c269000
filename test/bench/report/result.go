// Package report renders the benchmark's results: the tables printed and
// written to docs/benchmarks.md, the ratios between placers, and the
// verdict on each of the goals.
package report

import (
	"time"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/scenario"
)

// Result is one placer's run of one scenario on a fresh API server.
type Result struct {
	Scenario scenario.Scenario
	Placer   string
	// Err is why the run could not be measured; the other fields are
	// then partial.
	Err error

	Throughput measure.Throughput
	// PlacerCPU, APIServerCPU and EtcdCPU are the processes' CPU time
	// over the run (the placer's from its start).
	PlacerCPU, APIServerCPU, EtcdCPU time.Duration
	// ActiveCPU is the placer's CPU time from just before its first bind
	// to just after its last (sampled every 100 ms): the work of placing,
	// without the start-up's listing of the cluster.
	ActiveCPU time.Duration
	// Writes are the mutating API requests of the run, less the
	// harness's own.
	Writes measure.Writes
	// Partial are the gangs some but not all of whose pods were bound at
	// the end; NeverUp the gangs never bound whole.
	Partial, NeverUp []string
	Quality          measure.Quality
	// Cycles are the placer's own cycle counters, second by second, for
	// placers that expose them (Troupe).
	Cycles []CycleSample
	// Counters are the placer's own counters at the end (Troupe's
	// troupe_scheduler_* metrics), by name.
	Counters map[string]float64
	// Profile is the top of a CPU profile of the placer over the run, if
	// one was taken.
	Profile string
}

// CycleSample is one second of a run as the placer's metrics saw it.
type CycleSample struct {
	At time.Duration
	// Backlog is the pods that existed unbound at the sample.
	Backlog int
	// Cycles ran in the second before the sample, taking CycleSeconds
	// together, DecisionSeconds of which before their API calls (snapshot
	// and session).
	Cycles                        float64
	CycleSeconds, DecisionSeconds float64
}

// CPUPerPod is the placer's CPU time per bound pod.
func (r Result) CPUPerPod() time.Duration {
	if r.Throughput.Pods == 0 {
		return 0
	}
	return r.PlacerCPU / time.Duration(r.Throughput.Pods)
}

// ActiveCPUPerPod is ActiveCPU per bound pod.
func (r Result) ActiveCPUPerPod() time.Duration {
	if r.Throughput.Pods == 0 {
		return 0
	}
	return r.ActiveCPU / time.Duration(r.Throughput.Pods)
}

// DecisionPerPod is the time the placer's cycles spent deciding (its
// troupe_scheduler_decision_duration_seconds), per bound pod; 0 for
// placers without that metric.
func (r Result) DecisionPerPod() time.Duration {
	if r.Throughput.Pods == 0 {
		return 0
	}
	return secs(r.Counters["decision_duration_seconds_sum"] / float64(r.Throughput.Pods))
}

// ServerCPUPerPod is the CPU time kube-apiserver and etcd spent per bound
// pod.
func (r Result) ServerCPUPerPod() time.Duration {
	if r.Throughput.Pods == 0 {
		return 0
	}
	return (r.APIServerCPU + r.EtcdCPU) / time.Duration(r.Throughput.Pods)
}

// WritesPerPod is the run's API writes per bound pod.
func (r Result) WritesPerPod() float64 {
	if r.Throughput.Pods == 0 {
		return 0
	}
	return r.Writes.Total() / float64(r.Throughput.Pods)
}

// Complete says every gang was bound whole and none is left partial.
func (r Result) Complete() bool {
	return r.Err == nil && len(r.Partial) == 0 && len(r.NeverUp) == 0
}
