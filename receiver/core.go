package receiver

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"
)

// The callback endpoint is written once, here, for every server that carries it: the Fiber
// route (Serve, App, Mount) and the net/http handler (Handler). A server only says how to read
// a header and the body, and writes the answer.

// callbackRequest is one callback request as the core sees it.
type callbackRequest interface {
	// header is a request header, "" when absent; the core clones what it keeps.
	header(name string) string
	// body reads the raw body, at most limit bytes, into a buffer the core owns:
	// errBodyTooLarge past it (before reading, when the announced length says so).
	body(limit int) ([]byte, error)
	// client is the client key the failed-authentication limit counts it under (authlimit.go).
	client() netip.Addr
}

// callbackAnswer is what the core answers; the server writes it as it is.
type callbackAnswer struct {
	status int
	// body is an ackBody or an apiError, written as JSON (marshalPlain).
	body any
	// retryAfter asks the client to wait this many seconds before retrying (503s, 429s);
	// "" asks nothing.
	retryAfter string
	// bodyFailed: the body could not be read to its end (too large, cut short); what is left
	// of it is still on the connection, which must close after the answer.
	bodyFailed bool
}

func answerError(status int, msg string) callbackAnswer {
	return callbackAnswer{status: status, body: apiError{Error: msg, Status: status}}
}

// serveCallback is POST|PUT …/v1/callbacks/{token}: authenticate, read the body, verify its
// signature, classify, commit, and only then answer 2xx.
func (r *Receiver) serveCallback(token string, req callbackRequest) (answer callbackAnswer) {
	start := time.Now()
	// The commit must not depend on the request's lifetime (fasthttp has no per-request
	// cancellation anyway), but it must not hang either: past ingestTimeout the service gets a
	// 503 and retries.
	ctx, cancel := context.WithTimeout(context.Background(), ingestTimeout)
	defer cancel()

	// An address that sent too many unknown tokens waits, whatever token it sends now.
	key := req.client()
	if wait := r.authLimit.wait(key); wait > 0 {
		r.metrics.authLimited.WithLabelValues(surfaceCallback).Inc()
		a := answerError(http.StatusTooManyRequests, "too many failed authentications from this address; retry later")
		a.retryAfter = retryAfterSeconds(wait)
		return a
	}
	var span trace.Span // nil: tracing is off (tracing.go)
	if r.tracer.On() {
		ctx, span = r.startReceive(ctx)
		defer func() { endReceive(span, answer) }()
	}
	// The token is checked before a byte of the body is read (see body.go).
	who, err := r.authenticate(ctx, token)
	if err != nil {
		r.countUnknownToken(key, err)
		return r.reject(kindUnknown, logrus.Fields{}, err)
	}
	if span != nil {
		linkIncoming(span, who.route, req.header)
	}
	// The raw bytes, as sent: the signature covers them before any content decoding. They are
	// read into a buffer of our own, which the batcher may keep after the answer.
	raw, err := req.body(r.bodyLimit)
	if err != nil {
		a := answerError(http.StatusBadRequest, "request body could not be read")
		if errors.Is(err, errBodyTooLarge) {
			r.metrics.delivery(kindUnknown, outcomeTooLarge)
			a = answerError(http.StatusRequestEntityTooLarge, "request body exceeds "+strconv.Itoa(r.bodyLimit)+" bytes")
		} else {
			// The client stopped sending (or the read timed out): nothing to store, and nobody
			// is likely listening for the answer.
			r.metrics.delivery(kindUnknown, outcomeError)
			r.log.WithField("route", who.route).WithError(err).Warn("callback body could not be read")
		}
		a.bodyFailed = true
		return a
	}
	if who.verifier != nil {
		if err := verifySignature(who.verifier, req.header, raw, r.now()); err != nil {
			return r.reject(kindUnknown, logrus.Fields{"route": who.route}, err)
		}
	}
	encoding := strings.Clone(req.header("Content-Encoding"))
	body, undecodable, err := decodeBody(raw, encoding, r.bodyLimit)
	if errors.Is(err, errTooLarge) {
		r.metrics.delivery(kindUnknown, outcomeTooLarge)
		return answerError(http.StatusRequestEntityTooLarge, "decoded request body exceeds "+strconv.Itoa(r.bodyLimit)+" bytes")
	}
	headers := requestHeaders(req.header)
	if undecodable != "" && encoding != "" {
		// The body is stored still encoded; keep what is needed to decode it later.
		headers["content-encoding"] = encoding
	}
	if span != nil {
		storeTraceContext(ctx, headers)
	}
	d := buildDelivery(inbound{
		Route:       who.route,
		Body:        body,
		Headers:     headers,
		Undecodable: undecodable,
		ReceivedAt:  r.now().UTC(),
	})
	kind := kindLabel(d)
	if span != nil {
		nameDelivery(span, d)
	}
	if err := r.checkJob(ctx, who, d); err != nil {
		return r.reject(kind, deliveryFields(d), err)
	}
	res, err := r.cfg.Ingester.Submit(ctx, d)
	if err != nil {
		r.metrics.delivery(kind, outcomeError)
		r.log.WithFields(deliveryFields(d)).WithError(err).Error("delivery not stored; asking the service to retry")
		a := answerError(http.StatusServiceUnavailable, "delivery not stored, retry later")
		a.retryAfter = retryAfter
		return a
	}
	if span != nil {
		stored(span, res)
	}
	ack := ackBody{ID: res.ID}
	switch {
	case res.Duplicate:
		ack.Status = outcomeDuplicate
	case res.Quarantined:
		ack.Status = outcomeQuarantined
		r.log.WithFields(deliveryFields(d)).WithField("reason", d.Quarantine).Warn("delivery quarantined")
	default:
		ack.Status = outcomeStored
		if r.cfg.Notifier != nil {
			r.cfg.Notifier.Committed(res.ID, d.PartitionKey)
		}
	}
	r.metrics.delivery(kind, ack.Status)
	r.metrics.ack.Observe(time.Since(start).Seconds())
	return callbackAnswer{status: http.StatusOK, body: ack}
}

