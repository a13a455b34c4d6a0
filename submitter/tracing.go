package submitter

import (
	"context"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/internal/traces"
)

// WithTracerProvider traces each read of a job's record (GetPreRecorded, GetTranscription,
// GetLive) with a service.get span, the child of the span in the call's context: the pipeline's
// inbox.apply when it resolves a job (docs/operations.md, Traces). The request carries no trace
// header: the service is a third party, and our trace ids are not its business. nil (the
// default) traces nothing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *Client) { c.tracer = traces.New(tp) }
}

// startGet starts the service.get span of a read of job id in collection (/v2/live…).
func (c *Client) startGet(ctx context.Context, collection, id string) (context.Context, trace.Span) {
	return c.tracer.Start(ctx, traces.SpanGet, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			traces.HTTPMethod.String(http.MethodGet),
			traces.ServerAddr.String(c.base.Hostname()),
			traces.URLTemplate.String(collection+"/{id}"),
			traces.JobID.String(id),
		))
}

// endGet ends the span with the answer: the service's status when it gave one, the error
// otherwise.
func endGet(span trace.Span, err error) {
	var ae *APIError
	switch {
	case err == nil:
		span.SetAttributes(traces.HTTPStatus.Int(http.StatusOK))
	case errors.As(err, &ae):
		span.SetAttributes(traces.HTTPStatus.Int(ae.StatusCode))
		traces.Fail(span, err)
	default:
		traces.Fail(span, err)
	}
	span.End()
}
