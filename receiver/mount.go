package receiver

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MountOptions says which routes Mount (and Handler) register besides the callback routes,
// which they always register. Paths are relative to where the receiver is mounted.
type MountOptions struct {
	// ReadAPI registers the local read API: GET /v1/jobs, /v1/jobs/:id,
	// /v1/jobs/:id/subtitles.:format, /v1/live/:id/messages, /v1/live/:id/events, the live
	// captions (/v1/live/:id/captions.m3u8, its segments /v1/live/:id/captions/N.vtt, the page
	// /v1/live/:id/captions.html and its events /v1/live/:id/captions/events, which a signed
	// URL opens too, and POST /v1/live/:id/captions/url, which signs one),
	// /v1/deadletters, /v1/inbox/failed, /v1/sinks, POST /v1/deadletters/:id/replay, POST
	// /v1/inbox/:id/replay, POST /v1/inbox/replay, POST /v1/sinks/:name/enable and POST
	// /v1/sessions/revoke (Config.ReadToken as a bearer token, or the dashboard's cookie).
	ReadAPI bool
	// Health registers GET /healthz and GET /readyz.
	Health bool
	// Metrics registers GET /metrics (Config.Metrics, in Prometheus' text format), behind the
	// read token as the read API is (a bearer, or the dashboard's cookie).
	Metrics bool
	// Dashboard registers the dashboard under /ui/. Its pages reach the read API and /metrics
	// by paths relative to their own, so it needs ReadAPI and Metrics under the same prefix.
	Dashboard bool
}

// Mount registers the receiver's routes on rt, under whatever prefix rt has (an app, a group
// such as app.Group("/hooks"), or an app later mounted with app.Mount): the callback routes
// POST|PUT /v1/callbacks/:token, and the others opts asks for. The callback URLs the service
// is given must then carry the prefix: Config.PublicURL is where the receiver is reached,
// prefix included ("https://example.com/hooks"), which the read API's paging links start from.
// When rt's prefix is known (a group, an app mounted already) and PublicURL's path does not
// end with it, Mount logs a warning naming both and Check reports a *PrefixError: the
// service's callbacks would miss the routes.
//
// Every route carries its own guarantees, since a parent app's settings do not come from the
// receiver (Fiber's Mount keeps only routes): the callback token is checked before the body is
// used; a callback body is bounded by Config.BodyLimit, before and after content decoding
// (413), and other bodies by 1 MiB; answers, errors and panics are answered in the receiver's
// JSON shape, whatever the parent's ErrorHandler and JSONEncoder; the receiver's logs never
// hold a token (the route that matched tells a callback, not the path); a streamed body gets
// 60 s to arrive, a commit 15 s (then 503 and Retry-After), an event stream 30 s per event.
//
// What the parent app must set, and why (FiberConfig sets it all):
//
//   - StreamRequestBody: true, for the token to be checked before the body is received (all
//     but the first 8 KiB, which fasthttp waits for before any handler runs). Without it
//     fasthttp reads a whole body, up to the parent's BodyLimit, before any handler runs: the
//     token is still checked before the body is used or stored, but an unauthenticated sender
//     can make the parent read (and hold) BodyLimit bytes per request.
//
//   - BodyLimit at least Config.BodyLimit (32 MiB by default), unless it streams: without
//     streaming, a body over the parent's BodyLimit (Fiber's default is 4 MiB) is refused by
//     the parent itself, with its own 413, before the receiver sees it, and a finished job's
//     result can be larger than 4 MiB. With StreamRequestBody the parent's BodyLimit only bounds
//     what fasthttp reads ahead, and the receiver's limit applies. Streaming lifts BodyLimit
//     from the parent's own routes as well: bound their bodies with LimitBody.
//
//   - DisablePreParseMultipartForm: true: otherwise fasthttp parses a multipart body, spilling
//     its files to disk, before any handler runs, streamed or not.
//
//   - ReadTimeout (e.g. 10 s), IdleTimeout and WriteTimeout: how long the parent waits for a
//     request's headers (and, without streaming, its body) and for a client to read an answer
//     is the parent server's; Fiber's defaults are no limit at all.
//
//   - Its listener wrapped with Listener (parent.Listener(rcv.Listener(ln))): a client still
//     sending a body that the route refused (too large, bad token) then reads the answer
//     rather than a connection reset, and one client address holds at most
//     Config.MaxConnsPerIP connections.
//
//   - ErrorHandler: the receiver's (ErrorHandler), or one that never quotes the request: Fiber's
//     own answer to a request no route took quotes its path ("Cannot POST …"), and a callback
//     URL spelled in a way no route takes (//v1/callbacks/T, /v1/./callbacks/T) still holds
//     its token.
//
// What it need not set: the receiver's JSONEncoder, recover middleware, body reading or limits
// for its routes (the receiver's routes answer their own errors whatever the ErrorHandler). What Mount cannot give: Serve's refusals on the headers
// alone (a bad token or ambiguous framing answered before fasthttp waits for the body, and
// without quoting the request in fasthttp's own error answers); run Serve on a port of its own
// for those.
func (r *Receiver) Mount(rt fiber.Router, opts MountOptions) {
	r.checkPrefix(rt)
	r.register(rt, opts)
}

