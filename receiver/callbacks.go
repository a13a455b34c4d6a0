package receiver

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

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

// handleCallback is POST|PUT /v1/callbacks/:token: authenticate, copy, classify, commit, and
// only then answer 2xx.
func (r *Receiver) handleCallback(c *fiber.Ctx) error {
	start := time.Now()
	// The commit must not depend on the request's lifetime (fasthttp has no per-request
	// cancellation anyway), but it must not hang either: past ingestTimeout the service gets a
	// 503 and retries.
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()

	// The token is checked before a byte of the body is read (see body.go). Every answer that
	// leaves the body unread closes the connection (limitOtherBodies).
	who, err := r.authenticate(ctx, c.Params("token"))
	if err != nil {
		return r.reject(c, kindUnknown, logrus.Fields{}, err)
	}
	// The raw bytes, as sent: the signature covers them before any content decoding. They are
	// read into a buffer of our own, which the batcher may keep after the handler returns.
	raw, err := readBody(c, r.bodyLimit)
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			r.metrics.delivery(kindUnknown, outcomeTooLarge)
		} else {
			// The client stopped sending (or the read timed out): nothing to store, and nobody
			// is likely listening for the answer.
			r.metrics.delivery(kindUnknown, outcomeError)
			r.log.WithField("route", who.route).WithError(err).Warn("callback body could not be read")
		}
		return answerUnread(c, err, r.bodyLimit)
	}
	if len(who.secrets) > 0 {
		if err := verifySignature(func(k string) string { return c.Get(k) }, raw, who.secrets, r.now()); err != nil {
			return r.reject(c, kindUnknown, logrus.Fields{"route": who.route}, err)
		}
	}
	encoding := strings.Clone(c.Get(fiber.HeaderContentEncoding))
	body, undecodable, err := decodeBody(raw, encoding, r.bodyLimit)
	if errors.Is(err, errTooLarge) {
		r.metrics.delivery(kindUnknown, outcomeTooLarge)
		return writeError(c, fiber.StatusRequestEntityTooLarge, "decoded request body exceeds "+strconv.Itoa(r.bodyLimit)+" bytes")
	}
	headers := requestHeaders(c)
	if undecodable != "" && encoding != "" {
		// The body is stored still encoded; keep what is needed to decode it later.
		headers["content-encoding"] = encoding
	}
	d := buildDelivery(inbound{
		Route:       who.route,
		Body:        body,
		Headers:     headers,
		Undecodable: undecodable,
		ReceivedAt:  r.now().UTC(),
	})
	fields := deliveryFields(d)
	kind := kindLabel(d)
	if err := r.checkJob(ctx, who, d); err != nil {
		return r.reject(c, kind, fields, err)
	}
	res, err := r.cfg.Ingester.Submit(ctx, d)
	if err != nil {
		r.metrics.delivery(kind, outcomeError)
		r.log.WithFields(fields).WithError(err).Error("delivery not stored; asking the service to retry")
		c.Set(fiber.HeaderRetryAfter, retryAfter)
		return writeError(c, fiber.StatusServiceUnavailable, "delivery not stored, retry later")
	}
	ack := ackBody{ID: res.ID}
	switch {
	case res.Duplicate:
		ack.Status = outcomeDuplicate
	case res.Quarantined:
		ack.Status = outcomeQuarantined
		r.log.WithFields(fields).WithField("reason", d.Quarantine).Warn("delivery quarantined")
	default:
		ack.Status = outcomeStored
		if r.cfg.Notifier != nil {
			r.cfg.Notifier.Committed(res.ID, d.PartitionKey)
		}
	}
	r.metrics.delivery(kind, ack.Status)
	r.metrics.ack.Observe(time.Since(start).Seconds())
	return c.Status(fiber.StatusOK).JSON(ack)
}

// reject answers an authentication failure with 401, or a store failure met while
// authenticating with 503 so that the service retries.
func (r *Receiver) reject(c *fiber.Ctx, kind string, fields logrus.Fields, err error) error {
	var ae *authError
	if errors.As(err, &ae) {
		r.metrics.delivery(kind, outcomeUnauthorized)
		r.log.WithFields(fields).WithField("reason", ae.msg).Warn("callback rejected")
		return writeError(c, fiber.StatusUnauthorized, ae.msg)
	}
	r.metrics.delivery(kind, outcomeError)
	r.log.WithFields(fields).WithError(err).Error("callback not authenticated: store failed")
	c.Set(fiber.HeaderRetryAfter, retryAfter)
	return writeError(c, fiber.StatusServiceUnavailable, "cannot check the token now, retry later")
}

// requestHeaders copies the headers worth keeping, by lower-case name.
func requestHeaders(c *fiber.Ctx) map[string]string {
	h := make(map[string]string, len(keptHeaders))
	for _, name := range keptHeaders {
		if v := c.Get(name); v != "" {
			// c.Get points into Fiber's reused buffer: clone what outlives the handler.
			h[name] = strings.Clone(v)
		}
	}
	return h
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
