package sinks_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/signature"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// traceTarget is a webhook destination answering status, keeping what it received.
type traceTarget struct {
	mu     sync.Mutex
	header []http.Header
	body   [][]byte
}

func newTraceTarget(t *testing.T, status int) (*traceTarget, string) {
	tt := &traceTarget{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		tt.mu.Lock()
		tt.header, tt.body = append(tt.header, r.Header.Clone()), append(tt.body, b)
		tt.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return tt, srv.URL
}

// applyContext is the W3C context an apply span n would have stored with its deliveries.
func applyContext(n int) (traceID, spanID, traceparent string) {
	traceID, spanID = fmt.Sprintf("%032x", n), fmt.Sprintf("%016x", n)
	return traceID, spanID, "00-" + traceID + "-" + spanID + "-01"
}

func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// Each attempt is a sink.deliver span, the child of the apply whose context the delivery was
// queued with: one per event of a batch too. A webhook sends its span as traceparent (the
// signature, over id, timestamp and body, still verifies) and records the status answered; a
// failure is the span's error.
func TestDeliverSpans(t *testing.T) {
	e := newDispEnv(t)
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ok, okURL := newTraceTarget(t, http.StatusOK)
	_, goneURL := newTraceTarget(t, http.StatusGone)
	hookSpec := sinks.Spec{Name: "hook", Kind: sinks.KindWebhook, URL: okURL, SigningSecrets: []string{secret}, Allow: []string{"127.0.0.0/8"}}
	goneSpec := sinks.Spec{Name: "gone", Kind: sinks.KindWebhook, URL: goneURL, Allow: []string{"127.0.0.0/8"}}
	fileSpec := sinks.Spec{Name: "files", Kind: sinks.KindFile, Dir: t.TempDir()}
	var ss []sinks.Sink
	for _, spec := range []sinks.Spec{hookSpec, goneSpec, fileSpec} {
		s, err := sinks.New(spec, sinks.Deps{Logger: dispQuiet()})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	// Queued before the dispatcher runs: the file sink gets its three in one batch.
	var ds []store.SinkDelivery
	queue := func(sink, id string, n int) {
		_, _, tp := applyContext(n)
		ds = append(ds, store.SinkDelivery{Sink: sink, Event: api.Event{ID: id, Type: api.EventJobSucceeded, JobID: "job-" + id,
			Kind: api.KindPreRecorded, CreatedAt: api.Time{Time: e.clock.Now()}, Data: []byte(`{"id":"` + id + `"}`)},
			CreatedAt: e.clock.Now(), TraceParent: tp, TraceState: "vendor=x"})
	}
	queue("hook", "ev-hook", 1)
	queue("gone", "ev-gone", 2)
	for i := range 3 {
		queue("files", fmt.Sprintf("ev-file-%d", i), 10+i)
	}
	// Queued with tracing off: its attempt starts a trace of its own.
	ds = append(ds, store.SinkDelivery{Sink: "hook", Event: api.Event{ID: "ev-untraced", Type: api.EventJobFailed,
		CreatedAt: api.Time{Time: e.clock.Now()}}, CreatedAt: e.clock.Now()})
	if err := e.store.EnqueueSinkDeliveries(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	e.run(sinks.DispatcherConfig{TracerProvider: tp}, []sinks.Spec{hookSpec, goneSpec, fileSpec}, ss...)
	testwait.For(t, "an ended span per delivery", dispWait, func() bool { return len(sr.Ended()) == len(ds) })

	byEvent := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		if s.Name() != "sink.deliver" || s.SpanKind() != trace.SpanKindProducer {
			t.Errorf("span %s kind %v", s.Name(), s.SpanKind())
		}
		byEvent[attrsOf(s)["scribehook.event_id"]] = s
	}
	for id, n := range map[string]int{"ev-hook": 1, "ev-gone": 2, "ev-file-0": 10, "ev-file-1": 11, "ev-file-2": 12} {
		traceID, spanID, _ := applyContext(n)
		s := byEvent[id]
		if s == nil {
			t.Fatalf("no span of %s", id)
		}
		if s.SpanContext().TraceID().String() != traceID || s.Parent().SpanID().String() != spanID || !s.Parent().IsRemote() ||
			s.SpanContext().TraceState().String() != "vendor=x" {
			t.Errorf("%s: span in %s under %s, want %s under %s", id, s.SpanContext().TraceID(), s.Parent().SpanID(), traceID, spanID)
		}
	}
	if s := byEvent["ev-untraced"]; s == nil || s.Parent().IsValid() {
		t.Errorf("the untraced delivery's span has parent %v, want none", s.Parent())
	}
	for id, want := range map[string]map[string]string{
		"ev-hook": {"scribehook.sink": "hook", "scribehook.sink.kind": "webhook", "scribehook.event_id": "ev-hook",
			"scribehook.event_type": api.EventJobSucceeded, "scribehook.attempt": "1", "scribehook.outcome": "delivered",
			"http.response.status_code": "200"},
		"ev-gone": {"scribehook.sink": "gone", "scribehook.sink.kind": "webhook", "scribehook.event_id": "ev-gone",
			"scribehook.event_type": api.EventJobSucceeded, "scribehook.attempt": "1", "scribehook.outcome": "disabled",
			"http.response.status_code": "410"},
		"ev-file-1": {"scribehook.sink": "files", "scribehook.sink.kind": "file", "scribehook.event_id": "ev-file-1",
			"scribehook.event_type": api.EventJobSucceeded, "scribehook.attempt": "1", "scribehook.outcome": "delivered"},
	} {
		if got := attrsOf(byEvent[id]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: attributes %v\nwant %v", id, got, want)
		}
	}
	if st := byEvent["ev-gone"].Status(); st.Code != codes.Error || st.Description == "" {
		t.Errorf("410: status %+v, want an error", st)
	}
	if st := byEvent["ev-hook"].Status(); st.Code == codes.Error {
		t.Errorf("200: status %+v", st)
	}

	ok.mu.Lock()
	defer ok.mu.Unlock()
	verifier, err := signature.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range ok.header {
		s := byEvent[h.Get("webhook-id")]
		want := fmt.Sprintf("00-%s-%s-01", s.SpanContext().TraceID(), s.SpanContext().SpanID())
		if h.Get("webhook-id") == "ev-untraced" {
			// A root of a trace of its own, still propagated.
			if h.Get("traceparent") != want || h.Get("tracestate") != "" {
				t.Errorf("untraced: traceparent %q tracestate %q, want %q", h.Get("traceparent"), h.Get("tracestate"), want)
			}
		} else if h.Get("traceparent") != want || h.Get("tracestate") != "vendor=x" {
			t.Errorf("%s: traceparent %q tracestate %q, want %q and the stored state", h.Get("webhook-id"), h.Get("traceparent"),
				h.Get("tracestate"), want)
		}
		if err := verifier.Verify(ok.body[i], h); err != nil {
			t.Errorf("%s: the signature does not verify beside the trace headers: %v", h.Get("webhook-id"), err)
		}
	}
	if len(ok.header) != 2 {
		t.Errorf("%d requests at the webhook", len(ok.header))
	}
	if n, err := os.ReadDir(filepath.Join(fileSpec.Dir)); err != nil || len(n) == 0 {
		t.Errorf("file sink wrote %v, %v", n, err)
	}
}

// Without a tracer no header is added: a delivery stored with a context sends none.
func TestDeliverWithoutTracerSendsNoTraceparent(t *testing.T) {
	e := newDispEnv(t)
	target, url := newTraceTarget(t, http.StatusOK)
	spec := sinks.Spec{Name: "hook", Kind: sinks.KindWebhook, URL: url, Allow: []string{"127.0.0.0/8"}}
	s, err := sinks.New(spec, sinks.Deps{Logger: dispQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	_, _, tp := applyContext(1)
	if err := e.store.EnqueueSinkDeliveries(t.Context(), []store.SinkDelivery{{Sink: "hook", TraceParent: tp,
		Event: api.Event{ID: "ev", Type: api.EventJobSucceeded}, CreatedAt: e.clock.Now()}}); err != nil {
		t.Fatal(err)
	}
	e.run(sinks.DispatcherConfig{}, []sinks.Spec{spec}, s)
	testwait.For(t, "the delivery", dispWait, func() bool {
		target.mu.Lock()
		defer target.mu.Unlock()
		return len(target.header) == 1
	})
	target.mu.Lock()
	defer target.mu.Unlock()
	if h := target.header[0]; h.Get("traceparent") != "" || h.Get("tracestate") != "" {
		t.Errorf("sent %q %q", h.Get("traceparent"), h.Get("tracestate"))
	}
}
