package handlers

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/internal/metricreg"
)

type metrics struct {
	handled  *prometheus.CounterVec
	errors   *prometheus.CounterVec
	poisoned prometheus.Counter
	replayed prometheus.Counter
	latency  prometheus.Histogram
	// afterFinal counts deliveries about a job already final: "duplicate" repeats the final
	// outcome, "late" is an account webhook of an earlier step, "quarantined" would have
	// changed it.
	afterFinal *prometheus.CounterVec
	// opsEvents counts the operational events emitted (job.overdue…), reconciled the
	// deliveries applied in place of lost callbacks.
	opsEvents  *prometheus.CounterVec
	reconciled *prometheus.CounterVec
	// whenErrors counts the events a sink's when expression failed over (not sent to it).
	whenErrors *prometheus.CounterVec
}

// newMetrics builds the handler metrics; New registers them, when it has a registerer (without
// one they are not exported, still counted).
func newMetrics() *metrics {
	m := &metrics{
		handled:  metricreg.CounterVec("scribehook_deliveries_processed_total", "Inbox rows applied to the store, by kind.", "kind"),
		errors:   metricreg.CounterVec("scribehook_handler_errors_total", "Failed attempts to process an inbox row, by kind.", "kind"),
		poisoned: metricreg.Counter("scribehook_deliveries_failed_total", "Inbox rows marked failed for good: after their last retry, or at once when no retry could change the outcome."),
		replayed: metricreg.Counter("scribehook_inbox_replayed_total", "Failed inbox rows moved back to pending by a replay of this process (read API, dashboard, Kit.Records)."),
		latency:  metricreg.Histogram("scribehook_process_seconds", "Time to apply one inbox row.", prometheus.ExponentialBuckets(0.0005, 2, 14)),
		afterFinal: metricreg.CounterVec("scribehook_deliveries_after_final_total",
			"Deliveries about a job or session already final, which changed nothing: duplicate (the same outcome again), late (an account webhook of an earlier step) or quarantined.",
			"outcome"),
		opsEvents: metricreg.CounterVec("scribehook_operational_events_total",
			"Operational events emitted (job.overdue, job.reconciled, sink.disabled, sink.enabled, inbox.failed), by type, whether or not a sink takes them.", "type"),
		reconciled: metricreg.CounterVec("scribehook_reconciled_deliveries_total",
			"Deliveries fetched from the service in place of lost callbacks and applied, by kind of job.", "kind"),
		whenErrors: metricreg.CounterVec("scribehook_sink_when_errors_total",
			"Events a sink's when expression failed to evaluate over (a field the event lacks…), which the sink was therefore not sent, by sink.", "sink"),
	}
	return m
}

// register registers the handler metrics and more (the bus's) on reg, all or none.
func (m *metrics) register(reg prometheus.Registerer, more ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	return metricreg.Register(reg, append([]prometheus.Collector{m.handled, m.errors, m.poisoned, m.replayed, m.latency, m.afterFinal, m.opsEvents, m.reconciled, m.whenErrors}, more...)...)
}
