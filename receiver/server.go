package receiver

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/valyala/fasthttp"
)

// fasthttp reads a request's headers, then (even with StreamRequestBody) waits for up to
// 8 KiB of its body, and only then runs a handler; it also frames a body by Transfer-Encoding
// when Content-Length comes with it, and its own error answers quote the request. The hooks
// here run on the server Serve starts, between the headers and the body: requests that can be
// refused on their headers alone are answered at once, before any handler and without waiting
// for a byte of their body, and the connection closes. An app mounted on another server gets
// none of this: these are that server's settings.

// refusalHeader carries a refusal from preBody to refuseOrContinue, as "<status> <message>".
// preBody deletes any copy a client sends, so only preBody's own reaches refuseOrContinue.
const refusalHeader = "X-Scribehook-Refusal"

// hardenServer installs the hooks on the server that Serve runs.
func (r *Receiver) hardenServer(s *fasthttp.Server) {
	s.HeaderReceived = r.preBody
	s.ExpectHandler = r.refuseOrContinue
	s.ErrorHandler = r.serverError
	// Errors then say what is wrong without quoting the request, should any be logged.
	s.SecureErrorLogMessage = true
	// Shutdown closes the connections that are not in a request (stopServer).
	next, hook := s.Handler, s.ConnState
	s.Handler = func(ctx *fasthttp.RequestCtx) {
		r.conns.handling(ctx.Conn())
		next(ctx)
	}
	s.ConnState = func(c net.Conn, state fasthttp.ConnState) {
		r.conns.state(c, state)
		if hook != nil {
			hook(c, state)
		}
	}
}

// sweepEvery paces stopServer's passes over the connections.
const sweepEvery = 50 * time.Millisecond

// stopServer is Shutdown of Serve's server. fasthttp's own stops accepting and waits for every
// connection to end, but closes only those idle for a while between two requests: a
// connection that has not sent its first request yet counts as active, and so holds the
// shutdown until its header timeout, and a request body still arriving holds it until
// readTimeout, past a 20 s shutdown. So, until fasthttp's returns, every connection that is
// not in a request (no handler started since its last answer) is closed, and a request's
// reads are bounded by half the time ctx leaves: it then has the other half to commit and
// answer. Closing one is safe whatever it was doing: nothing unanswered was acknowledged, and a
// client whose request is cut sends it again.
func (r *Receiver) stopServer(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- r.app.ShutdownWithContext(ctx) }()
	var limit time.Time
	if d, ok := ctx.Deadline(); ok {
		limit = time.Now().Add(time.Until(d) / 2)
	}
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		// Again on every tick: fasthttp's stop may be set after the first pass, and a
		// request answered before it leaves its connection idle.
		r.conns.sweep(limit)
		select {
		case err := <-done:
			return err
		case <-tick.C:
		}
	}
}

// connTracker follows the connections of Serve's server, and whether each is in a request:
// from its handler's start to the end of its answer (StateIdle) or its close.
type connTracker struct {
	mu    sync.Mutex
	conns map[net.Conn]bool // true while in a request
}

func (t *connTracker) state(c net.Conn, state fasthttp.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch state {
	case fasthttp.StateNew, fasthttp.StateIdle:
		if t.conns == nil {
			t.conns = map[net.Conn]bool{}
		}
		t.conns[c] = false
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(t.conns, c)
	}
}

func (t *connTracker) handling(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.conns[c]; ok {
		t.conns[c] = true
	}
}

// sweep closes the connections not in a request, and bounds the reads of the others by limit
// (none when zero).
func (t *connTracker) sweep(limit time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c, busy := range t.conns {
		lc, lingers := c.(*lingerConn)
		switch {
		case !busy:
			_ = c.Close()
		case lingers && !limit.IsZero():
			lc.limitReads(limit)
		}
	}
}

// preBody runs when a request's headers are in. A request to refuse gets an "Expect:
// 100-continue" of its own, which is what makes fasthttp skip the body and call
// refuseOrContinue instead of the handler. Every other request gets readTimeout for its body
// from now: the server's own read timeout (headerTimeout) only covers the headers.
func (r *Receiver) preBody(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	h.Del(refusalHeader)
	if status, msg := r.refusal(h); status != 0 {
		h.Set(refusalHeader, strconv.Itoa(status)+" "+msg)
		h.Set(fasthttp.HeaderExpect, "100-continue")
		return fasthttp.RequestConfig{}
	}
	if _, callback, _ := callbackTarget(h); !callback {
		return fasthttp.RequestConfig{ReadTimeout: r.otherBodyTimeout}
	}
	return fasthttp.RequestConfig{ReadTimeout: readTimeout}
}

