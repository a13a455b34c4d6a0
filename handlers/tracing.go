package handlers

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/traces"
	"github.com/scribehook/scribehook/store"
)

// The inbox.apply spans (docs/operations.md, Traces): one per attempt at applying a row, or per
// row of a group applied in one transaction, each the child of the callback.receive span whose
// context the receiver stored with the row (its traceparent header). The bus between them, and
// a restart, carry only the row's id: the context comes back with the row. The sink deliveries
// an apply queues carry its own context (outbox), for each attempt's sink.deliver span.
// Called only when the tracer is on.

// Outcomes of an inbox.apply span.
const (
	applyApplied = "applied"
	applyAlready = "already_applied"
	applyFailed  = "failed"
)

// startApply starts the inbox.apply span of one attempt at row.
func (p *Pipeline) startApply(ctx context.Context, row store.InboxRow, attempt, group int) (context.Context, trace.Span) {
	ctx = traces.Continue(ctx, row.Headers[traces.HeaderTraceParent], row.Headers[traces.HeaderTraceState])
	return p.tracer.Start(ctx, traces.SpanApply, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(rowAttributes(row, attempt, group)...))
}

func rowAttributes(row store.InboxRow, attempt, group int) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		traces.InboxID.Int64(row.ID),
		traces.CallbackKind.String(string(row.Kind)),
		traces.Event.String(row.Event),
		traces.Attempt.Int(attempt),
		traces.GroupSize.Int(group),
	}
	if row.Kind == api.CallbackLiveMessage {
		return append(attrs, traces.SessionID.String(row.JobID))
	}
	return append(attrs, traces.JobID.String(row.JobID))
}

// applied records the end of an attempt on its span: the row applied (with the events it
// queued), already applied by someone else, or failed.
func applied(span trace.Span, events []api.Event, err error) {
	switch {
	case err == nil:
		span.SetAttributes(traces.Outcome.String(applyApplied), attribute.Int("scribehook.events", len(events)))
	case errors.Is(err, store.ErrAlreadyApplied):
		span.SetAttributes(traces.Outcome.String(applyAlready))
	default:
		span.SetAttributes(traces.Outcome.String(applyFailed))
		traces.Fail(span, err)
	}
}

// startGroup starts the inbox.apply span of each row of a group: every row continues its own
// callback's trace, and its events carry its own span, as if it had been applied alone.
func (p *Pipeline) startGroup(ctx context.Context, rows []store.InboxRow) []trace.Span {
	spans := make([]trace.Span, len(rows))
	for i := range rows {
		_, spans[i] = p.startApply(ctx, rows[i], 1, len(rows))
	}
	return spans
}

// endGroup ends the spans of a group's rows: those of applied (indexes in rows) applied, the
// others already applied before, or every one failed with err (they are applied alone next,
// each under a span of its own).
func endGroup(spans []trace.Span, applied []int, err error) {
	done := make([]bool, len(spans))
	for _, i := range applied {
		done[i] = true
	}
	for i, span := range spans {
		switch {
		case err != nil:
			span.SetAttributes(traces.Outcome.String(applyFailed))
			traces.Fail(span, err)
		case done[i]:
			span.SetAttributes(traces.Outcome.String(applyApplied))
		default:
			span.SetAttributes(traces.Outcome.String(applyAlready))
		}
		span.End()
	}
}

// logFor is the pipeline's log within ctx: with the trace id of its span, when there is one,
// so that an error in the logs leads to its trace.
func (p *Pipeline) logFor(ctx context.Context) *logrus.Entry {
	if !p.tracer.On() {
		return p.log
	}
	if id := traces.TraceID(ctx); id != "" {
		return p.log.WithField("trace_id", id)
	}
	return p.log
}

// traceContext is the context the deliveries an apply queues carry: its span's, "" when
// tracing is off.
func (p *Pipeline) traceContext(ctx context.Context) (traceparent, tracestate string) {
	if !p.tracer.On() {
		return "", ""
	}
	return traces.Inject(ctx)
}