// MetricsHandler serves Config.Metrics in Prometheus' text format with no credential, for a
// listener of the program's own that only its scraper reaches (the /metrics route asks for the
// read token).
func (r *Receiver) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(r.cfg.Metrics, promhttp.HandlerOpts{})
}

// register puts the routes opts asks for, and the callback routes, on rt. Each carries its
// middleware with it (callbackRoute, otherRoute): under Mount nothing else of the receiver's
// runs before it.
func (r *Receiver) register(rt fiber.Router, opts MountOptions) {
	rt.Post(callbackPath+":token", r.callbackRoute, r.handleCallback)
	rt.Put(callbackPath+":token", r.callbackRoute, r.handleCallback)
	// Any other path under callbackPath or method on it: answered here, where the route tells
	// that the path holds a token, rather than by the app's 404 and 405, which quote the path.
	rt.All(callbackPath+"+", r.callbackRoute, r.callbackNotRouted)
	r.registerOthers(rt, opts)
}

// registerOthers puts the routes other than the callbacks on rt.
func (r *Receiver) registerOthers(rt fiber.Router, opts MountOptions) {
	other := func(h ...fiber.Handler) []fiber.Handler {
		return append([]fiber.Handler{r.otherRoute}, h...)
	}
	// read routes check the credential, on the headers, before a byte of the body is read.
	read := func(h fiber.Handler) []fiber.Handler {
		return []fiber.Handler{r.readRoute, h}
	}
	if opts.Health {
		rt.Get("/healthz", other(r.healthz)...)
		rt.Get("/readyz", other(r.readyz)...)
	}
	if opts.Metrics {
		// Behind the read token: the port faces the service, and metrics tell an outsider the
		// sinks, their targets' answers and the traffic. A scraper sends the token as a bearer
		// (Prometheus' authorization.credentials_file), or a program serves MetricsHandler on a
		// listener of its own.
		rt.Get("/metrics", read(adaptor.HTTPHandler(r.MetricsHandler()))...)
	}
	if opts.ReadAPI {
		// The bearer check sits on each read route, not on a /v1 group: a group's middleware
		// would also run for /v1/callbacks.
		rt.Get("/v1/jobs", read(r.listJobs)...)
		rt.Get("/v1/search", read(r.search)...)
		rt.Get("/v1/jobs/:id", read(r.getJob)...)
		rt.Get("/v1/jobs/:id/subtitles.:format", read(r.subtitles)...)
		rt.Get("/v1/jobs/:id/speakers", read(r.getSpeakers)...)
		rt.Put("/v1/jobs/:id/speakers", read(r.putSpeakers)...)
		rt.Get("/v1/live/:id/messages", read(r.liveMessages)...)
		rt.Get("/v1/live/:id/events", read(r.liveEvents)...)
		// The captions take a signed URL too (captionRoute): players and browser sources
		// cannot send a bearer.
		signed := func(h fiber.Handler) []fiber.Handler { return []fiber.Handler{r.captionRoute, h} }
		rt.Get("/v1/live/:id/captions.m3u8", signed(r.captionsPlaylist)...)
		rt.Get("/v1/live/:id/captions.html", signed(r.captionsPage)...)
		rt.Get("/v1/live/:id/captions/events", signed(r.captionsEvents)...)
		rt.Get("/v1/live/:id/captions/:seg", signed(r.captionsSegment)...)
		rt.Post("/v1/live/:id/captions/url", read(r.captionsURL)...)
		rt.Get("/v1/deadletters", read(r.deadLetters)...)
		rt.Get("/v1/sinks", read(r.sinkStatus)...)
		rt.Post("/v1/deadletters/:id/replay", read(r.replayDeadLetter)...)
		rt.Get("/v1/inbox/failed", read(r.failedInbox)...)
		rt.Post("/v1/inbox/replay", read(r.replayFailedMany)...)
		rt.Post("/v1/inbox/:id/replay", read(r.replayFailed)...)
		rt.Post("/v1/sinks/:name/enable", read(r.enableSink)...)
		rt.Post("/v1/sinks/:name/replay", read(r.replaySink)...)
		rt.Get("/v1/sinks/:name/deliveries", read(r.sinkDeliveries)...)
		rt.Post("/v1/sessions/revoke", read(r.revokeSessions)...)
	}
	if opts.Dashboard {
		// The dashboard (receiver/internal/ui): embedded assets, sign-in and sign-out.
		r.ui.Mount(rt, r.otherRoute, r.limitLogin)
	}
}

