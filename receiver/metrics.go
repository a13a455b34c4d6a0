package receiver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/internal/metricreg"
)

// Label values of scribehook_deliveries_total.
const (
	outcomeStored       = "stored"
	outcomeDuplicate    = "duplicate"
	outcomeQuarantined  = "quarantined"
	outcomeUnauthorized = "unauthorized"
	outcomeTooLarge     = "too_large"
	outcomeError        = "error"

	// kindUnknown labels deliveries rejected before they could be classified, and quarantined
	// ones, which have no kind.
	kindUnknown = "unknown"
)

type metrics struct {
	deliveries   *prometheus.CounterVec
	ack          prometheus.Histogram
	authFailures *prometheus.CounterVec
	authLimited  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, backlog, failed func() float64) (*metrics, error) {
	m := &metrics{
		deliveries: metricreg.CounterVec("scribehook_deliveries_total", "Callback deliveries received, by kind and outcome.", "kind", "outcome"),
		ack: metricreg.Histogram("scribehook_ack_seconds",
			"Time from receiving a callback to acknowledging it with a 2xx (the inbox commit included).",
			[]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}),
		authFailures: metricreg.CounterVec("scribehook_auth_failures_total",
			"Wrong credentials presented (a bearer token, a dashboard cookie or sign-in, an unknown callback token), by surface.", "surface"),
		authLimited: metricreg.CounterVec("scribehook_auth_limited_total",
			"Requests answered 429 because their client address presented too many wrong credentials, by surface.", "surface"),
	}
	gauge := metricreg.GaugeFunc("scribehook_inbox_backlog", "Inbox rows not processed yet (refreshed at most once a second).", backlog)
	failedGauge := metricreg.GaugeFunc("scribehook_inbox_failed",
		"Inbox rows failed for good, waiting for a replay (refreshed at most once a second).", failed)
	if err := metricreg.Register(reg, m.deliveries, m.ack, m.authFailures, m.authLimited, gauge, failedGauge); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) delivery(kind, outcome string) {
	m.deliveries.WithLabelValues(kind, outcome).Inc()
}

// countCache keeps the last count of inbox rows for a second, so that frequent scrapes do not
// each run a count over the inbox.
type countCache struct {
	mu    sync.Mutex
	at    time.Time
	value float64
}

const countMaxAge = time.Second

// get is the cached count, or count's answer when the cache is older than countMaxAge. On a
// store error it keeps reporting the last known value (logged with what): readiness is where
// store trouble shows.
func (c *countCache) get(r *Receiver, what string, count func(ctx context.Context) (int64, error)) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < countMaxAge {
		return c.value
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := count(ctx)
	if err != nil {
		r.log.WithError(err).Warn(what + " for metrics")
		return c.value
	}
	c.value, c.at = float64(n), time.Now()
	return c.value
}

// backlog is the GaugeFunc of scribehook_inbox_backlog.
func (r *Receiver) backlog() float64 {
	return r.backlogCache.get(r, "inbox backlog", r.cfg.Store.InboxBacklog)
}

// failedRows is the GaugeFunc of scribehook_inbox_failed.
func (r *Receiver) failedRows() float64 {
	return r.failedCache.get(r, "failed inbox rows", r.cfg.Store.CountFailedInbox)
}
