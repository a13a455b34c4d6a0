package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// incoming is a traceparent a sender might put on its callback, sampled.
const incoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// A callback's receive span starts a trace of its own: the sender's traceparent is linked once
// the request authenticated, never continued, and the delivery is stored with the span's own
// context (not the sender's header). Every server that carries the endpoint does the same.
func TestReceiveSpan(t *testing.T) {
	for _, setup := range []setupKind{setupStandalone, setupFiber, setupNetHTTP} {
		t.Run(string(setup), func(t *testing.T) {
			sr := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
			h := newHarness(t, withSetup(setup), withConfig(func(c *Config) { c.TracerProvider = tp }))
			header := map[string]string{"traceparent": incoming, "tracestate": "sender=1"}

			stored := h.ack(h.post(testRouteToken, liveBody(t, sessionID, transcript("u1", true, "hello")), header))
			dup := h.ack(h.post(testRouteToken, liveBody(t, sessionID, transcript("u1", true, "hello")), header))
			if r := h.post("not-a-token-at-all-0123456789abcdef", successBody(t, jobID), header); r.status != http.StatusUnauthorized {
				t.Fatalf("unknown token: %d", r.status)
			}
			spans := sr.Ended()
			// Serve refuses an unknown token on the headers, before the endpoint runs: no span.
			want := 3
			if setup == setupStandalone {
				want = 2
			}
			if len(spans) != want {
				t.Fatalf("%d spans, want %d", len(spans), want)
			}
			for i, s := range spans {
				if s.Name() != "callback.receive" || s.Parent().IsValid() || s.SpanKind() != trace.SpanKindServer ||
					s.SpanContext().TraceID().String() == "0af7651916cd43dd8448eb211c80319c" {
					t.Errorf("span %d: %s, parent %v, kind %v, trace %s: want a root server span of a trace of its own",
						i, s.Name(), s.Parent(), s.SpanKind(), s.SpanContext().TraceID())
				}
			}
			attrs := []map[string]string{
				{"scribehook.route": "partner", "scribehook.callback.kind": string(api.CallbackLiveMessage),
					"scribehook.event": "live.transcript", "scribehook.session_id": sessionID, "scribehook.inbox_id": fmt.Sprint(stored.ID),
					"scribehook.duplicate": "false", "scribehook.outcome": "stored", "http.response.status_code": "200"},
				{"scribehook.route": "partner", "scribehook.callback.kind": string(api.CallbackLiveMessage),
					"scribehook.event": "live.transcript", "scribehook.session_id": sessionID, "scribehook.inbox_id": fmt.Sprint(dup.ID),
					"scribehook.duplicate": "true", "scribehook.outcome": "duplicate", "http.response.status_code": "200"},
				// Refused before anything is known of it: no route, no link.
				{"http.response.status_code": "401"},
			}
			for i, s := range spans {
				if got := spanAttrs(s); fmt.Sprint(got) != fmt.Sprint(attrs[i]) {
					t.Errorf("span %d attributes %v\nwant %v", i, got, attrs[i])
				}
			}
			for i, s := range spans[:2] {
				links := s.Links()
				if len(links) != 1 || links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" ||
					links[0].SpanContext.SpanID().String() != "b7ad6b7169203331" || links[0].SpanContext.TraceState().String() != "sender=1" {
					t.Errorf("span %d links %+v, want the sender's traceparent", i, links)
				}
			}
			if len(spans) == 3 {
				if n := len(spans[2].Links()); n != 0 || spans[2].Status().Code == codes.Error {
					t.Errorf("unauthenticated span: %d links, status %v", n, spans[2].Status())
				}
			}

			rows := h.inbox()
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			sc := spans[0].SpanContext()
			if got, want := rows[0].Headers["traceparent"], fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); got != want {
				t.Errorf("stored traceparent %q, want the receive span's %q", got, want)
			}
			if _, ok := rows[0].Headers["tracestate"]; ok {
				t.Errorf("stored the sender's tracestate: %v", rows[0].Headers)
			}
		})
	}
}

// Our own failure to store is an error of the span (503); a refusal is the sender's (401, no
// error status).
func TestReceiveSpanOfAFailedCommit(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	h := newHarness(t, withConfig(func(c *Config) {
		c.TracerProvider = tp
		c.Ingester = failingIngester{}
	}))
	if r := h.post(testRouteToken, successBody(t, jobID), nil); r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d", r.status)
	}
	spans := sr.Ended()
	if len(spans) != 1 || spans[0].Status().Code != codes.Error || spans[0].Status().Description != "delivery not stored, retry later" ||
		spanAttrs(spans[0])["http.response.status_code"] != "503" || spanAttrs(spans[0])["scribehook.job_id"] != jobID {
		t.Fatalf("spans %v", spans)
	}
}

// Without a provider the receiver stores no trace context.
func TestNoTracerStoresNoTraceContext(t *testing.T) {
	h := newHarness(t)
	h.ack(h.post(testRouteToken, successBody(t, jobID), map[string]string{"traceparent": incoming}))
	rows := h.inbox()
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	if _, ok := rows[0].Headers["traceparent"]; ok {
		t.Errorf("headers %v", rows[0].Headers)
	}
}

// failingIngester stores nothing.
type failingIngester struct{}

func (failingIngester) Submit(context.Context, store.Delivery) (store.IngestResult, error) {
	return store.IngestResult{}, errors.New("disk full")
}
