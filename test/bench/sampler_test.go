package bench

import (
	"testing"
	"time"
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
