package submitter

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A read of a job is one service.get span (its retries included), the child of the caller's
// span, with the status the service gave; the request carries no trace header.
func TestGetJobSpan(t *testing.T) {
	rec := newRecorder(t,
		reply(http.StatusServiceUnavailable, `{"message":"busy"}`),
		reply(http.StatusOK, `{"id":"job-1","status":"done"}`),
		reply(http.StatusNotFound, `{"message":"no such job","statusCode":404}`),
	)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	c, _ := newTestClient(t, rec.URL, WithTracerProvider(tp))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "inbox.apply")
	if _, err := c.GetPreRecorded(ctx, "job-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetLive(ctx, "session-2"); err == nil {
		t.Fatal("a 404 read succeeded")
	}
	parent.End()
	spans := sr.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, want := range []struct {
		job, template, status string
		failed                bool
	}{
		{"job-1", "/v2/pre-recorded/{id}", "200", false},
		{"session-2", "/v2/live/{id}", "404", true},
	} {
		s := spans[i]
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.Emit()
		}
		if s.Name() != "service.get" || s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != parent.SpanContext().SpanID() ||
			a["scribehook.job_id"] != want.job || a["url.template"] != want.template || a["http.response.status_code"] != want.status ||
			a["http.request.method"] != "GET" || a["server.address"] != "127.0.0.1" || (s.Status().Code == codes.Error) != want.failed {
			t.Errorf("span %d: %s %v under %v, attributes %v, status %+v", i, s.Name(), s.SpanKind(), s.Parent().SpanID(), a, s.Status())
		}
	}
	for i := range rec.count() {
		if req, _ := rec.request(i); req.Header.Get("traceparent") != "" {
			t.Errorf("request %d carried traceparent %q", i, req.Header.Get("traceparent"))
		}
	}
}
