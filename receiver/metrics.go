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

func newMetrics(reg prometheus.Registerer, backlog func() float64) (*metrics, error) {
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
	if err := metricreg.Register(reg, m.deliveries, m.ack, m.authFailures, m.authLimited, gauge); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) delivery(kind, outcome string) {
	m.deliveries.WithLabelValues(kind, outcome).Inc()
}

// backlogCache keeps the last inbox count for a second, so that frequent scrapes do not each
// run a count over the inbox.
type backlogCache struct {
	mu    sync.Mutex
	at    time.Time
	value float64
}

const backlogMaxAge = time.Second

// backlog is the GaugeFunc of scribehook_inbox_backlog. On a store error it keeps reporting the
// last known value; readiness is where store trouble shows.
func (r *Receiver) backlog() float64 {
	c := &r.backlogCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < backlogMaxAge {
		return c.value
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := r.cfg.Store.InboxBacklog(ctx)
	if err != nil {
		r.log.WithError(err).Warn("inbox backlog for metrics")
		return c.value
	}
	c.value, c.at = float64(n), time.Now()
	return c.value
}
