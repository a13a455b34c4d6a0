package receiver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	fiberrecover "github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/captions"
	"github.com/scribehook/scribehook/captions/signedurl"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/internal/traces"
	"github.com/scribehook/scribehook/receiver/internal/ui"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// DefaultBodyLimit bounds a callback body, before and after content decoding. A finished job's
// result with words, translations and subtitles can reach several MiB; 32 MiB leaves room.
const DefaultBodyLimit = 32 << 20

// Route is a static callback token: for jobs created elsewhere and for account webhooks.
type Route struct {
	// Name identifies the route in stored deliveries and dedupe keys; "job" is reserved for
	// per-job tokens.
	Name  string
	Token string
	// SigningSecrets, when set, make the route require a Standard Webhooks / Svix signature
	// made with any of them ("whsec_<base64>" or raw); several allow rotation.
	SigningSecrets []string
}

// Ingester commits one delivery durably; *store.Batcher implements it.
type Ingester interface {
	Submit(ctx context.Context, d store.Delivery) (store.IngestResult, error)
}

// Notifier learns about inbox rows committed by the receiver, to process them at once. It must
// not block: the service waits for our answer. Rows a replay moved back to pending (POST
// /v1/inbox/replay) are told the same way, or, when the Notifier also has a method
// Replayed([]store.InboxKey) (the pipeline's, which counts them), through it.
type Notifier interface {
	Committed(inboxID int64, partitionKey string)
}

// SessionFeed pings subscribers when new messages of a session are stored (the pipeline's
// SessionFeed).
type SessionFeed interface {
	Subscribe(sessionID string) (notify <-chan struct{}, cancel func())
}

// Store is what the receiver needs of the store: callback tokens to check, and what the read
// API, the dashboard and the health and metrics routes read (jobs, dead letters and their
// replay, failed deliveries and their replay, the inbox's backlog, readiness). Deliveries go
// in through Config.Ingester, never through Store. A store.Store is one.
type Store interface {
	store.TokenChecker
	store.JobReader
	store.DeadLetterQueue
	store.InboxFailures
	// InboxBacklog counts pending inbox rows (the backlog gauge).
	InboxBacklog(ctx context.Context) (int64, error)
	// Ping checks the store is reachable (readiness).
	Ping(ctx context.Context) error
}