// refusal is the status and message that refuse a request on its headers, or 0.
func (r *Receiver) refusal(h *fasthttp.RequestHeader) (int, string) {
	if status, msg := framingError(h.RawHeaders()); status != 0 {
		return status, msg
	}
	token, callback, routed := callbackTarget(h)
	switch {
	case !callback:
		return 0, ""
	case !routed:
		return fasthttp.StatusNotFound, "no such callback route"
	case !h.IsPost() && !h.IsPut():
		return fasthttp.StatusMethodNotAllowed, fasthttp.StatusMessage(fasthttp.StatusMethodNotAllowed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	// A valid token is looked up again by handleCallback: the decision here is only whether
	// the body is worth waiting for. A store failure leaves it to handleCallback (503).
	var ae *authError
	if _, err := r.authenticate(ctx, token); errors.As(err, &ae) {
		// Counted against the client's address by refuseOrContinue, which knows it.
		r.metrics.delivery(kindUnknown, outcomeUnauthorized)
		r.log.WithFields(logrus.Fields{"reason": ae.msg, "before_body": true}).Warn("callback rejected")
		return fasthttp.StatusUnauthorized, ae.msg
	}
	return 0, ""
}

// framingError refuses the header blocks whose body length another HTTP parser on the way (a
// proxy, a load balancer) could read differently, so that the end of one request would be the
// start of another to one of them (request smuggling, RFC 9112 §6.3). fasthttp itself refuses
// two Content-Length or two Transfer-Encoding lines, codings other than chunked and identity,
// and Transfer-Encoding in HTTP/1.0; it takes Transfer-Encoding over Content-Length, and
// ignores identity. raw is the header block as received, one field per line.
func framingError(raw []byte) (int, string) {
	var length, coding, notChunked bool
	for line := range bytes.Lines(raw) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch {
		case bytes.EqualFold(name, []byte(fasthttp.HeaderContentLength)):
			length = true
		case bytes.EqualFold(name, []byte(fasthttp.HeaderTransferEncoding)):
			coding = true
			notChunked = notChunked || !bytes.EqualFold(bytes.TrimSpace(value), []byte("chunked"))
		}
	}
	switch {
	case length && coding:
		return fasthttp.StatusBadRequest, "request has both Content-Length and Transfer-Encoding"
	case notChunked:
		return fasthttp.StatusNotImplemented, msgNotChunked
	}
	return 0, ""
}

const msgNotChunked = "unsupported transfer coding: only chunked is accepted"

// callbackTarget reads the token of a callback request from its headers the way Fiber will
// route it on the standalone app, whose callback routes are at callbackPath (splitCallbackPath).
func callbackTarget(h *fasthttp.RequestHeader) (token string, callback, routed bool) {
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	if err := u.Parse(h.Host(), h.RequestURI()); err != nil {
		return "", false, false // fasthttp answers it 400 when it parses the URI itself
	}
	return splitCallbackPath(string(u.PathOriginal()))
}

// refuseOrContinue answers the requests preBody refused, in the receiver's JSON shape, and
// lets the others (a client's own Expect: 100-continue) go on. fasthttp closes the connection
// after a refusal and drops what it had read past the headers.
func (r *Receiver) refuseOrContinue(ctx *fasthttp.RequestCtx) int {
	v := ctx.Request.Header.Peek(refusalHeader)
	if len(v) == 0 {
		return fasthttp.StatusContinue
	}
	code, msg, _ := strings.Cut(string(v), " ")
	status, err := strconv.Atoi(code)
	if err != nil || status < 400 {
		status, msg = fasthttp.StatusBadRequest, "malformed request"
	}
	if status == fasthttp.StatusUnauthorized && msg == msgUnknownToken {
		// The failure limit, which preBody could not apply: it has no client address.
		key := clientAddrKey(ctx.RemoteAddr(), string(ctx.Request.Header.Peek(fasthttp.HeaderXForwardedFor)), r.cfg.TrustedProxies)
		if wait := r.authLimit.wait(key); wait > 0 {
			r.metrics.authLimited.WithLabelValues(surfaceCallback).Inc()
			writeRawError(ctx, fasthttp.StatusTooManyRequests, "too many failed authentications from this address; retry later")
			ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, retryAfterSeconds(wait))
			return fasthttp.StatusTooManyRequests
		}
		r.authFailed(key, surfaceCallback)
	}
	writeRawError(ctx, status, msg)
	return status
}

// serverError answers a request fasthttp could not read (malformed, too large, too slow) in
// the receiver's JSON shape. err is not shown: fasthttp's messages quote the request, callback
// token included. fasthttp closes the connection after it.
func (r *Receiver) serverError(ctx *fasthttp.RequestCtx, err error) {
	status, msg := fasthttp.StatusBadRequest, "malformed request"
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		status = fasthttp.StatusRequestHeaderFieldsTooLarge
		msg = fasthttp.StatusMessage(status)
	case errors.As(err, &ne) && ne.Timeout():
		status = fasthttp.StatusRequestTimeout
		msg = fasthttp.StatusMessage(status)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status = fasthttp.StatusRequestEntityTooLarge
		msg = "request body exceeds " + strconv.Itoa(r.bodyLimit) + " bytes"
	case errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding):
		status, msg = fasthttp.StatusNotImplemented, msgNotChunked
	}
	r.log.WithField("status", status).Debug("request refused while reading it")
	writeRawError(ctx, status, msg)
}

// writeRawError is writeError for the hooks that run outside Fiber.
func writeRawError(ctx *fasthttp.RequestCtx, status int, msg string) {
	body, err := marshalPlain(apiError{Error: msg, Status: status})
	if err != nil {
		body = []byte(`{"error":"internal error","status":500}`)
	}
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
