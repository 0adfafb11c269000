package testutil

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// HistogramCounts are a histogram's observations at one moment: how many
// in all, and how many above each of some of its bounds.
type HistogramCounts struct {
	Count uint64
	Over  map[float64]uint64
}

// ReadHistogram reads h's observations, and how many lie above each of
// bounds, which must be bounds of h's buckets.
func ReadHistogram(h prometheus.Histogram, bounds ...float64) (HistogramCounts, error) {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return HistogramCounts{}, err
	}
	c := HistogramCounts{Count: m.GetHistogram().GetSampleCount(), Over: map[float64]uint64{}}
	for _, b := range m.GetHistogram().GetBucket() {
		for _, bound := range bounds {
			if b.GetUpperBound() == bound {
				c.Over[bound] = c.Count - b.GetCumulativeCount()
			}
		}
	}
	if len(c.Over) != len(bounds) {
		return c, fmt.Errorf("the histogram lacks some of the bounds %v: it has %d of them", bounds, len(c.Over))
	}
	return c, nil
}

// Since are the observations made after before was read.
func (c HistogramCounts) Since(before HistogramCounts) HistogramCounts {
	out := HistogramCounts{Count: c.Count - before.Count, Over: map[float64]uint64{}}
	for bound, n := range c.Over {
		out.Over[bound] = n - before.Over[bound]
	}
	return out
}
