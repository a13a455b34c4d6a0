//go:build !notracing

package main

import (
	"testing"

	"github.com/scribehook/scribehook/internal/testotlp"
)

// serve with a tracing: section exports the callback's spans over OTLP/HTTP to the collector,
// with the headers of headers_env, in one trace, as it stops at the latest.
func TestServeExportsTraces(t *testing.T) {
	col := testotlp.NewHTTP(t)
	t.Setenv("TEST_OTLP_HEADERS", "authorization=Bearer%20tr4ce-key")
	serveTraced(t, "tracing: {enabled: true, endpoint: "+col.Endpoint+", insecure: true, headers_env: TEST_OTLP_HEADERS, service_name: hooks-test}\n")
	recv, apply, deliver := col.Named("callback.receive"), col.Named("inbox.apply"), col.Named("sink.deliver")
	if len(recv) != 1 || len(apply) != 1 || len(deliver) != 1 {
		t.Fatalf("exported %d receive, %d apply, %d deliver spans: %+v", len(recv), len(apply), len(deliver), col.Spans())
	}
	r, a, d := recv[0], apply[0], deliver[0]
	if r.ParentSpanID != "" || a.TraceID != r.TraceID || a.ParentSpanID != r.SpanID || d.TraceID != r.TraceID || d.ParentSpanID != a.SpanID {
		t.Errorf("not one trace receive → apply → deliver: %+v / %+v / %+v", r, a, d)
	}
	if r.Attributes["scribehook.job_id"] != "traced-job" || r.Attributes["scribehook.route"] != "partner" ||
		a.Attributes["scribehook.outcome"] != "applied" || d.Attributes["scribehook.sink"] != "files" ||
		d.Attributes["scribehook.event_type"] != "job.failed" {
		t.Errorf("attributes: %v / %v / %v", r.Attributes, a.Attributes, d.Attributes)
	}
	for _, s := range col.Spans() {
		if s.Service != "hooks-test" || s.Headers.Get("Authorization") != "Bearer tr4ce-key" {
			t.Errorf("span %s exported as service %q with authorization %q", s.Name, s.Service, s.Headers.Get("Authorization"))
		}
	}
}
