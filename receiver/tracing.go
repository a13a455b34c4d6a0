package receiver

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/traces"
	"github.com/scribehook/scribehook/store"
)

// The callback.receive span (docs/operations.md, Traces) covers a callback from its
// authentication to the answer that follows the inbox commit. Called only when the tracer is
// on: off, serveCallback does nothing of this.

// startReceive starts the callback.receive span of a request, always as the root of a new
// trace. The service's own traceparent header, if any, is not its parent: the header is the
// sender's to choose, so continuing it would let whoever calls the endpoint pick our trace ids
// and, through its sampled flag, whether our spans are recorded at all (sampling is
// parent-based). Once the request has authenticated, a valid incoming traceparent becomes a
// link instead (linkIncoming): the correlation is kept for whoever can see both traces.
func (r *Receiver) startReceive(ctx context.Context) (context.Context, trace.Span) {
	return r.tracer.Start(ctx, traces.SpanReceive, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer))
}

// linkIncoming records what authenticated the request (the route's name, "job" for a per-job
// token; never the token) and links the request's own traceparent, which only an
// authenticated sender gets recorded.
func linkIncoming(span trace.Span, route string, header func(string) string) {
	span.SetAttributes(traces.Route.String(route))
	parent := header(traces.HeaderTraceParent)
	if parent == "" {
		return
	}
	// Fiber's header values point into a buffer it reuses after the request, and the parsed
	// tracestate keeps pieces of its text until the span is exported: copies outlive it.
	if sc := traces.SpanContext(strings.Clone(parent), strings.Clone(header(traces.HeaderTraceState))); sc.IsValid() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("scribehook.link", "request traceparent")}})
	}
}

// storeTraceContext puts the receive span's context among the headers stored with the
// delivery: the pipeline's inbox.apply span continues it, after the bus and across a restart.
// It replaces nothing the sender sent (keptHeaders has no traceparent).
func storeTraceContext(ctx context.Context, headers map[string]string) {
	parent, state := traces.Inject(ctx)
	if parent != "" {
		headers[traces.HeaderTraceParent] = parent
	}
	if state != "" {
		headers[traces.HeaderTraceState] = state
	}
}

// nameDelivery names what the delivery is about on the span.
func nameDelivery(span trace.Span, d store.Delivery) {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, traces.CallbackKind.String(kindLabel(d)))
	if d.Event != "" {
		attrs = append(attrs, traces.Event.String(d.Event))
	}
	switch {
	case d.Kind == api.CallbackLiveMessage:
		attrs = append(attrs, traces.SessionID.String(d.JobID))
	case d.JobID != "":
		attrs = append(attrs, traces.JobID.String(d.JobID))
	}
	span.SetAttributes(attrs...)
}

// stored records the inbox row the delivery went to.
func stored(span trace.Span, res store.IngestResult) {
	span.SetAttributes(traces.InboxID.Int64(res.ID), traces.Duplicate.Bool(res.Duplicate))
}

// endReceive ends the span with the answer: its status code, the outcome of a 2xx, and an
// error status for our own failures (5xx; a refused request is the sender's).
func endReceive(span trace.Span, a callbackAnswer) {
	span.SetAttributes(traces.HTTPStatus.Int(a.status))
	switch b := a.body.(type) {
	case ackBody:
		span.SetAttributes(traces.Outcome.String(b.Status))
	case apiError:
		if a.status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, b.Error)
		}
	}
	span.End()
}
