package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Bodies are streamed (fiber.Config.StreamRequestBody): fasthttp would otherwise read a whole
// body before any handler runs, into a buffer of the size the client announces, so anyone who
// can reach the port could make serve allocate BodyLimit per connection by announcing a large
// body and sending it slowly. Streaming, a callback's token is checked before a byte of its
// body is read, and a body is only ever held as far as it has really arrived.

// otherBodyLimit bounds the bodies of the routes that are not callbacks (dashboard sign-in,
// dead-letter replay): small forms, never documents; otherBodyTimeout is the time they get to
// arrive, on any server.
const (
	otherBodyLimit   = 1 << 20
	otherBodyTimeout = 15 * time.Second
)

// errBodyTooLarge is returned by readBody past its limit.
var errBodyTooLarge = errors.New("request body exceeds the limit")

// initialBodyBuffer caps the first allocation for a body: the announced length is only a
// claim until the bytes arrive.
const initialBodyBuffer = 64 << 10

// readBody reads the request's body, at most limit bytes, into a buffer the caller owns (Fiber
// reuses its own). Past the limit it reads no further and returns errBodyTooLarge; the
// connection must then be closed (closeUnread), since the rest of the body is still on it.
func readBody(c *fiber.Ctx, limit int) ([]byte, error) {
	req := c.Request()
	announced := req.Header.ContentLength() // -1 chunked, -2 none (no body on a request)
	if announced > limit {
		return nil, errBodyTooLarge
	}
	stream := req.BodyStream()
	if stream == nil {
		// Not streamed (app.Test, or a request without a body): the body is in memory already.
		b := req.Body()
		if len(b) > limit {
			return nil, errBodyTooLarge
		}
		return bytes.Clone(b), nil
	}
	size := initialBodyBuffer
	if announced >= 0 && announced < size {
		size = announced + 1 // +1: the read that sees EOF needs room, or the buffer grows
	}
	buf, err := readGrowing(io.LimitReader(stream, int64(limit)+1), make([]byte, 0, size), announced)
	if err != nil {
		return nil, err
	}
	if len(buf) > limit {
		return nil, errBodyTooLarge
	}
	c.Locals(bodyReadKey{}, true)
	return buf, nil
}

// readGrowing reads r to its end into buf, doubling buf as the bytes arrive (a body is only
// held as far as it has arrived), but never past the announced length (+1 for the read that
// sees EOF), so that a body of the length its request announced ends in a buffer of its size:
// a 17 MB result is held in 17 MB, not in the 32 MB the next doubling would give, and the
// doublings before it are the only garbage. announced < 0: unknown.
func readGrowing(r io.Reader, buf []byte, announced int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			next := 2 * cap(buf)
			if announced >= len(buf) && next > announced+1 {
				next = announced + 1
			}
			grown := make([]byte, len(buf), max(next, cap(buf)+512))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// bodyReadKey marks in a request's locals that readBody read its streamed body to the end.
type bodyReadKey struct{}

// closeUnread makes the connection close after this response: the request's body was not read
// to its end, and what is left of it must not be parsed as the next request. lingerListener
// then drains it briefly so the client still sees the response.
func closeUnread(c *fiber.Ctx) {
	c.Context().SetConnectionClose()
}

// answerUnread answers a request whose body readBody could not read (err, with limit): 413
// past the limit, 400 otherwise, and the connection closes (closeUnread).
func answerUnread(c *fiber.Ctx, err error, limit int) error {
	closeUnread(c)
	if errors.Is(err, errBodyTooLarge) {
		return writeError(c, fiber.StatusRequestEntityTooLarge, "request body exceeds "+strconv.Itoa(limit)+" bytes")
	}
	return writeError(c, fiber.StatusBadRequest, "request body could not be read")
}

// readRouteBody is readBody for a route of the receiver. On a server other than Serve's (Mount
// in a parent app whose ReadTimeout may be none at all), a streamed body gets readTimeout from
// now, as preBody gives it under Serve; the deadline is lifted once the body is in, since the
// parent's server may leave the connection's deadline alone for its next request.
//
// A body that failed (too slow, too large) keeps a deadline in the past: the server must not
// go on reading what is left of it (net/http drains an unread body before it closes), which
// would let a client hold the connection by sending slowly.
func (r *Receiver) readRouteBody(c *fiber.Ctx, limit int) (body []byte, err error) {
	if c.Request().BodyStream() != nil && c.App() != r.app {
		timeout := readTimeout
		if limit <= otherBodyLimit {
			timeout = r.otherBodyTimeout
		}
		if conn := c.Context().Conn(); conn != nil {
			if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
				return nil, fmt.Errorf("set read deadline: %w", err)
			}
			defer func() {
				until := time.Time{}
				if err != nil {
					until = time.Now()
				}
				_ = conn.SetReadDeadline(until)
			}()
		}
	}
	return readBody(c, limit)
}

// limitOtherBodies is the app-level pass of the standalone app (Serve, App): it reads the body
// of every request that is not a callback (bounded by otherBodyLimit) before routing, so that
// requests no route takes are read too and the connection stays usable; routes read their own
// bodies whatever the app (readOtherBody, callbackRoute). It runs before any route matched, so
// it goes by the app's own layout: callbacks at callbackPath. Any answer on a callback path that
// leaves the body unread closes the connection: the rest of the body must not be parsed as the
// next request.
func (r *Receiver) limitOtherBodies(c *fiber.Ctx) error {
	if c.Request().BodyStream() == nil {
		return c.Next()
	}
	if isCallbackPath(c.Path()) || isReadPath(c.Path()) {
		// Their routes check the credential on the headers first, and read the body after.
		defer closeIfUnread(c)
		return c.Next()
	}
	b, err := readBody(c, otherBodyLimit)
	if err != nil {
		return answerUnread(c, err, otherBodyLimit)
	}
	c.Request().SetBodyRaw(b)
	return c.Next()
}

// closeIfUnread closes the connection after a request whose streamed body was not read to its
// end (bodyReadKey).
func closeIfUnread(c *fiber.Ctx) {
	if c.Locals(bodyReadKey{}) == nil {
		closeUnread(c)
	}
}

// isReadPath matches the standalone app's paths of the read API and /metrics, which check a
// credential before they read a body (readRoute), as Fiber routes them (case-insensitively).
func isReadPath(p string) bool {
	return len(p) >= 4 && strings.EqualFold(p[:4], "/v1/") || strings.EqualFold(strings.TrimRight(p, "/"), "/metrics")
}

// isCallbackPath matches the standalone app's callback paths, /v1/callbacks/…, the way Fiber
// routes them (case-insensitively). Only what runs before routing on that app, or on Serve's
// server, may go by it: everywhere else the route that matched decides (callbackRoute).
func isCallbackPath(p string) bool {
	_, callback, _ := splitCallbackPath(p)
	return callback
}