// Config configures New. Store and Ingester are required.
type Config struct {
	Store    Store
	Ingester Ingester
	Notifier Notifier    // optional
	Feed     SessionFeed // optional: without it the event stream polls the store every second

	Routes []Route
	// ReadToken is the bearer token of the local read API; empty disables the read API.
	ReadToken string
	// Sessions keeps the dashboard's sign-outs, for every replica sharing it. When nil, Store
	// is used if it implements ui.Sessions (the SQLite and PostgreSQL stores do); otherwise a
	// sign-out only clears the browser's cookie, and POST /v1/sessions/revoke answers 501.
	Sessions ui.Sessions
	// BodyLimit bounds a callback body in bytes, received and decoded; DefaultBodyLimit when 0.
	BodyLimit int
	// MaxConnsPerIP bounds the connections one client address (an IPv6 client's /64) holds
	// at once under Serve; DefaultMaxConnsPerIP when 0, no bound when negative (behind a proxy
	// that brings every delivery from one address and bounds clients itself).
	MaxConnsPerIP int
	// AuthFailureBurst is how many wrong credentials one client address (an IPv6 client's
	// /64) may present at once before it is answered 429 (authlimit.go), and AuthFailureRefill
	// how often it may present one more after that: DefaultAuthFailureBurst and
	// DefaultAuthFailureRefill when 0; a negative burst turns the limit off.
	AuthFailureBurst  int
	AuthFailureRefill time.Duration
	// TrustedProxies are the operator's proxies (a load balancer in front of the receiver):
	// a request from one of them is counted against the client address its X-Forwarded-For
	// names (the nearest one that is not a trusted proxy), not against the proxy's. Empty:
	// every request counts against the address it came from, and behind a proxy every client
	// shares the proxy's failures.
	TrustedProxies []netip.Prefix
	// PublicURL is the base URL clients reach the receiver at (configs public_url). Links the
	// receiver builds (paging) start from it, never from a request's Host header.
	PublicURL string
	// TokenTTL is how long a per-job callback token authenticates after it was minted;
	// DefaultTokenTTL when 0. The service's callbacks and retries come well within it.
	TokenTTL time.Duration

	// Ready reports whether the processing side (the router) runs; nil counts as ready.
	Ready func() bool
	// Notes lists conditions worth a look that do not stop this replica from taking
	// deliveries (the broker being away: deliveries are stored and swept); /readyz shows them.
	Notes func() []string
	// Sinks reads the state of the sinks for GET /v1/sinks (nil: none): the dispatcher's
	// Stats.
	Sinks func() []sinks.SinkStats
	// EnableSink enables a disabled sink again, durably, for POST /v1/sinks/:name/enable
	// (the dispatcher's Enable); nil answers that route 501.
	EnableSink func(ctx context.Context, name string) error
	// ReplaySink queues a window of a sink's events again, or backfills a sink added later, for
	// POST /v1/sinks/:name/replay (the kit's Records.ReplaySink); nil answers that route 501.
	ReplaySink func(ctx context.Context, sink string, w SinkReplayWindow) (store.SinkReplayResult, error)
	// SetSpeakers names a job's speakers for PUT /v1/jobs/:id/speakers (the kit's
	// Kit.SetSpeakers): store.ErrNotFound for an unknown job, an error wrapping
	// api.ValidationErrors for names that break a rule; nil answers that route 501.
	SetSpeakers func(ctx context.Context, jobID string, names api.SpeakerNames) (SpeakersView, error)
	// SinkHistory lists a sink's deliveries for GET /v1/sinks/:name/deliveries (the kit's
	// Records.SinkHistory); nil answers that route 501.
	SinkHistory func(ctx context.Context, q store.SinkHistoryQuery) ([]store.SinkHistoryItem, error)
	// Metrics is where the receiver registers its metrics and what /metrics serves; a fresh
	// registry when nil.
	Metrics *prometheus.Registry
	// Logger is where rejected callbacks, failed store writes and panics are logged; logrus's standard logger
	// when nil, as for the pipeline, since an operator must see them.
	Logger logrus.FieldLogger
	// Now is the receiver's clock: deliveries' received_at, token lifetimes, signature
	// timestamps, dead-letter replays and dashboard sessions; time.Now when nil.
	Now func() time.Time
	// Captions shapes the live sessions' HLS caption tracks (GET /v1/live/:id/captions.m3u8);
	// its zero value is usable (captions.Config).
	Captions captions.Config
	// CaptionsKey signs the captions' URLs (POST /v1/live/:id/captions/url); nil derives a
	// key from ReadToken (signedurl.DeriveKey), so that changing the read token revokes
	// every URL signed with the old one. With neither, captions take the read token only.
	CaptionsKey []byte
	// TracerProvider, when set, traces each callback with a callback.receive span and stores
	// its context with the delivery, for the pipeline's spans to continue (docs/operations.md,
	// Traces); nil traces nothing and costs nothing.
	TracerProvider trace.TracerProvider
}

// DefaultTokenTTL is the lifetime of a per-job callback token (docs/security.md).
const DefaultTokenTTL = 7 * 24 * time.Hour

// Timeouts of the HTTP server and of the receiver's own work.
const (
	readTimeout = 60 * time.Second // a 32 MiB body over a slow link, from the end of its headers
	// headerTimeout bounds the wait for a request's first byte on a new connection, and for
	// its line and headers: a connection that sends nothing, or its headers a byte at a time,
	// is closed after it rather than after readTimeout.
	headerTimeout = 10 * time.Second
	writeTimeout  = 30 * time.Second // per response, and per event on a stream (see sse.go)
	idleTimeout   = 120 * time.Second
	// ingestTimeout bounds the wait for the inbox commit: past it the service gets a 503 and
	// retries, rather than timing out on its side without knowing.
	ingestTimeout = 15 * time.Second
	storeTimeout  = 10 * time.Second
	// retryAfter is what a 503 asks the service to wait, in seconds.
	retryAfter = "5"
)

