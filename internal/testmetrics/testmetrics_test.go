package testmetrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/internal/testmetrics"
)

func TestSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "h"}, []string{"sink", "outcome"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	reg.MustRegister(c, g)
	c.WithLabelValues("a", "ok").Add(2)
	c.WithLabelValues("a", "dead").Add(3)
	c.WithLabelValues("b", "ok").Add(5)
	c.WithLabelValues("b", "dead")
	g.Set(7)

	cases := []struct {
		name   string
		labels []string
		want   float64
		listed bool
	}{
		{"c_total", nil, 10, true},
		{"c_total", []string{"sink", "a"}, 5, true},
		{"c_total", []string{"sink", "a", "outcome", "dead"}, 3, true},
		{"c_total", []string{"sink", "b", "outcome", "dead"}, 0, true},
		{"c_total", []string{"sink", "c"}, 0, false},
		{"g", nil, 7, true},
		{"missing", nil, 0, false},
	}
	for _, tc := range cases {
		got, listed := testmetrics.Series(t, reg, tc.name, tc.labels...)
		if got != tc.want || listed != tc.listed {
			t.Errorf("Series(%s, %q) = %v, %v; want %v, %v", tc.name, tc.labels, got, listed, tc.want, tc.listed)
		}
		if v := testmetrics.Value(t, reg, tc.name, tc.labels...); v != tc.want {
			t.Errorf("Value(%s, %q) = %v, want %v", tc.name, tc.labels, v, tc.want)
		}
	}
}
