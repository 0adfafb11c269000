package testutil

import (
	"slices"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// CounterValue sums the counter name over the series of controller-runtime's
// registry (this process's: every operator and scheduler a test runs in
// it) whose labels include labels.
func CounterValue(name string, labels map[string]string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if HasLabels(m, labels) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum, nil
}

// HasLabels reports whether the series m has every label of want, with its
// value.
func HasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
			return false
		}
	}
	return true
}