// Receiver is the Fiber app and its state.
type Receiver struct {
	cfg          Config
	log          *logrus.Entry
	now          func() time.Time
	bodyLimit    int
	tokenTTL     time.Duration
	app          *fiber.App
	routes       []staticRoute
	readToken    [sha256.Size]byte
	readOn       bool
	ui           *ui.UI
	metrics      *metrics
	backlogCache countCache
	failedCache  countCache

	// closing is closed by Shutdown: event streams end and readiness turns false.
	closing   chan struct{}
	closeOnce sync.Once
	// served are Serve's listeners, which Shutdown closes itself: fasthttp only knows a
	// listener once its Serve has run, and a Shutdown before that would leave it serving.
	servedMu sync.Mutex
	served   []net.Listener

	// heartbeat and pollEvery pace event streams, writeTimeout bounds each write; fields so
	// that tests can shorten them.
	heartbeat    time.Duration
	pollEvery    time.Duration
	writeTimeout time.Duration
	// headerTimeout is the server's read timeout until a request's headers are in (the
	// constant), a field so that tests can shorten it; otherBodyTimeout likewise.
	headerTimeout    time.Duration
	otherBodyTimeout time.Duration

	// authLimit counts failed authentications per client address; nil when off.
	authLimit *authLimiter

	// mounts is what Mount found wrong, for Check.
	mounts mountChecks

	// perAddr counts connections per client address for Serve; nil when unbounded.
	perAddr *addrCounter
	// conns are Serve's connections, for Shutdown (stopServer).
	conns connTracker

	// tracer starts the callback.receive spans; off without Config.TracerProvider.
	tracer traces.Tracer

	// captions holds the live sessions' caption tracks; captionSigner signs and checks their
	// URLs (nil: no key, no read token).
	captions      *captionCache
	captionKey    []byte
	captionSigner *signedurl.Signer
}

// New checks cfg and builds the app with every route.
func New(cfg Config) (*Receiver, error) { return newReceiver(cfg, nil) }

// newReceiver is New with a hook that adjusts the receiver's pacing before the app is built
// (tests shorten timeouts with it).
func newReceiver(cfg Config, tune func(*Receiver)) (*Receiver, error) {
	if cfg.Store == nil {
		return nil, errors.New("receiver: store is required")
	}
	if cfg.Ingester == nil {
		return nil, errors.New("receiver: ingester is required")
	}
	r := &Receiver{
		cfg:          cfg,
		log:          logx.Entry(cfg.Logger),
		now:          cfg.Now,
		bodyLimit:    cfg.BodyLimit,
		tokenTTL:     cfg.TokenTTL,
		closing:      make(chan struct{}),
		heartbeat:    15 * time.Second,
		pollEvery:    time.Second,
		writeTimeout: writeTimeout,
		tracer:       traces.New(cfg.TracerProvider),
	}
	r.log = logx.OrStandard(r.log).WithField("component", "receiver")
	if r.now == nil {
		r.now = time.Now
	}
	// Handlers that read cfg.Now (replaying a dead letter) must not call a nil clock.
	r.cfg.Now = r.now
	if r.bodyLimit <= 0 {
		r.bodyLimit = DefaultBodyLimit
	}
	if r.tokenTTL <= 0 {
		r.tokenTTL = DefaultTokenTTL
	}
	if err := cfg.Captions.Validate(); err != nil {
		return nil, fmt.Errorf("receiver: captions: %w", err)
	}
	r.captions = newCaptionCache(cfg.Captions)
	switch {
	case len(cfg.CaptionsKey) > 0:
		r.captionKey = bytes.Clone(cfg.CaptionsKey)
	case cfg.ReadToken != "":
		r.captionKey = signedurl.DeriveKey(cfg.ReadToken)
	}
	if r.captionKey != nil {
		r.captionSigner = signedurl.New(r.captionKey)
	}
	routes, err := compileRoutes(cfg.Routes)
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r.routes = routes
	if cfg.ReadToken != "" {
		r.readToken, r.readOn = sha256.Sum256([]byte(cfg.ReadToken)), true
	}
	if r.cfg.Sessions == nil {
		if s, ok := cfg.Store.(ui.Sessions); ok {
			r.cfg.Sessions = s
		} else if cfg.ReadToken != "" {
			r.log.Warn("the store keeps no dashboard sessions: a sign-out only clears the browser's cookie, and a copy of it stays valid until it expires")
		}
	}
	r.ui = ui.New(ui.Config{Token: cfg.ReadToken, Sessions: r.cfg.Sessions, Now: r.now, Logger: r.log})
	if r.cfg.Metrics == nil {
		r.cfg.Metrics = prometheus.NewRegistry()
	}
	if r.metrics, err = newMetrics(r.cfg.Metrics, r.backlog, r.failedRows); err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r.authLimit = newAuthLimiter(cfg.AuthFailureBurst, cfg.AuthFailureRefill, r.now)
	r.headerTimeout = headerTimeout
	r.otherBodyTimeout = otherBodyTimeout
	switch n := cfg.MaxConnsPerIP; {
	case n == 0:
		r.perAddr = newAddrCounter(DefaultMaxConnsPerIP)
	case n > 0:
		r.perAddr = newAddrCounter(n)
	}
	if tune != nil {
		tune(r)
	}
	r.app = fiber.New(fiber.Config{
		// Streamed bodies (body.go): a callback's token is checked before its body is read,
		// and BodyLimit only bounds what fasthttp reads ahead.
		StreamRequestBody: true,
		// fasthttp would otherwise parse a multipart body, files spilled to disk, before any
		// handler ran: nothing here takes multipart forms.
		DisablePreParseMultipartForm: true,
		BodyLimit:                    r.bodyLimit,
		// Until the headers are in; preBody then gives the body readTimeout (server.go).
		ReadTimeout:           r.headerTimeout,
		WriteTimeout:          r.writeTimeout,
		IdleTimeout:           idleTimeout,
		DisableStartupMessage: true,
		ErrorHandler:          r.errorHandler,
		JSONEncoder:           marshalPlain,
	})
	r.hardenServer(r.app.Server())
	r.app.Use(fiberrecover.New(fiberrecover.Config{
		EnableStackTrace:  true,
		StackTraceHandler: r.logPanic,
	}))
	r.app.Use(r.limitOtherBodies)
	r.register(r.app, MountOptions{ReadAPI: true, Health: true, Metrics: true, Dashboard: true})
	return r, nil
}

