// Package report renders the benchmark's results: the tables printed and
// written to docs/benchmarks.md, the ratios between placers, and the
// verdict on each of the goals.
package report

import (
	"errors"
	"fmt"
	"strings"
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
	// Warm is the scenario's warm round (scenario.Scenario.WarmRound), if
	// it had one.
	Warm *WarmRound
	// PartialDuring are the gangs partly bound for longer than the
	// harness's grace at some time of the run, each with how long.
	// Throughput and PartialDuring are timed by when the API server
	// completed each bind (its audit log); Watched is the same run as the
	// harness's watch of the pods saw it.
	PartialDuring []measure.PartialEpisode
	Watched       Watched
	// PeakRSS is the placer process's peak resident memory, in bytes.
	PeakRSS int64
	// WatchErrors counts the times the harness's watch of the pods broke
	// during the run: the binds made until it was back are timed late.
	WatchErrors int
	// Quiet says the API server had a second without writes before the
	// harness stopped counting (--trailing): every write the placer made
	// for the run is counted.
	Quiet bool
	// CachesSynced is when the placer had listed the cluster and could
	// start placing, from the clock's start, as the placer reports it
	// (troupe-scheduler's caches_synced_timestamp_seconds); 0 for a placer
	// that does not.
	CachesSynced time.Duration
	// Stream is what a run of a streamed scenario (TS) measured of its
	// gangs' arrivals: nil for the others.
	Stream *measure.Stream
	// AnsweredApart is, for troupe-scheduler, how many gangs had the
	// answers to their binds come back further apart than the partial
	// grace, by its own histogram (gang_bind_answer_spread_seconds,
	// counted from its first bound at or above the grace); nil for a
	// placer that does not say.
	AnsweredApart *AnsweredApart
}

// Watched is what the harness's watch of the pods saw of a run: each bind
// after the API server completed it, seconds later when the watch broke
// (WatchErrors).
type Watched struct {
	// Makespan is when the watch saw the last gang whole.
	Makespan time.Duration
	// PartialDuring counts the gangs it saw partly bound for longer than
	// the grace.
	PartialDuring int
}

// AnsweredApart is a count of gangs whose binds' answers came back more
// than Bound apart.
type AnsweredApart struct {
	Gangs float64
	Bound time.Duration
}

// Failure says why the run failed: it could not be measured, it ended
// with a gang partly bound, or the null binder or troupe-scheduler left a
// gang unbound where every gang fits. Nil for a run that did not fail. A
// peer that leaves gangs unbound (or is stopped at --run-timeout) has not
// failed: that is its result, which the comparisons count.
func (r Result) Failure() error {
	switch {
	case r.Err != nil:
		return r.Err
	case r.Scenario.Streamed() && r.Stream == nil:
		return errors.New("a streamed scenario's run without its stream figures (arrivals, waits, GPUs stranded)")
	case len(r.Partial) > 0:
		return fmt.Errorf("%d gangs partially bound at the end: %s", len(r.Partial), strings.Join(r.Partial, ", "))
	case r.Scenario.MustBindAll && len(r.NeverUp) > 0 && (isNull(r.Placer) || isTroupe(r.Placer)):
		return fmt.Errorf("%d of %d gangs never bound whole: %s", len(r.NeverUp), r.Scenario.Gangs, strings.Join(r.NeverUp, ", "))
	}
	return nil
}

// WarmRound is a scenario's gangs placed again, as new gangs, by a placer
// that had placed them once on the same cluster, and had them deleted.
type WarmRound struct {
	// Pods were bound in the round; Makespan is from the first create
	// to the last bind seen (polled every 50 ms).
	Pods     int
	Makespan time.Duration
	// Counters are the placer's counters over the round (Troupe's
	// troupe_scheduler_*, as Result.Counters): their growth from just
	// before the first create to two cycles after the last bind.
	Counters map[string]float64
}

// DecisionPerPod is the round's decision time (snapshots and sessions of
// every cycle in it) per pod bound.
func (w WarmRound) DecisionPerPod() time.Duration {
	return perPod(w.Counters["decision_duration_seconds_sum"], w.Pods)
}

// DecisionCPUPerPod is the round's decision CPU time per pod bound: as
// DecisionPerPod, without the time the decisions waited for a CPU.
func (w WarmRound) DecisionCPUPerPod() time.Duration {
	return perPod(w.Counters["decision_cpu_seconds_total"], w.Pods)
}

// SnapshotPerCycle is the round's mean snapshot time.
func (w WarmRound) SnapshotPerCycle() time.Duration {
	return secs(w.Counters["snapshot_duration_seconds_sum"] / max(w.Counters["snapshot_duration_seconds_count"], 1))
}

func perPod(seconds float64, pods int) time.Duration {
	if pods == 0 {
		return 0
	}
	return secs(seconds / float64(pods))
}

// CycleSample is one second of a run as the placer's metrics saw it.
type CycleSample struct {
	At time.Duration
	// Backlog is the pods that existed unbound at the sample.
	Backlog int
	// Cycles ran in the second before the sample, taking CycleSeconds
	// together, DecisionSeconds of which before their API calls (snapshot
	// and session), using DecisionCPUSeconds of CPU.
	Cycles                                            float64
	CycleSeconds, DecisionSeconds, DecisionCPUSeconds float64
	// Binds is how many binds the cycles made (successful or not).
	Binds float64
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

// FirstBindAfterSync is the time from the placer's caches having synced
// to its first bind: the first cycle's own latency, without the start-up's
// listing of the cluster. False when the placer does not report its sync
// or bound nothing.
func (r Result) FirstBindAfterSync() (time.Duration, bool) {
	if r.CachesSynced <= 0 || r.Throughput.Pods == 0 {
		return 0, false
	}
	return r.Throughput.FirstBind - r.CachesSynced, true
}

// DecisionPerPod is the time the placer's cycles spent deciding (its
// troupe_scheduler_decision_duration_seconds), per bound pod; 0 for
// placers without that metric.
func (r Result) DecisionPerPod() time.Duration {
	return perPod(r.Counters["decision_duration_seconds_sum"], r.Throughput.Pods)
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
