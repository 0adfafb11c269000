package operatorbench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Result is one run of one combination.
type Result struct {
	Combination string
	Jobs, Pods  int
	// Err is why the run could not be measured; its figures are not used.
	Err error
	// Created is from the apply of the first job until every pod and
	// every PodGroup existed; Running until every pod was Running.
	Created, Running time.Duration
	// OperatorCPU is the operator process's CPU time from the apply until
	// Settle after every pod ran.
	OperatorCPU time.Duration
	// OperatorWrites are the operator's mutating API requests over the
	// same span, AllWrites everybody's (the harness's job creates, the
	// scheduler's binds, kwok's pod status), both from the audit log.
	OperatorWrites, AllWrites int
	// Restart is the gang-restart probe, nil when it was not run.
	Restart *Restart
}

// Restart is what followed the failure of one worker of a running job.
type Restart struct {
	// Took is from the failure until every pod of the job was Running
	// again, none of them the failed pod.
	Took time.Duration
	// Replaced is how many of the job's pods are new (others than before
	// the failure), of Pods.
	Replaced, Pods int
	// Err says why the job did not run whole again; Took and Replaced
	// are then not measured.
	Err string
}

// JobsPerSecond is the operator's throughput: jobs over the time until
// every pod and PodGroup existed.
func (r Result) JobsPerSecond() float64 {
	if r.Created <= 0 {
		return 0
	}
	return float64(r.Jobs) / r.Created.Seconds()
}

// CPUPerJob is the operator's CPU time per job.
func (r Result) CPUPerJob() time.Duration {
	if r.Jobs == 0 {
		return 0
	}
	return r.OperatorCPU / time.Duration(r.Jobs)
}

// WritesPerJob are the operator's API writes per job.
func (r Result) WritesPerJob() float64 {
	if r.Jobs == 0 {
		return 0
	}
	return float64(r.OperatorWrites) / float64(r.Jobs)
}

// Figure is the median of a figure over the runs, with its range.
type Figure struct {
	Median, Min, Max float64
	// N is how many runs gave the figure.
	N int
}

// FigureOf takes the median and range of values; N is 0 for none. With
// an even count the median is the mean of the middle two.
func FigureOf(values []float64) Figure {
	if len(values) == 0 {
		return Figure{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Figure{Median: med, Min: v[0], Max: v[n-1], N: n}
}

// Format prints the median with its range when there is more than one
// run, each with format f.
func (f Figure) Format(format string) string {
	if f.N == 0 {
		return "–"
	}
	m := fmt.Sprintf(format, f.Median)
	if f.N == 1 {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, fmt.Sprintf(format, f.Min), fmt.Sprintf(format, f.Max))
}

// Summary are one combination's figures over its runs that succeeded.
type Summary struct {
	Combination string
	Runs        int
	Errors      []error
	// JobsPerSecond, CreatedSeconds, RunningSeconds, CPUPerJobMillis and
	// WritesPerJob are over the runs that succeeded.
	JobsPerSecond, CreatedSeconds, RunningSeconds, CPUPerJobMillis, WritesPerJob, AllWritesPerJob Figure
	// RestartSeconds and Replaced are over the runs with a restart probe.
	RestartSeconds, Replaced Figure
	RestartPods              int
	// RestartErrors say why a probe's job did not run whole again.
	RestartErrors []string
}

// Summarize folds the runs of each combination, in the order of names.
func Summarize(names []string, results []Result) []Summary {
	var out []Summary
	for _, name := range names {
		s := Summary{Combination: name}
		var jps, created, running, cpu, writes, all, restart, replaced []float64
		for _, r := range results {
			if r.Combination != name {
				continue
			}
			s.Runs++
			if r.Err != nil {
				s.Errors = append(s.Errors, r.Err)
				continue
			}
			jps = append(jps, r.JobsPerSecond())
			created = append(created, r.Created.Seconds())
			running = append(running, r.Running.Seconds())
			cpu = append(cpu, float64(r.CPUPerJob())/float64(time.Millisecond))
			writes = append(writes, r.WritesPerJob())
			all = append(all, float64(r.AllWrites)/float64(max(r.Jobs, 1)))
			if r.Restart != nil && r.Restart.Err != "" {
				s.RestartErrors = append(s.RestartErrors, r.Restart.Err)
			} else if r.Restart != nil {
				restart = append(restart, r.Restart.Took.Seconds())
				replaced = append(replaced, float64(r.Restart.Replaced))
				s.RestartPods = r.Restart.Pods
			}
		}
		s.JobsPerSecond, s.CreatedSeconds, s.RunningSeconds = FigureOf(jps), FigureOf(created), FigureOf(running)
		s.CPUPerJobMillis, s.WritesPerJob, s.AllWritesPerJob = FigureOf(cpu), FigureOf(writes), FigureOf(all)
		s.RestartSeconds, s.Replaced = FigureOf(restart), FigureOf(replaced)
		out = append(out, s)
	}
	return out
}