// DashboardCookie is the name of the dashboard's session cookie (__Host- prefixed: Secure,
// Path=/, no Domain), for a program that proxies or inspects it.
const DashboardCookie = ui.CookieName

// checkReadAccess is checkReadToken, or, on a request without an Authorization header, the
// dashboard's session cookie: EventSource, media elements and links cannot send headers.
//
// An address that presented too many wrong credentials is answered 429 first (authlimit.go).
//
// It looks at the headers only: ok is false when it answered the request itself.
func (r *Receiver) checkReadAccess(c *fiber.Ctx) (ok bool, err error) {
	key := r.clientOf(c)
	if wait := r.authLimit.wait(key); wait > 0 {
		return false, r.tooManyFailures(c, surfaceRead, wait)
	}
	if r.readOn && c.Get(fiber.HeaderAuthorization) == "" {
		switch err := r.ui.Authorized(c); {
		case err == nil:
			return true, nil
		case errors.Is(err, ui.ErrCrossOrigin):
			return false, writeError(c, fiber.StatusForbidden, err.Error())
		case errors.Is(err, ui.ErrSessionCheck):
			// Not a 401: the session may well be valid, and the page would send its user to
			// sign in again for the store's hiccup.
			r.log.WithError(err).WithField("path", r.LogPath(c)).Error("read API: dashboard session not checked")
			c.Set(fiber.HeaderRetryAfter, retryAfter)
			return false, writeError(c, fiber.StatusServiceUnavailable, "dashboard session could not be checked: try again")
		}
		if v := c.Cookies(ui.CookieName); v != "" && !r.ui.Signed(v) {
			// A forged cookie, or one made with another read token; an expired or signed-out
			// session is no guess (a tab left open after a sign-out everywhere).
			r.authFailed(key, surfaceRead)
		}
	}
	return r.checkReadToken(c)
}

// limitLogin puts the dashboard's sign-in under the failure limit: a wrong token sent to POST
// /ui/login counts as a wrong bearer token does, and an address that must wait is answered 429.
func (r *Receiver) limitLogin(c *fiber.Ctx) error {
	if c.Method() != fiber.MethodPost || !strings.HasSuffix(c.Path(), "/ui/login") {
		return c.Next()
	}
	key := r.clientOf(c)
	if wait := r.authLimit.wait(key); wait > 0 {
		return r.tooManyFailures(c, surfaceLogin, wait)
	}
	if err := c.Next(); err != nil {
		return err
	}
	if ui.WrongToken(c) {
		r.authFailed(key, surfaceLogin)
	}
	return nil
}

// clientOf is the client key of c for the failure limit.
func (r *Receiver) clientOf(c *fiber.Ctx) netip.Addr {
	return clientAddrKey(c.Context().RemoteAddr(), c.Get(fiber.HeaderXForwardedFor), r.cfg.TrustedProxies)
}

// authFailed counts a wrong credential of key's.
func (r *Receiver) authFailed(key netip.Addr, surface string) {
	r.authLimit.fail(key)
	r.metrics.authFailures.WithLabelValues(surface).Inc()
}

