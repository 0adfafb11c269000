// Package measure turns what the harness observed during a run into the
// benchmark's figures: throughput from bind times, CPU from /proc, API
// writes from the API server's metrics, and the placement's quality.
package measure

import (
	"math"
	"slices"
	"time"
)

// Throughput is how fast a placer bound pods and whole gangs. Times are
// offsets from the clock's start: when the placer started, after every
// object existed.
type Throughput struct {
	Pods, Gangs int
	// FirstBind and LastBind bound the active window; Makespan is when
	// the last gang was complete.
	FirstBind, LastBind, Makespan time.Duration
	// Samples are pods bound in each whole second of the active window,
	// from the first bind; a window shorter than a second is one sample,
	// scaled to a second.
	Samples []float64
	// Mean is Pods over the active window; P50 and P90 are of Samples.
	Mean, P50, P90 float64
	// GangsPerSecond is Gangs over the window from the first bind to the
	// last gang complete.
	GangsPerSecond float64
	// OverMakespan is Pods over the makespan: the rate a user sees, with
	// the placer's start-up in it.
	OverMakespan float64
}

// Summarize computes the throughput from every bind's time and every
// completed gang's time (in any order).
func Summarize(binds, gangsDone []time.Duration) Throughput {
	t := Throughput{Pods: len(binds), Gangs: len(gangsDone)}
	if len(binds) == 0 {
		return t
	}
	t.FirstBind, t.LastBind = slices.Min(binds), slices.Max(binds)
	if len(gangsDone) > 0 {
		t.Makespan = slices.Max(gangsDone)
		if t.Makespan > 0 {
			t.OverMakespan = float64(t.Pods) / t.Makespan.Seconds()
		}
		if w := (t.Makespan - t.FirstBind).Seconds(); w > 0 {
			t.GangsPerSecond = float64(t.Gangs) / w
		}
	}
	window := t.LastBind - t.FirstBind
	if window < time.Second {
		// Too short for whole seconds: one sample over what there is,
		// at least a millisecond so that one instant bind stays finite.
		rate := float64(len(binds)) / max(window, time.Millisecond).Seconds()
		t.Samples = []float64{rate}
		t.Mean, t.P50, t.P90 = rate, rate, rate
		return t
	}
	t.Mean = float64(len(binds)) / window.Seconds()
	t.Samples = make([]float64, int(window/time.Second))
	for _, b := range binds {
		if i := int((b - t.FirstBind) / time.Second); i < len(t.Samples) {
			t.Samples[i]++
		}
	}
	t.P50, t.P90 = Quantile(t.Samples, 0.5), Quantile(t.Samples, 0.9)
	return t
}

// Quantile is the nearest-rank q-quantile of xs (0 when empty).
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
