package sinks

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/internal/metricreg"
)

// dispatchMetrics are the sink metrics; with no registerer they are kept but not exported.
type dispatchMetrics struct {
	reg         prometheus.Registerer
	deliveries  *prometheus.CounterVec
	breakerOpen *prometheus.GaugeVec
	disabled    *prometheus.GaugeVec
	rateLimited *prometheus.CounterVec

	mu     sync.Mutex
	depths []prometheus.Collector
	shared bool // the vectors above are registered
}

func newDispatchMetrics(reg prometheus.Registerer) *dispatchMetrics {
	return &dispatchMetrics{
		reg: reg,
		deliveries: metricreg.CounterVec("scribehook_sink_deliveries_total",
			"Delivery attempts by sink and outcome (delivered, retried, dead, disabled).", "sink", "outcome"),
		breakerOpen: metricreg.GaugeVec("scribehook_sink_breaker_open", "1 while the sink's breaker is open or half-open.", "sink"),
		disabled:    metricreg.GaugeVec("scribehook_sink_disabled", "1 once the sink is disabled (its destination answered that it is gone).", "sink"),
		rateLimited: metricreg.CounterVec("scribehook_sink_rate_limited_seconds_total",
			"Time the sink's worker held deliveries back for its rate limit (rate), in seconds.", "sink"),
	}
}

// add registers w's series: the shared vectors with the first sink, a depth gauge per sink.
func (m *dispatchMetrics) add(w *sinkWorker) error {
	m.breakerOpen.WithLabelValues(w.name).Set(0)
	m.disabled.WithLabelValues(w.name).Set(0)
	if w.bucket != nil {
		m.rateLimited.WithLabelValues(w.name).Add(0) // a rate-limited sink's series exists from the start
	}
	if m.reg == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.shared {
		if err := metricreg.Register(m.reg, m.deliveries, m.breakerOpen, m.disabled, m.rateLimited); err != nil {
			return fmt.Errorf("register sink metrics: %w", err)
		}
		m.shared = true
	}
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "scribehook_sink_queue_depth",
		Help:        "Deliveries queued for the sink (in flight or waiting), read at most every 5 s.",
		ConstLabels: prometheus.Labels{"sink": w.name},
	}, w.cachedDepth)
	if err := m.reg.Register(depth); err != nil {
		return fmt.Errorf("register queue depth: %w", err)
	}
	m.depths = append(m.depths, depth)
	return nil
}

func (m *dispatchMetrics) breaker(sink string, s BreakerState) {
	v := 0.0
	if s != BreakerClosed {
		v = 1
	}
	m.breakerOpen.WithLabelValues(sink).Set(v)
}

func (m *dispatchMetrics) unregister() {
	if m.reg == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.depths {
		m.reg.Unregister(c)
	}
	m.depths = nil
	if m.shared {
		m.reg.Unregister(m.deliveries)
		m.reg.Unregister(m.breakerOpen)
		m.reg.Unregister(m.disabled)
		m.reg.Unregister(m.rateLimited)
		m.shared = false
	}
}
