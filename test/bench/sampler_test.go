package bench

import (
	"reflect"
	"testing"
	"time"

	"github.com/troupe-ml/troupe/test/bench/measure"
	"github.com/troupe-ml/troupe/test/bench/report"
)

func TestCachesSynced(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	unix := func(d time.Duration) float64 { return float64(start.Add(d).UnixNano()) / float64(time.Second) }
	for _, tc := range []struct {
		name     string
		counters map[string]float64
		want     time.Duration
	}{
		{"a placer without the metric", map[string]float64{"cycles_total": 3}, 0},
		{"not synced yet", map[string]float64{"caches_synced_timestamp_seconds": 0}, 0},
		{"synced 412 ms after the clock's start", map[string]float64{"caches_synced_timestamp_seconds": unix(412 * time.Millisecond)}, 412 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A float64 of Unix seconds keeps about a quarter of a microsecond.
			if got := cachesSynced(start, tc.counters); (got - tc.want).Abs() > time.Microsecond {
				t.Errorf("cachesSynced = %v, want %v", got, tc.want)
			}
		})
	}
}

// A cycle sample is what Troupe's counters grew by between two scrapes:
// binds summed over their results.
func TestCycleSample(t *testing.T) {
	scrape := func(cycles, cpu, ok, failed float64) []measure.Sample {
		return []measure.Sample{
			{Name: troupeCycles, Value: cycles},
			{Name: troupeDecisionCPU, Value: cpu},
			{Name: troupeBinds, Labels: map[string]string{"result": "success"}, Value: ok},
			{Name: troupeBinds, Labels: map[string]string{"result": "error"}, Value: failed},
		}
	}
	got := cycleSample(3*time.Second, 120, scrape(10, 0.5, 400, 2), scrape(14, 0.75, 440, 3))
	want := report.CycleSample{At: 3 * time.Second, Backlog: 120, Cycles: 4, DecisionCPUSeconds: 0.25, Binds: 41}
	if got != want {
		t.Errorf("cycleSample = %+v, want %+v", got, want)
	}
}

// The gangs answered further apart than the grace are read from the
// spread histogram's buckets, from its smallest bound at or above the
// grace, whatever order the exposition lists them in.
func TestAnsweredApart(t *testing.T) {
	// A histogram of 40 gangs: 30 answered within 1 s, 36 within 2 s,
	// 39 within 5 s.
	histogram := []measure.Sample{
		{Name: troupeAnswerSpread + "_bucket", Labels: map[string]string{"le": "5"}, Value: 39},
		{Name: troupeAnswerSpread + "_bucket", Labels: map[string]string{"le": "1"}, Value: 30},
		{Name: troupeAnswerSpread + "_bucket", Labels: map[string]string{"le": "+Inf"}, Value: 40},
		{Name: troupeAnswerSpread + "_bucket", Labels: map[string]string{"le": "2"}, Value: 36},
		{Name: troupeAnswerSpread + "_sum", Value: 31.5},
		{Name: troupeAnswerSpread + "_count", Value: 40},
	}
	for _, tc := range []struct {
		name    string
		samples []measure.Sample
		grace   time.Duration
		want    *report.AnsweredApart
	}{
		{"the grace a bound", histogram, 2 * time.Second, &report.AnsweredApart{Gangs: 4, Bound: 2 * time.Second}},
		{"the grace between bounds: the next bound up", histogram, 1500 * time.Millisecond, &report.AnsweredApart{Gangs: 4, Bound: 2 * time.Second}},
		{"a grace under every finite bound but one", histogram, 3 * time.Second, &report.AnsweredApart{Gangs: 1, Bound: 5 * time.Second}},
		{"a grace beyond every finite bound: +Inf tells none apart", histogram, time.Minute, nil},
		{"a placer without the histogram", []measure.Sample{{Name: troupeCycles, Value: 3}}, 2 * time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := answeredApart(tc.samples, tc.grace); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("answeredApart = %+v, want %+v", got, tc.want)
			}
		})
	}
}
