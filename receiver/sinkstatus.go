package receiver

import (
	"time"

	"github.com/gofiber/fiber/v2"
)

// SinkStatus is one sink's state as GET /v1/sinks shows it. The receiver does not know the sinks;
// serve hands it a function that reads them (the dispatcher's statistics).
type SinkStatus struct {
	Name                string    `json:"name"`
	Depth               int64     `json:"depth"` // queued deliveries; -1 when unreadable
	InFlight            int       `json:"in_flight"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	Breaker             string    `json:"breaker"` // closed, open or half-open
	BreakerOpenUntil    time.Time `json:"breaker_open_until,omitzero"`
	Disabled            bool      `json:"disabled"`
	DisabledReason      string    `json:"disabled_reason,omitempty"`
	// Counters since the process started.
	Delivered uint64 `json:"delivered"`
	Failed    uint64 `json:"failed"`
	Dead      uint64 `json:"dead"`
}

// sinkStatus is GET /v1/sinks.
func (r *Receiver) sinkStatus(c *fiber.Ctx) error {
	if r.cfg.Sinks == nil {
		return sendJSON(c, []SinkStatus{})
	}
	out := r.cfg.Sinks()
	if out == nil {
		out = []SinkStatus{}
	}
	return sendJSON(c, out)
}
