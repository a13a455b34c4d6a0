package receiver

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// LimitBody bounds the request bodies of a parent app's own routes to limit bytes, streamed or
// not. With StreamRequestBody (which Mount asks the parent to set, so that a callback's token
// is checked before its body is received), fasthttp no longer applies the app's BodyLimit: a
// route that reads c.Body() would take a body of any size, read whole into memory. Use it on
// the app's own routes or groups:
//
//	api := app.Group("/api", receiver.LimitBody(1<<20))
//
// not app-wide ahead of the receiver's routes, which bound their own bodies (Config.BodyLimit)
// and check a callback's token before reading a byte of it.
//
// A body announced or found larger than limit is refused with fiber.ErrRequestEntityTooLarge
// (413), one that cannot be read with fiber.ErrBadRequest, both answered by the app's
// ErrorHandler; the connection then closes, since the rest of the body is still on it. A body
// within the limit is read into memory, and the route's c.Body() holds it.
func LimitBody(limit int) fiber.Handler {
	tooLarge := fiber.NewError(fiber.StatusRequestEntityTooLarge, "request body exceeds "+strconv.Itoa(limit)+" bytes")
	return func(c *fiber.Ctx) error {
		b, err := readBody(c, limit)
		if err != nil {
			if c.Request().BodyStream() != nil {
				closeUnread(c)
			}
			if errors.Is(err, errBodyTooLarge) {
				return tooLarge
			}
			return fiber.ErrBadRequest
		}
		if c.Request().BodyStream() != nil {
			c.Request().SetBodyRaw(b)
		}
		return c.Next()
	}
}

// FiberConfig is what a parent Fiber app that mounts the receiver must set (see Mount): bodies
// streamed, so that a callback's token is checked before its body is received (protect the
// app's own routes with LimitBody); BodyLimit at least Config.BodyLimit; no multipart parsing
// before the handlers; the server's timeouts (Fiber's defaults are none); the receiver's
// ErrorHandler, which never quotes a request's path. The program sets the rest (its own
// ErrorHandler if it has one, AppName, …) on the value it gets.
func (r *Receiver) FiberConfig() fiber.Config {
	return fiber.Config{
		StreamRequestBody:            true,
		BodyLimit:                    r.bodyLimit,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  headerTimeout,
		WriteTimeout:                 writeTimeout,
		IdleTimeout:                  idleTimeout,
		ErrorHandler:                 r.errorHandler,
	}
}
