package receiver

import (
	"context"
	"net/url"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/sinks"
)

// sinkStatus is GET /v1/sinks.
func (r *Receiver) sinkStatus(c *fiber.Ctx) error {
	if r.cfg.Sinks == nil {
		return sendJSON(c, []sinks.SinkStats{})
	}
	out := r.cfg.Sinks()
	if out == nil {
		out = []sinks.SinkStats{}
	}
	return sendJSON(c, out)
}

// enableSink is POST /v1/sinks/:name/enable: a sink disabled by its destination's 410 answer
// or by an operator claims its queued deliveries again, and stays enabled across restarts.
// Enabling an enabled sink changes nothing.
func (r *Receiver) enableSink(c *fiber.Ctx) error {
	if r.cfg.EnableSink == nil || r.cfg.Sinks == nil {
		return writeError(c, fiber.StatusNotImplemented, "this receiver cannot enable sinks")
	}
	name, err := url.PathUnescape(c.Params("name"))
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, "sink name: invalid percent-encoding in the path")
	}
	if !slices.ContainsFunc(r.cfg.Sinks(), func(s sinks.SinkStats) bool { return s.Name == name }) {
		return writeError(c, fiber.StatusNotFound, "no sink of that name")
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.cfg.EnableSink(ctx, name); err != nil {
		return r.storeFailed(c, err)
	}
	r.log.WithField("sink", name).Info("read API: sink enabled")
	return sendJSON(c, fiber.Map{"status": "enabled", "name": name})
}
