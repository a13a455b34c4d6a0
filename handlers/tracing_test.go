package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/traces"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// received gives d the context of a callback.receive span of its own, as the receiver stores
// it: trace n, span n.
func received(d store.Delivery, n int) store.Delivery {
	h := maps.Clone(d.Headers)
	if h == nil {
		h = map[string]string{}
	}
	h["traceparent"] = fmt.Sprintf("00-%032x-%016x-01", n+1, n+1)
	d.Headers = h
	return d
}

func spanAttribute(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// Each row's inbox.apply continues the trace stored with it, whether the row is applied alone
// or in a group (a span per row, each the child of its own receipt), and the sink deliveries it
// queues carry that apply's context, for their attempts' spans.
func TestApplySpansContinueEachRowsTrace(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	var ds []store.Delivery
	for n := range 30 {
		ds = append(ds, received(variedLive(fmt.Sprintf("traced-%d", n%2), n/2).Delivery, n))
	}
	ds = append(ds, received(jobSuccess("traced-job", sampleResult("hello"), ""), len(ds)))
	// Committed before the pipeline runs: the startup scan queues them at once, and the
	// partition hands the live messages over in groups.
	ids := ingest(t, s, nil, ds...)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	start(t, handlers.Config{Store: s, Partitions: 1, TracerProvider: tp,
		Sinks: []sinks.Spec{{Name: "hook", Kind: "log"}}})
	waitFor(t, func() string { return fmt.Sprintf("%d spans ended", len(sr.Ended())) }, func() bool {
		return len(sr.Ended()) >= len(ds)
	})

	applies := map[trace.TraceID]sdktrace.ReadOnlySpan{}
	grouped := 0
	for _, span := range sr.Ended() {
		if span.Name() != "inbox.apply" {
			t.Errorf("span %s, want inbox.apply only (no resolver)", span.Name())
			continue
		}
		if got := spanAttribute(span, "scribehook.outcome"); got != "applied" {
			t.Errorf("row %s: outcome %s", spanAttribute(span, "scribehook.inbox_id"), got)
		}
		if _, dup := applies[span.SpanContext().TraceID()]; dup {
			t.Errorf("two apply spans in trace %s", span.SpanContext().TraceID())
		}
		applies[span.SpanContext().TraceID()] = span
		if spanAttribute(span, "scribehook.group_size") != "1" {
			grouped++
		}
	}
	if grouped == 0 {
		t.Error("no row was applied in a group")
	}
	for i, d := range ds {
		n := i + 1
		var tid trace.TraceID
		tid[15] = byte(n)
		span, ok := applies[tid]
		if !ok {
			t.Errorf("row %d (%s) has no apply span in its trace", ids[i], d.DedupeKey)
			continue
		}
		var parent trace.SpanID
		parent[7] = byte(n)
		if span.Parent().SpanID() != parent || !span.Parent().IsRemote() ||
			spanAttribute(span, "scribehook.inbox_id") != fmt.Sprint(ids[i]) || spanAttribute(span, "scribehook.attempt") != "1" {
			t.Errorf("row %d: apply under %v (remote %v), inbox_id %s; want under span %v of its receipt", ids[i],
				span.Parent().SpanID(), span.Parent().IsRemote(), spanAttribute(span, "scribehook.inbox_id"), parent)
		}
	}

	queued, err := s.ClaimSinkDeliveries(context.Background(), "hook", false, time.Now().Add(time.Hour), time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A live message's event each, the job's job.succeeded.
	if len(queued) != len(ds) {
		t.Fatalf("%d deliveries queued, want %d", len(queued), len(ds))
	}
	for _, dl := range queued {
		sc := traces.SpanContext(dl.TraceParent, dl.TraceState)
		span, ok := applies[sc.TraceID()]
		if !ok || sc.SpanID() != span.SpanContext().SpanID() || !sc.IsSampled() {
			t.Errorf("delivery of %s (%s) queued with traceparent %q: not its apply's span", dl.EventID, dl.Event.Type, dl.TraceParent)
		}
	}
}

// Tracing off, the rows' stored contexts are not read and the deliveries carry none.
func TestNoTracerQueuesNoTraceContext(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	ds := []store.Delivery{received(variedLive("untraced", 0).Delivery, 0), received(jobSuccess("untraced-job", sampleResult("hi"), ""), 1)}
	ingest(t, s, nil, ds...)
	start(t, handlers.Config{Store: s, Partitions: 1, Sinks: []sinks.Spec{{Name: "hook", Kind: "log"}}})
	waitBacklogEmpty(t, s)
	queued, err := s.ClaimSinkDeliveries(context.Background(), "hook", false, time.Now().Add(time.Hour), time.Minute, 0)
	if err != nil || len(queued) != 2 {
		t.Fatalf("queued %d, %v", len(queued), err)
	}
	for _, dl := range queued {
		if dl.TraceParent != "" || dl.TraceState != "" {
			t.Errorf("%s queued with %q %q", dl.Event.Type, dl.TraceParent, dl.TraceState)
		}
	}
}

// failingResolver cannot reach the service.
type failingResolver struct{}

func (failingResolver) GetJob(context.Context, string, api.JobKind) (api.Job, error) {
	return api.Job{}, errors.New("service unreachable")
}

// The pipeline's warnings within an apply name its trace.
func TestApplyLogsCarryTheTraceID(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	ingest(t, s, nil, received(jobSuccess("logged-job", sampleResult("hi"), ""), 41))
	logger, hook := logtest.NewNullLogger()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	start(t, handlers.Config{Store: s, Partitions: 1, TracerProvider: tp, Resolver: failingResolver{}, Logger: logger})
	waitFor(t, func() string { return "the apply span" }, func() bool { return len(sr.Ended()) == 1 })
	var found bool
	for _, e := range hook.AllEntries() {
		if e.Message == "could not read the job from the service" {
			found = true
			if e.Data["trace_id"] != fmt.Sprintf("%032x", 42) {
				t.Errorf("trace_id %v, want the row's trace", e.Data["trace_id"])
			}
		}
	}
	if !found {
		t.Fatalf("no warning logged: %v", hook.AllEntries())
	}
}
