package scribehook

import (
	"io"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// Option gives New what a configuration file cannot: a logger, clients, a clock, extra sinks
// and event handlers.
type Option func(*options)

type options struct {
	logger        logrus.FieldLogger
	secrets       *configs.Secrets
	store         store.Store
	service       *submitter.Client
	httpClient    *http.Client
	sinkTransport *http.Transport
	sinkOutput    io.Writer
	now           func() time.Time
	sinks         []customSink
	handlers      []EventHandler
	tracer        trace.TracerProvider
	inboxRetry    []time.Duration
}

type customSink struct {
	spec sinks.Spec
	sink sinks.Sink
}

// WithLogger logs through l (default: logrus's standard logger). Secrets never reach it.
func WithLogger(l logrus.FieldLogger) Option { return func(o *options) { o.logger = l } }

// WithSecrets gives the secrets instead of reading the environment variables the configuration
// names (for a program that keeps them elsewhere).
func WithSecrets(s configs.Secrets) Option { return func(o *options) { o.secrets = &s } }

// WithStore runs on st instead of opening store.driver/store.dsn; the caller keeps closing it,
// and gives it its clock (sqlite.Config.Now, postgres.Config.Now).
// Dashboard sign-outs are kept in st when it implements store.Sessions (the SQLite and
// PostgreSQL stores do); otherwise a sign-out only clears the browser's cookie.
func WithStore(st store.Store) Option { return func(o *options) { o.store = st } }

// WithService uses c to reach the service (resolving thin webhooks, submitting jobs) instead of
// a client built from service.base_url and the API key.
func WithService(c *submitter.Client) Option { return func(o *options) { o.service = c } }

// WithHTTPClient is the HTTP client of the service client New builds.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithSinkTransport is the base transport of webhook sinks (a test certificate, a proxy-free
// transport); the address guard still wraps every connection.
func WithSinkTransport(t *http.Transport) Option { return func(o *options) { o.sinkTransport = t } }

// WithSinkOutput is where log sinks write (default standard output).
func WithSinkOutput(w io.Writer) Option { return func(o *options) { o.sinkOutput = w } }

// WithClock is the kit's clock (default time.Now), given to every part that reads the time of
// day: the receiver (received_at, token lifetimes, signature timestamps, dashboard sessions),
// the store (the times it stamps itself), the pipeline (records' updated_at, events' queueing),
// the sinks' dispatcher (due and retry times, breaker cooldowns, dead letters' failed_at), the
// sinks (webhook timestamps, Retry-After dates), the pruner, the service client and the
// Submitter. Waits, timeouts and durations measured are real time.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithInboxRetry is the waits between the attempts to apply a delivery that fails (default
// handlers.DefaultRetrySchedule: 1 s, 5 s, 30 s, 2 min, 10 min): a delivery gets one retry per
// wait, each at its due time (kept in the store, so a restart keeps it), and after the last it
// is marked failed, listed by Records.FailedInbox until replayed. docs/operations.md, Failed
// deliveries.
func WithInboxRetry(schedule ...time.Duration) Option {
	return func(o *options) { o.inboxRetry = append([]time.Duration(nil), schedule...) }
}

// WithSink adds a sink the program built: one of the sinks package's kinds, or its own
// implementation of sinks.Sink. It gets the same durable queue, retries, breaker and dead
// letters as the configured sinks; spec gives its name, filter, order and schedule (Kind is
// informative). The kit closes it.
func WithSink(spec sinks.Spec, sink sinks.Sink) Option {
	return func(o *options) { o.sinks = append(o.sinks, customSink{spec: spec, sink: sink}) }
}

// WithTracerProvider traces the kit's work with tp's tracers (docs/operations.md, Traces): a
// callback.receive span per callback, an inbox.apply span per row applied (its child, across
// the bus and restarts), a sink.deliver span per attempt at each sink (the apply's child; a
// webhook sink sends its traceparent), and a service.get span per job read from the service by
// the client New builds. Without it (or with OpenTelemetry's no-op provider) nothing is traced
// and nothing is spent on it. The kit only starts spans: exporting them, and shutting tp down
// after Shutdown to flush the last ones, are the program's. The scribehook binary builds tp
// from the configuration's tracing: section with package tracing.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.tracer = tp } }

// WithEventHandler calls h.Func for every event its filter takes (see EventHandler).
func WithEventHandler(h EventHandler) Option {
	return func(o *options) { o.handlers = append(o.handlers, h) }
}