// tooManyFailures answers a request of an address that must wait: 429 and Retry-After. The
// connection closes: an unread body stays unread.
func (r *Receiver) tooManyFailures(c *fiber.Ctx, surface string, wait time.Duration) error {
	r.metrics.authLimited.WithLabelValues(surface).Inc()
	c.Set(fiber.HeaderRetryAfter, retryAfterSeconds(wait))
	closeUnread(c)
	return writeError(c, fiber.StatusTooManyRequests, "too many failed authentications from this address; retry later")
}

// App is the standalone Fiber app that Serve runs, every route at its root: for app.Test, or
// for app.Mount in a parent app, where its routes keep their own limits (as with Mount) but
// the app's server settings, and the refusals Serve makes on the headers, do not come along.
func (r *Receiver) App() *fiber.App { return r.app }

// Serve answers requests on ln until Shutdown, with the server-level protections of the
// standalone app: refusals on the headers alone (server.go), timeouts, the per-address cap
// (Config.MaxConnsPerIP) and the short drain of closed connections (linger.go).
func (r *Receiver) Serve(ln net.Listener) error {
	r.servedMu.Lock()
	if r.shuttingDown() {
		r.servedMu.Unlock()
		_ = ln.Close()
		return errors.New("receiver: serve after shutdown")
	}
	r.served = append(r.served, ln)
	r.servedMu.Unlock()
	if err := r.app.Listener(r.Listener(ln)); err != nil {
		return fmt.Errorf("receiver: serve: %w", err)
	}
	return nil
}

// Listener wraps ln, a plain TCP listener, with the connection handling of Serve, for a parent
// app's server (Mount) or an http.Server (Handler): at most Config.MaxConnsPerIP connections
// per client address (the next answered 429 and closed), and a short drain of what a client
// still sends after its connection is closed. Without the drain, a client still sending a body
// refused on its length or token (413, 401) can lose the answer to a connection reset. Wrap the
// TCP listener under any TLS: the 429 is written in clear.
func (r *Receiver) Listener(ln net.Listener) net.Listener {
	return lingerListener{Listener: ln, perAddr: r.perAddr}
}

// Shutdown stops accepting connections, ends event streams and waits for in-flight requests
// (each of which commits or fails its delivery) until ctx is done. Mounted (Mount, Handler),
// it ends the event streams and turns /readyz to 503; the parent's server is the parent's to
// shut down.
func (r *Receiver) Shutdown(ctx context.Context) error {
	r.servedMu.Lock()
	r.closeOnce.Do(func() { close(r.closing) })
	served := r.served
	r.servedMu.Unlock()
	err := r.stopServer(ctx)
	// A Serve on its way in, whose listener fasthttp does not hold yet, then finds it closed
	// and ends with nil (fasthttp reads a closed listener as the end).
	for _, ln := range served {
		_ = ln.Close()
	}
	// fasthttp still lists that listener, and closing it again at a later Shutdown is no
	// failure.
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("receiver: shutdown: %w", err)
	}
	return nil
}

func (r *Receiver) shuttingDown() bool {
	select {
	case <-r.closing:
		return true
	default:
		return false
	}
}

// apiError is the body of every error the receiver answers.
type apiError struct {
	Error            string   `json:"error"`
	Status           int      `json:"status"`
	ValidationErrors []string `json:"validation_errors,omitempty"`
}

func writeError(c *fiber.Ctx, status int, msg string) error {
	return sendJSON(c.Status(status), apiError{Error: msg, Status: status})
}

// sendJSON is c.JSON with the receiver's encoder (marshalPlain): mounted, c.JSON would use
// the parent app's.
func sendJSON(c *fiber.Ctx, v any) error {
	b, err := marshalPlain(v)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	c.Response().SetBodyRaw(b)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	return nil
}

// ErrorHandler answers an error in the receiver's JSON shape, never quoting the request: the
// fiber.Config.ErrorHandler of a parent app (Mount), for the requests no route took. Fiber's
// own answer to those quotes the path ("Cannot POST /hooks//v1/callbacks/…"), and a callback
// URL spelled in a way no route takes still holds its token.
func (r *Receiver) ErrorHandler(c *fiber.Ctx, err error) error { return r.errorHandler(c, err) }

