// Package traces is what the receiver, the pipeline, the sinks' dispatcher and the service
// client share of OpenTelemetry tracing: a Tracer that costs nothing when tracing is off, the
// W3C trace context as the store keeps it (an inbox row's traceparent and tracestate headers, a
// sink delivery's columns), and the names of scribehook's spans and attributes
// (docs/operations.md, Traces). It imports the OpenTelemetry API only: the SDK and its
// exporters are the program's (package tracing, linked by the scribehook binary).
package traces

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span scribehook starts.
const ScopeName = "github.com/scribehook/scribehook"

// The spans, from a callback's receipt to each attempt at a sink.
const (
	SpanReceive = "callback.receive"
	SpanApply   = "inbox.apply"
	SpanDeliver = "sink.deliver"
	SpanGet     = "service.get"
)

// The W3C trace context headers, as the receiver stores them with a delivery
// (store.Delivery.Headers) and a webhook sink sends them.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// Attribute keys of scribehook's spans. The HTTP ones are OpenTelemetry's semantic conventions.
const (
	Route        = attribute.Key("scribehook.route")
	CallbackKind = attribute.Key("scribehook.callback.kind")
	Event        = attribute.Key("scribehook.event")
	JobID        = attribute.Key("scribehook.job_id")
	SessionID    = attribute.Key("scribehook.session_id")
	JobKind      = attribute.Key("scribehook.job_kind")
	InboxID      = attribute.Key("scribehook.inbox_id")
	Duplicate    = attribute.Key("scribehook.duplicate")
	Outcome      = attribute.Key("scribehook.outcome")
	Attempt      = attribute.Key("scribehook.attempt")
	GroupSize    = attribute.Key("scribehook.group_size")
	Sink         = attribute.Key("scribehook.sink")
	SinkKind     = attribute.Key("scribehook.sink.kind")
	EventID      = attribute.Key("scribehook.event_id")
	EventType    = attribute.Key("scribehook.event_type")
	HTTPStatus   = attribute.Key("http.response.status_code")
	HTTPMethod   = attribute.Key("http.request.method")
	ServerAddr   = attribute.Key("server.address")
	URLTemplate  = attribute.Key("url.template")
)

// Tracer starts one part's spans. The zero Tracer is off: it starts nothing, and the parts check
// On before building any attribute, so that tracing off costs a branch per callback.
type Tracer struct{ t trace.Tracer }

// New is the Tracer of tp: off when tp is nil or OpenTelemetry's no-op provider.
func New(tp trace.TracerProvider) Tracer {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return Tracer{}
	}
	return Tracer{t: tp.Tracer(ScopeName)}
}

// On reports whether spans are started.
func (t Tracer) On() bool { return t.t != nil }

// Start starts the span name as a child of the span or remote span context in ctx. Only call
// it when On.
func (t Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return t.t.Start(ctx, name, opts...)
}

// carrier is a TextMapCarrier of the two W3C headers alone: no map for a stored row's context.
type carrier struct{ parent, state string }

func (c *carrier) Get(key string) string {
	switch key {
	case HeaderTraceParent:
		return c.parent
	case HeaderTraceState:
		return c.state
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case HeaderTraceParent:
		c.parent = value
	case HeaderTraceState:
		c.state = value
	}
}

func (c *carrier) Keys() []string { return []string{HeaderTraceParent, HeaderTraceState} }

// Inject gives the W3C headers of the span context in ctx, to store with what the span
// hands on; "" when ctx holds none (tracing off).
func Inject(ctx context.Context) (traceparent, tracestate string) {
	var c carrier
	propagation.TraceContext{}.Inject(ctx, &c)
	return c.parent, c.state
}

// SpanContext reads stored W3C headers; not valid when traceparent is empty or malformed.
func SpanContext(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), &carrier{traceparent, tracestate})
	return trace.SpanContextFromContext(ctx)
}

// Continue is ctx carrying the stored span context of traceparent and tracestate as the remote
// parent of the spans started from it; ctx itself when they hold none.
func Continue(ctx context.Context, traceparent, tracestate string) context.Context {
	if sc := SpanContext(traceparent, tracestate); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// TraceID is the trace id of the span in ctx, for the logs of what it does; "" outside a span
// (tracing off).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Fail records err on span and marks it failed.
func Fail(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
