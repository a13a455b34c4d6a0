package handlers

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	handled  *prometheus.CounterVec
	errors   *prometheus.CounterVec
	poisoned prometheus.Counter
	latency  prometheus.Histogram
	// afterFinal counts deliveries about a job already final: "duplicate" repeats the final
	// outcome, "late" is an account webhook of an earlier step, "quarantined" would have
	// changed it.
	afterFinal *prometheus.CounterVec
}

// newMetrics registers the handler metrics on reg (nil: not exported, still counted).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scribehook_deliveries_processed_total", Help: "Inbox rows applied to the store, by kind.",
		}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scribehook_handler_errors_total", Help: "Failed attempts to process an inbox row, by kind.",
		}, []string{"kind"}),
		poisoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scribehook_deliveries_failed_total", Help: "Inbox rows that failed after every retry.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scribehook_process_seconds", Help: "Time to apply one inbox row.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		afterFinal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scribehook_deliveries_after_final_total",
			Help: "Deliveries about a job or session already final, which changed nothing: duplicate (the same outcome again), late (an account webhook of an earlier step) or quarantined.",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.handled, m.errors, m.poisoned, m.latency, m.afterFinal)
	}
	return m
}
