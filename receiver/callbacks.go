package receiver

import (
	"net/netip"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// ackBody answers a committed delivery.
type ackBody struct {
	Status string `json:"status"`
	ID     int64  `json:"id"`
}

// appendJSON appends what plainjson.Marshal gives for a: Status is one of the outcome
// constants, which need no escaping.
func (a ackBody) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"status":"`...)
	dst = append(dst, a.Status...)
	dst = append(dst, `","id":`...)
	dst = strconv.AppendInt(dst, a.ID, 10)
	return append(dst, '}')
}

// handleCallback is the Fiber route of the callback endpoint (serveCallback).
func (r *Receiver) handleCallback(c *fiber.Ctx) error {
	a := r.serveCallback(c.Params("token"), fiberCallback{r, c})
	if a.retryAfter != "" {
		c.Set(fiber.HeaderRetryAfter, a.retryAfter)
	}
	if a.bodyFailed {
		closeUnread(c)
	}
	// Every other answer that leaves a streamed body unread closes the connection too
	// (callbackRoute).
	return sendJSON(c.Status(a.status), a.body)
}

// fiberCallback is a callback request carried by Fiber.
type fiberCallback struct {
	r *Receiver
	c *fiber.Ctx
}

func (f fiberCallback) header(name string) string { return f.c.Get(name) }

func (f fiberCallback) client() netip.Addr { return f.r.clientOf(f.c) }

func (f fiberCallback) body(limit int) ([]byte, error) {
	return f.r.readRouteBody(f.c, limit)
}

// deliveryFields are the log fields naming what a delivery is about.
func deliveryFields(d store.Delivery) logrus.Fields {
	f := logrus.Fields{"route": d.Route}
	switch {
	case d.Kind == api.CallbackLiveMessage:
		f["session_id"] = d.JobID
		f["message_type"] = d.MessageType
	case d.JobID != "":
		f["job_id"] = d.JobID
	}
	if d.Event != "" {
		f["event"] = d.Event
	}
	return f
}

func kindLabel(d store.Delivery) string {
	if d.Kind == "" {
		return kindUnknown
	}
	return string(d.Kind)
}