// errorHandler answers errors that reach Fiber (no route, body over the limit, panics) in the
// receiver's JSON shape.
func (r *Receiver) errorHandler(c *fiber.Ctx, err error) error {
	status, msg := fiber.StatusInternalServerError, "internal error"
	var fe *fiber.Error
	if errors.As(err, &fe) {
		status, msg = fe.Code, safeErrorMessage(fe)
		if status == fiber.StatusNotFound && r.onCallbackPath(c) {
			msg = "no such callback route"
		}
	} else {
		r.log.WithError(err).WithField("path", r.LogPath(c)).Error("request failed")
	}
	return writeError(c, status, msg)
}

// safeErrorMessage is what an answer says of a Fiber error. Fiber's own messages quote the
// request ("Cannot POST //v1/callbacks/T" for a route that matched nothing), and a path may hold
// a callback token in any spelling (//v1/…, /v1/./…, /v1%2F…, upper case): an answer never
// quotes the request: a Fiber error is answered with its status's text.
func safeErrorMessage(fe *fiber.Error) string {
	if fe.Code == fiber.StatusNotFound {
		return "no such route"
	}
	return fasthttp.StatusMessage(fe.Code)
}

func (r *Receiver) logPanic(c *fiber.Ctx, e any) {
	r.log.WithFields(logrus.Fields{
		"path": r.LogPath(c), "panic": fmt.Sprint(e), "stack": string(debug.Stack()),
	}).Error("handler panicked")
}

// LogPath is the path of c fit for a log line: the route's pattern (…/v1/callbacks/:token)
// for the receiver's callback routes, whose paths hold a secret token, the path otherwise. A
// parent app that logs its requests (fiber's logger middleware, with a custom tag) can use it
// for the routes Mount registered: it knows them by the route that matched, after c.Next.
func (r *Receiver) LogPath(c *fiber.Ctx) string {
	if r.onCallbackPath(c) {
		if rt := c.Route(); c.Locals(callbackRouteKey{}) != nil && rt != nil && strings.Contains(rt.Path, callbackPath) {
			return rt.Path
		}
		return callbackPath + "…"
	}
	return redactPath(c.Path())
}

// redactPath cuts a path after "callbacks", in any case and whatever precedes it: a path that
// no callback route took (//v1/callbacks/T, /v1/./callbacks/T, /V1/CALLBACKS/T, /v1%2Fcallbacks/T)
// may still hold a token.
func redactPath(p string) string {
	const word = "callbacks"
	for i := 0; i+len(word) <= len(p); i++ {
		if strings.EqualFold(p[i:i+len(word)], word) {
			return p[:i+len(word)] + "/…"
		}
	}
	return p
}

// onCallbackPath says whether c is a callback request: by the route that matched
// (callbackRoute), or, before routing or with no route, by the standalone app's layout.
func (r *Receiver) onCallbackPath(c *fiber.Ctx) bool {
	return c.Locals(callbackRouteKey{}) != nil || (c.App() == r.app && isCallbackPath(c.Path()))
}

// healthz says the process answers; it checks nothing else.
func (r *Receiver) healthz(c *fiber.Ctx) error {
	return sendJSON(c, fiber.Map{"status": "ok"})
}

// readyz says whether deliveries can be taken now: the store answers and the router runs.
func (r *Receiver) readyz(c *fiber.Ctx) error {
	var problems []string
	if r.shuttingDown() {
		problems = append(problems, "shutting down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.cfg.Store.Ping(ctx); err != nil {
		problems = append(problems, "store: "+err.Error())
	}
	if r.cfg.Ready != nil && !r.cfg.Ready() {
		problems = append(problems, "router: not running")
	}
	if len(problems) > 0 {
		return writeError(c, fiber.StatusServiceUnavailable, "not ready: "+strings.Join(problems, "; "))
	}
	if r.cfg.Notes != nil {
		if notes := r.cfg.Notes(); len(notes) > 0 {
			return sendJSON(c, fiber.Map{"status": "ready", "notes": notes})
		}
	}
	return sendJSON(c, fiber.Map{"status": "ready"})
}

// marshalPlain is the receiver's JSON encoder, Fiber's too: no HTML escaping, so page links
// keep a readable "&" instead of "\u0026" and a delivery's text reads as the service sent it.
func marshalPlain(v any) ([]byte, error) {
	if a, ok := v.(ackBody); ok {
		// Every stored delivery is answered with one: written without reflection.
		return a.appendJSON(make([]byte, 0, 48)), nil
	}
	return plainjson.Marshal(v)
}
