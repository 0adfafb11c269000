package measure

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name        string
		binds, done []time.Duration
		want        Throughput
	}{{
		name: "nothing bound",
		want: Throughput{},
	}, {
		// 2.5 s window: two whole seconds (3 and 1 binds); the half
		// second after is in the mean only.
		name:  "whole seconds from the first bind",
		binds: ms(1000, 1100, 1900, 2500, 3400, 3500),
		done:  ms(1900, 3500),
		want: Throughput{
			Pods: 6, Gangs: 2, FirstBind: time.Second, LastBind: 3500 * time.Millisecond, Makespan: 3500 * time.Millisecond,
			Samples: []float64{3, 1}, Mean: 6 / 2.5, P50: 1, P90: 3, GangsPerSecond: 2 / 2.5, OverMakespan: 6 / 3.5,
		},
	}, {
		name:  "a window under a second is one sample",
		binds: ms(200, 300, 450),
		done:  ms(450),
		want: Throughput{
			Pods: 3, Gangs: 1, FirstBind: 200 * time.Millisecond, LastBind: 450 * time.Millisecond, Makespan: 450 * time.Millisecond,
			Samples: []float64{12}, Mean: 12, P50: 12, P90: 12, GangsPerSecond: 4, OverMakespan: 3 / (450 * time.Millisecond).Seconds(),
		},
	}, {
		name:  "binds at one instant stay finite",
		binds: ms(500, 500),
		want: Throughput{
			Pods: 2, FirstBind: 500 * time.Millisecond, LastBind: 500 * time.Millisecond,
			Samples: []float64{2000}, Mean: 2000, P50: 2000, P90: 2000,
		},
	}, {
		name:  "order does not matter",
		binds: ms(3500, 1000, 2500, 1100, 3400, 1900),
		done:  ms(3500, 1900),
		want: Throughput{
			Pods: 6, Gangs: 2, FirstBind: time.Second, LastBind: 3500 * time.Millisecond, Makespan: 3500 * time.Millisecond,
			Samples: []float64{3, 1}, Mean: 6 / 2.5, P50: 1, P90: 3, GangsPerSecond: 2 / 2.5, OverMakespan: 6 / 3.5,
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.binds, tc.done)
			if !slices.Equal(got.Samples, tc.want.Samples) {
				t.Errorf("samples = %v, want %v", got.Samples, tc.want.Samples)
			}
			got.Samples, tc.want.Samples = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Summarize = %+v\nwant        %+v", got, tc.want)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	tests := []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.9, 7},
		{[]float64{4, 1, 3, 2}, 0.5, 2},
		{[]float64{4, 1, 3, 2}, 0.9, 4},
		{[]float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.9, 90},
		{[]float64{5, 1}, 0, 1},
	}
	for _, tc := range tests {
		if got := Quantile(tc.xs, tc.q); got != tc.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
	xs := []float64{3, 1, 2}
	Quantile(xs, 0.5)
	if !slices.Equal(xs, []float64{3, 1, 2}) {
		t.Errorf("Quantile sorted its input: %v", xs)
	}
}
