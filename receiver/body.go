package receiver

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Bodies are streamed (fiber.Config.StreamRequestBody): fasthttp would otherwise read a whole
// body before any handler runs, into a buffer of the size the client announces, so anyone who
// can reach the port could make serve allocate BodyLimit per connection by announcing a large
// body and sending it slowly. Streaming, a callback's token is checked before a byte of its
// body is read, and a body is only ever held as far as it has really arrived.

// otherBodyLimit bounds the bodies of the routes that are not callbacks (dashboard sign-in,
// dead-letter replay): small forms, never documents.
const otherBodyLimit = 1 << 20

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
		size = announced + 1 // +1: the read that sees EOF needs room, or Buffer grows
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	n, err := buf.ReadFrom(io.LimitReader(stream, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errBodyTooLarge
	}
	c.Locals(bodyReadKey{}, true)
	return buf.Bytes(), nil
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

// limitOtherBodies reads the body of every request that is not a callback (bounded by
// otherBodyLimit) before its handler runs, so that handlers may use c.Body() and form values
// as usual; a callback's body is read by handleCallback itself, after its token is checked.
// Any answer on a callback path that leaves the body unread (a rejected token, a path or
// method no route takes, a panic) closes the connection: the rest of the body must not be
// parsed as the next request.
func (r *Receiver) limitOtherBodies(c *fiber.Ctx) error {
	if c.Request().BodyStream() == nil {
		return c.Next()
	}
	if isCallbackPath(c.Path()) {
		defer func() {
			if c.Locals(bodyReadKey{}) == nil {
				closeUnread(c)
			}
		}()
		return c.Next()
	}
	b, err := readBody(c, otherBodyLimit)
	if err != nil {
		return answerUnread(c, err, otherBodyLimit)
	}
	c.Request().SetBodyRaw(b)
	return c.Next()
}

// callbackPrefix starts the path of every callback route (register).
const callbackPrefix = "/v1/callbacks/"

// isCallbackPath matches /v1/callbacks/… the way Fiber routes it (case-insensitively).
func isCallbackPath(p string) bool {
	return len(p) > len(callbackPrefix) && strings.EqualFold(p[:len(callbackPrefix)], callbackPrefix)
}
