// Package testmetrics reads metric values from a Prometheus registry, for the tests of the
// parts that count what they do (the pipeline, the pruner, the sinks' dispatcher).
package testmetrics

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value is Series's value alone: 0 when g lists no such series.
func Value(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	tb.Helper()
	v, _ := Series(tb, g, name, labels...)
	return v
}

// Series is the value of the counter or gauge name over its series that carry every label of
// labels (name, value, name, value…), summed when several do (no labels: every series of
// name), and whether g lists any such series: a counter that was never incremented but is
// listed at 0 differs from one that is not there.
func Series(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	tb.Helper()
	if len(labels)%2 != 0 {
		tb.Fatalf("labels of %s: %q is not name, value pairs", name, labels)
	}
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	var v float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				found = true
			}
		}
	}
	return v, found
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i < len(labels); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
		}) {
			return false
		}
	}
	return true
}
