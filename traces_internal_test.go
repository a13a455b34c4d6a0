package scribehook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/signature"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// hookTarget is a webhook sink's destination on loopback: it keeps each request's headers and
// body, and answers 200.
type hookTarget struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []hookRequest
}

type hookRequest struct {
	header http.Header
	body   []byte
	path   string
}

func newHookTarget(t *testing.T) *hookTarget {
	h := &hookTarget{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.reqs = append(h.reqs, hookRequest{header: r.Header.Clone(), body: body, path: r.URL.Path})
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookTarget) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.reqs...)
}

// spanAttr is the attribute key of span as text, "" when absent.
func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// spansWhere are the ended spans of name whose attribute key is value.
func spansWhere(sr *tracetest.SpanRecorder, name, key, value string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == name && spanAttr(s, key) == value {
			out = append(out, s)
		}
	}
	return out
}

func strongSecret(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// A job's callback, sent by the sandbox over loopback, is one trace from its receipt to each
// of its webhook deliveries: callback.receive (a root), inbox.apply its child (across the bus,
// through the row's stored context), service.get and every sink.deliver the apply's children;
// the webhook target gets each delivery's traceparent, and the signature still verifies.
func TestTracesFollowACallbackToItsSinks(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	hook := newHookTarget(t)
	secret := strongSecret(t)
	cfg.Sinks = []configs.Sink{{Name: "hook", Kind: "webhook", URL: hook.srv.URL, SecretEnv: "HOOK_SECRET",
		Events: []string{api.EventJobSucceeded, api.EventSubtitlesReady}, Allow: []string{"127.0.0.1"}, Timeout: 5 * time.Second}}
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	k := startKit(t, cfg, ln, WithTracerProvider(tp), WithSecrets(configs.Secrets{APIKey: testKey, Sinks: map[string]string{"hook": secret}}))

	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if rec, err := WaitJob(waitCtx, k.Records(), created.ID, 0, nil); err != nil || rec.Job.Status != api.StatusDone {
		t.Fatalf("job: %v %s", err, rec.Job.Status)
	}
	testwait.For(t, "both deliveries at the target and their spans ended", 30*time.Second, func() bool {
		return len(hook.requests()) == 2 && len(spansWhere(sr, "sink.deliver", "scribehook.sink", "hook")) == 2
	})

	receives := spansWhere(sr, "callback.receive", "scribehook.job_id", created.ID)
	if len(receives) != 1 {
		t.Fatalf("%d callback.receive spans of job %s, want 1", len(receives), created.ID)
	}
	recv := receives[0]
	traceID := recv.SpanContext().TraceID()
	if recv.Parent().IsValid() || recv.SpanKind() != trace.SpanKindServer {
		t.Errorf("callback.receive: parent %v, kind %v; want a root server span", recv.Parent(), recv.SpanKind())
	}
	inboxID := spanAttr(recv, "scribehook.inbox_id")
	for key, want := range map[string]string{
		"scribehook.route": "job", "scribehook.callback.kind": string(api.CallbackJobSuccess),
		"scribehook.event": api.EventTranscriptionSuccess, "scribehook.duplicate": "false",
		"scribehook.outcome": "stored", "http.response.status_code": "200",
	} {
		if got := spanAttr(recv, key); got != want {
			t.Errorf("callback.receive %s = %q, want %q", key, got, want)
		}
	}
	row, err := k.store.InboxRow(ctx, mustInt64(t, inboxID))
	if err != nil {
		t.Fatal(err)
	}
	// The row keeps the span's context, which the receive span wrote and nobody else.
	if want := fmt.Sprintf("00-%s-%s-01", traceID, recv.SpanContext().SpanID()); row.Headers["traceparent"] != want {
		t.Errorf("stored traceparent %q, want %q", row.Headers["traceparent"], want)
	}

	applies := spansWhere(sr, "inbox.apply", "scribehook.inbox_id", inboxID)
	if len(applies) != 1 {
		t.Fatalf("%d inbox.apply spans of row %s, want 1", len(applies), inboxID)
	}
	apply := applies[0]
	if apply.SpanContext().TraceID() != traceID || apply.Parent().SpanID() != recv.SpanContext().SpanID() {
		t.Errorf("inbox.apply in trace %s under %s, want %s under %s", apply.SpanContext().TraceID(), apply.Parent().SpanID(),
			traceID, recv.SpanContext().SpanID())
	}
	for key, want := range map[string]string{
		"scribehook.job_id": created.ID, "scribehook.callback.kind": string(api.CallbackJobSuccess),
		"scribehook.outcome": "applied", "scribehook.attempt": "1", "scribehook.group_size": "1",
		"scribehook.events": "2",
	} {
		if got := spanAttr(apply, key); got != want {
			t.Errorf("inbox.apply %s = %q, want %q", key, got, want)
		}
	}

	gets := spansWhere(sr, "service.get", "scribehook.job_id", created.ID)
	if len(gets) != 1 || gets[0].Parent().SpanID() != apply.SpanContext().SpanID() ||
		spanAttr(gets[0], "url.template") != "/v2/pre-recorded/{id}" || spanAttr(gets[0], "http.response.status_code") != "200" ||
		gets[0].SpanKind() != trace.SpanKindClient {
		t.Errorf("service.get spans %v, want one client span under the apply", gets)
	}

	verifier, err := signature.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	delivers := spansWhere(sr, "sink.deliver", "scribehook.sink", "hook")
	types := map[string]bool{}
	for _, req := range hook.requests() {
		id := req.header.Get("webhook-id")
		var span sdktrace.ReadOnlySpan
		for _, d := range delivers {
			if spanAttr(d, "scribehook.event_id") == id {
				span = d
			}
		}
		if span == nil {
			t.Fatalf("no sink.deliver span of event %s", id)
		}
		typ := spanAttr(span, "scribehook.event_type")
		types[typ] = true
		if span.SpanContext().TraceID() != traceID || span.Parent().SpanID() != apply.SpanContext().SpanID() {
			t.Errorf("sink.deliver of %s in trace %s under %s, want %s under the apply %s", typ,
				span.SpanContext().TraceID(), span.Parent().SpanID(), traceID, apply.SpanContext().SpanID())
		}
		for key, want := range map[string]string{"scribehook.sink.kind": "webhook", "scribehook.attempt": "1",
			"scribehook.outcome": "delivered", "http.response.status_code": "200"} {
			if got := spanAttr(span, key); got != want {
				t.Errorf("sink.deliver of %s: %s = %q, want %q", typ, key, got, want)
			}
		}
		// The target's traceparent is the attempt's span, in the callback's trace.
		if want := fmt.Sprintf("00-%s-%s-01", traceID, span.SpanContext().SpanID()); req.header.Get("traceparent") != want {
			t.Errorf("%s delivered with traceparent %q, want %q", typ, req.header.Get("traceparent"), want)
		}
		if err := verifier.Verify(req.body, req.header); err != nil {
			t.Errorf("%s: signature with a traceparent header: %v", typ, err)
		}
	}
	if !types[api.EventJobSucceeded] || !types[api.EventSubtitlesReady] {
		t.Errorf("delivered event types %v", types)
	}
}

// Every live message of a session is a trace of its own, applied alone or in a group: its
// inbox.apply is the child of its callback.receive, and the Go handler's attempt the child of
// that apply, its context carrying the attempt's span.
func TestTracesFollowEachLiveMessage(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var mu sync.Mutex
	handlerSpans := map[string]trace.SpanContext{} // event id → the span in the handler's context
	k := startKit(t, cfg, ln, WithTracerProvider(tp), WithEventHandler(EventHandler{Name: "live",
		Filter: sinksFilter("live.*"), Func: func(ctx context.Context, ev api.Event) error {
			mu.Lock()
			defer mu.Unlock()
			handlerSpans[ev.ID] = trace.SpanContextFromContext(ctx)
			return nil
		}}))
	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	session, err := subm.StartLive(ctx, api.LiveRequest{SampleRate: api.Int(16000), Endpointing: api.Float(0.3),
		CallbackConfig: &api.LiveCallbackConfig{MessagesConfig: api.EveryMessage(true)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := subm.Stream(ctx, session, bytes.NewReader(w.wav), submitter.StreamOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := WaitJob(waitCtx, k.Records(), session.ID, 0, nil); err != nil {
		t.Fatal(err)
	}
	msgs, err := k.Records().LiveMessages(ctx, session.ID, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, fmt.Sprintf("a handler span per stored message (%d)", len(msgs)), 30*time.Second, func() bool {
		return len(spansWhere(sr, "sink.deliver", "scribehook.sink", "live")) == len(msgs)
	})

	receives := map[string]sdktrace.ReadOnlySpan{} // inbox id → its receive span
	for _, s := range spansWhere(sr, "callback.receive", "scribehook.session_id", session.ID) {
		if spanAttr(s, "scribehook.outcome") == "stored" {
			receives[spanAttr(s, "scribehook.inbox_id")] = s
		}
	}
	applies := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	grouped := 0
	for _, a := range spansWhere(sr, "inbox.apply", "scribehook.session_id", session.ID) {
		if spanAttr(a, "scribehook.outcome") != "applied" {
			continue
		}
		recv, ok := receives[spanAttr(a, "scribehook.inbox_id")]
		if !ok || a.Parent().SpanID() != recv.SpanContext().SpanID() || a.SpanContext().TraceID() != recv.SpanContext().TraceID() {
			t.Errorf("inbox.apply of row %s is not the child of its callback.receive", spanAttr(a, "scribehook.inbox_id"))
		}
		if spanAttr(a, "scribehook.group_size") != "1" {
			grouped++
		}
		applies[a.SpanContext().SpanID()] = a
	}
	if len(receives) != len(msgs) || len(applies) != len(msgs) {
		t.Fatalf("%d messages stored, %d received, %d applied", len(msgs), len(receives), len(applies))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range spansWhere(sr, "sink.deliver", "scribehook.sink", "live") {
		a, ok := applies[d.Parent().SpanID()]
		if !ok || a.SpanContext().TraceID() != d.SpanContext().TraceID() || spanAttr(d, "scribehook.sink.kind") != KindGo {
			t.Errorf("sink.deliver of %s is not a go sink's attempt under an apply of the session", spanAttr(d, "scribehook.event_id"))
		}
		if !handlerSpans[spanAttr(d, "scribehook.event_id")].Equal(d.SpanContext()) {
			t.Errorf("the handler of %s saw span %v, want its attempt's %v", spanAttr(d, "scribehook.event_id"),
				handlerSpans[spanAttr(d, "scribehook.event_id")], d.SpanContext())
		}
	}
	t.Logf("%d messages, %d applied in groups", len(msgs), grouped)
}

// Off (no provider), nothing is traced: the rows and the sink deliveries keep no trace
// context, webhook targets get no traceparent, and a configuration that turns tracing on in a
// program that gives no provider is refused rather than ignored.
func TestTracesOffByDefault(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	hook := newHookTarget(t)
	cfg.Sinks = []configs.Sink{{Name: "hook", Kind: "webhook", URL: hook.srv.URL,
		Events: []string{api.EventJobSucceeded}, Allow: []string{"127.0.0.1"}, Timeout: 5 * time.Second}}

	on := cfg
	on.Tracing.Enabled, on.Tracing.Endpoint = true, "127.0.0.1:4318"
	if _, err := New(context.Background(), on, WithSecrets(configs.Secrets{APIKey: testKey})); err == nil ||
		err.Error() != `tracing.enabled: the program gives the kit no tracer provider; build one from the configuration with `+
			`tracing.New (import "github.com/scribehook/scribehook/tracing") and pass it with scribehook.WithTracerProvider` {
		t.Fatalf("tracing on without a provider: %v", err)
	}

	k := startKit(t, cfg, ln)
	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := WaitJob(waitCtx, k.Records(), created.ID, 0, nil); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the delivery at the target", 30*time.Second, func() bool { return len(hook.requests()) == 1 })
	if h := hook.requests()[0].header; h.Get("traceparent") != "" || h.Get("tracestate") != "" {
		t.Errorf("delivered with trace headers %q %q", h.Get("traceparent"), h.Get("tracestate"))
	}
	// Every row stored (ids from 1), the job's among them, keeps no trace context.
	found := false
	for id := int64(1); ; id++ {
		row, err := k.store.InboxRow(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found = found || row.JobID == created.ID
		if _, ok := row.Headers["traceparent"]; ok {
			t.Errorf("row %d stored with a traceparent: %v", id, row.Headers)
		}
	}
	if !found {
		t.Fatal("the job's row was not found")
	}
}

func mustInt64(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sinksFilter(events ...string) sinks.Filter { return sinks.Filter{Events: events} }
