package metricreg

import "github.com/prometheus/client_golang/prometheus"

// The constructors below declare a collector from its name, help and labels, so that every
// part declares its metrics the same way, one line each.

// Counter is a counter without labels.
func Counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// CounterVec is a counter partitioned by labels.
func CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Gauge is a gauge without labels.
func Gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// GaugeVec is a gauge partitioned by labels.
func GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// GaugeFunc is a gauge whose value is read from f at each scrape.
func GaugeFunc(name, help string, f func() float64) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
}

// Histogram is a histogram without labels, with its buckets' upper bounds.
func Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}
