package sinks

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/internal/traces"
	"github.com/scribehook/scribehook/store"
)

// The sink.deliver spans (docs/operations.md, Traces): one per attempt at a delivery, the child
// of the inbox.apply span that queued it (its context stored with the delivery), whatever
// process attempts it and however long after. A webhook sink sends the span's context to its
// target as traceparent (and tracestate) headers. Called only when the tracer is on.

// startDeliver starts the span of each delivery of an attempt. ctx is the attempt's own
// context when it delivers one event (the sink sees that event's span), and ctx unchanged for
// a batch (one context for several spans: a batch sink sees none).
func (w *sinkWorker) startDeliver(ctx context.Context, ds []store.SinkDelivery) (context.Context, []trace.Span) {
	spans := make([]trace.Span, len(ds))
	out := ctx
	for i := range ds {
		dl := &ds[i]
		sctx, span := w.d.tracer.Start(traces.Continue(ctx, dl.TraceParent, dl.TraceState), traces.SpanDeliver,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(
				traces.Sink.String(w.name),
				traces.SinkKind.String(w.kind),
				traces.EventID.String(dl.EventID),
				traces.EventType.String(dl.Event.Type),
				traces.Attempt.Int(dl.Attempts+1),
			))
		spans[i] = span
		if len(ds) == 1 {
			out = sctx
		}
	}
	return out, spans
}

// delivered ends an attempt's span with its outcome (delivered, retried, dead, disabled) and
// the error the sink gave.
func delivered(span trace.Span, res attemptOutcome, err error) {
	span.SetAttributes(traces.Outcome.String(string(res)))
	if err != nil {
		traces.Fail(span, err)
	}
	span.End()
}

// recordStatus puts the status code a destination answered on the attempt's span, when the
// attempt is traced.
func recordStatus(ctx context.Context, status int) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(traces.HTTPStatus.Int(status))
	}
}