// countUnknownToken counts a failed authentication of key's when err says the token is
// unknown: what a guess gets. A revoked, expired or misused token was a real one once (the
// service retrying an old job's callback), and counting those could make the service's own
// address wait.
func (r *Receiver) countUnknownToken(key netip.Addr, err error) {
	var ae *authError
	if errors.As(err, &ae) && ae.msg == msgUnknownToken {
		r.authFailed(key, surfaceCallback)
	}
}

// reject answers an authentication failure with 401, or a store failure met while
// authenticating with 503 so that the service retries.
func (r *Receiver) reject(kind string, fields logrus.Fields, err error) callbackAnswer {
	var ae *authError
	if errors.As(err, &ae) {
		r.metrics.delivery(kind, outcomeUnauthorized)
		r.log.WithFields(fields).WithField("reason", ae.msg).Warn("callback rejected")
		return answerError(http.StatusUnauthorized, ae.msg)
	}
	r.metrics.delivery(kind, outcomeError)
	r.log.WithFields(fields).WithError(err).Error("callback not authenticated: store failed")
	a := answerError(http.StatusServiceUnavailable, "cannot check the token now, retry later")
	a.retryAfter = retryAfter
	return a
}

// requestHeaders copies the headers worth keeping, by lower-case name.
func requestHeaders(get func(string) string) map[string]string {
	h := make(map[string]string, len(keptHeaders))
	for _, name := range keptHeaders {
		if v := get(name); v != "" {
			// Fiber's values point into a reused buffer: clone what outlives the request.
			h[name] = strings.Clone(v)
		}
	}
	return h
}

// callbackPath starts the path of every callback route, under whatever prefix the receiver is
// mounted at.
const callbackPath = "/v1/callbacks/"

// splitCallbackPath reads a path relative to the receiver's root the way Fiber routes the
// callback routes (case-insensitive, trailing slashes dropped, the raw segment as the token):
// callback says p is under callbackPath, routed that a callback route takes it.
func splitCallbackPath(p string) (token string, callback, routed bool) {
	if len(p) <= len(callbackPath) || !strings.EqualFold(p[:len(callbackPath)], callbackPath) {
		return "", false, false
	}
	token = strings.TrimRight(p[len(callbackPath):], "/")
	return token, true, token != "" && !strings.Contains(token, "/")
}