// callbackRouteKey marks in a request's locals that a callback route matched it: its path
// holds a token (LogPath, errorHandler).
type callbackRouteKey struct{}

// callbackRoute comes first on every callback route. It marks the request as a callback, makes
// the connection close after an answer that leaves a streamed body unread (the rest of the body
// must not be parsed as the next request), and runs the route under guard.
func (r *Receiver) callbackRoute(c *fiber.Ctx) error {
	c.Locals(callbackRouteKey{}, true)
	if c.Request().BodyStream() != nil {
		defer closeIfUnread(c)
	}
	return r.guard(c)
}

// otherRoute comes first on every route that is not a callback and takes no credential
// (health, the dashboard's assets and sign-in): it reads the body (streamed or not) bounded by
// otherBodyLimit, so that handlers may use c.Body() and form values as usual, and runs the
// route under guard.
func (r *Receiver) otherRoute(c *fiber.Ctx) error {
	return r.guardFunc(c, func() error { return r.withOtherBody(c) })
}

// readRoute comes first on every route of the read API and /metrics: it checks the read token
// (or the dashboard's cookie) on the headers, before a byte of the body is read, then goes on
// as otherRoute. A refused request's body is never read: the connection closes after the
// answer, so that an unauthenticated client cannot hold it open by sending slowly.
func (r *Receiver) readRoute(c *fiber.Ctx) error {
	return r.guardFunc(c, func() error {
		if ok, err := r.checkReadAccess(c); !ok {
			if c.Request().BodyStream() != nil || c.Request().Header.ContentLength() != 0 {
				closeUnread(c)
			}
			return err
		}
		return r.withOtherBody(c)
	})
}

// withOtherBody reads the body bounded by otherBodyLimit and otherBodyTimeout, then runs the
// rest of the route.
func (r *Receiver) withOtherBody(c *fiber.Ctx) error {
	req := c.Request()
	if req.BodyStream() != nil || len(req.Body()) > otherBodyLimit {
		b, err := r.readRouteBody(c, otherBodyLimit)
		if err != nil {
			return answerUnread(c, err, otherBodyLimit)
		}
		req.SetBodyRaw(b)
	}
	return c.Next()
}

// guard runs the rest of the route.
func (r *Receiver) guard(c *fiber.Ctx) error { return r.guardFunc(c, c.Next) }

// guardFunc runs next with the receiver's own panic recovery and error answers: under Mount the
// parent app may have neither a recover middleware nor an ErrorHandler that keeps tokens out of
// its answers and logs. An error is answered here and never reaches the app's ErrorHandler.
func (r *Receiver) guardFunc(c *fiber.Ctx, next func() error) (err error) {
	defer func() {
		if e := recover(); e != nil {
			r.logPanic(c, e)
			perr, ok := e.(error)
			if !ok {
				perr = fmt.Errorf("%v", e)
			}
			err = r.errorHandler(c, perr)
		}
	}()
	if err := next(); err != nil {
		return r.errorHandler(c, err)
	}
	return nil
}

// callbackNotRouted answers a callback path no callback route takes: another method on a
// callback URL (405), or a path with more segments (404).
func (r *Receiver) callbackNotRouted(c *fiber.Ctx) error {
	if tok := strings.TrimRight(c.Params("+"), "/"); tok != "" && !strings.Contains(tok, "/") {
		return r.errorHandler(c, fiber.ErrMethodNotAllowed)
	}
	return r.errorHandler(c, fiber.ErrNotFound)
}
