package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/testotlp"
	"github.com/scribehook/scribehook/tracing"
)

func enabled(exporter, endpoint string) configs.TracingConfig {
	t := configs.DefaultTracing()
	t.Enabled, t.Exporter, t.Endpoint, t.Insecure, t.ServiceName = true, exporter, endpoint, true, "hooks-test"
	return t
}

// emit starts a root span and a child of it with tp's tracer, ends both, and shuts tp down
// (which exports what is queued). It returns the root's trace id and the spans' ids.
func emit(t *testing.T, tp trace.TracerProvider, shutdown func(context.Context) error) (traceID, rootID, childID string) {
	t.Helper()
	tr := tp.Tracer("test")
	ctx, root := tr.Start(context.Background(), "callback.receive", trace.WithAttributes(attribute.String("scribehook.route", "job")))
	_, child := tr.Start(ctx, "inbox.apply", trace.WithAttributes(attribute.Int64("scribehook.inbox_id", 42)))
	child.End()
	root.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	return root.SpanContext().TraceID().String(), root.SpanContext().SpanID().String(), child.SpanContext().SpanID().String()
}

// The OTLP exporters really export: over HTTP (protobuf to /v1/traces) and over gRPC, each span
// with its name, ids, parent, attributes and the configured service name, each export with the
// headers of tracing.headers_env.
func TestExportsOverOTLP(t *testing.T) {
	for _, tc := range []struct {
		exporter string
		start    func(testing.TB) *testotlp.Collector
	}{
		{"otlp-http", testotlp.NewHTTP},
		{"otlp-grpc", testotlp.NewGRPC},
	} {
		t.Run(tc.exporter, func(t *testing.T) {
			col := tc.start(t)
			tp, err := tracing.New(t.Context(), tracing.Config{Tracing: enabled(tc.exporter, col.Endpoint),
				Headers: map[string]string{"authorization": "Bearer tr4ce-key"}})
			if err != nil {
				t.Fatal(err)
			}
			traceID, rootID, childID := emit(t, tp, tp.Shutdown)
			spans := col.Spans()
			if len(spans) != 2 || col.Exports() != 1 {
				t.Fatalf("%d exports of %d spans: %+v", col.Exports(), len(spans), spans)
			}
			byName := map[string]testotlp.Span{}
			for _, s := range spans {
				byName[s.Name] = s
				if s.TraceID != traceID || s.Service != "hooks-test" || s.Headers.Get("Authorization") != "Bearer tr4ce-key" {
					t.Errorf("span %s: trace %s (want %s), service %q, authorization %q", s.Name, s.TraceID, traceID,
						s.Service, s.Headers.Get("Authorization"))
				}
			}
			root, child := byName["callback.receive"], byName["inbox.apply"]
			if root.SpanID != rootID || root.ParentSpanID != "" || root.Attributes["scribehook.route"] != "job" {
				t.Errorf("root = %+v, want span %s without parent", root, rootID)
			}
			if child.SpanID != childID || child.ParentSpanID != rootID || child.Attributes["scribehook.inbox_id"] != "42" {
				t.Errorf("child = %+v, want span %s under %s", child, childID, rootID)
			}
		})
	}
}

// sample_ratio 0 records no new trace (callback.receive is a root), and a child follows its
// parent's decision.
func TestSampleRatioIsParentBased(t *testing.T) {
	col := testotlp.NewHTTP(t)
	cfg := enabled("otlp-http", col.Endpoint)
	cfg.SampleRatio = 0
	tp, err := tracing.New(t.Context(), tracing.Config{Tracing: cfg})
	if err != nil {
		t.Fatal(err)
	}
	tr := tp.Tracer("test")
	_, root := tr.Start(context.Background(), "callback.receive")
	root.End()
	// A sampled remote parent (a stored traceparent of a callback traced before) is followed.
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2},
		TraceFlags: trace.FlagsSampled, Remote: true})
	_, child := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "inbox.apply")
	child.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if root.SpanContext().IsSampled() || !child.SpanContext().IsSampled() {
		t.Fatalf("root sampled %v, child of a sampled parent sampled %v", root.SpanContext().IsSampled(), child.SpanContext().IsSampled())
	}
	if spans := col.Spans(); len(spans) != 1 || spans[0].Name != "inbox.apply" || spans[0].ParentSpanID != parent.SpanID().String() {
		t.Fatalf("exported %+v, want the child alone", spans)
	}
}

// The stdout exporter writes each span as JSON to Stdout.
func TestStdoutExporter(t *testing.T) {
	var out bytes.Buffer
	tp, err := tracing.New(t.Context(), tracing.Config{Tracing: enabled("stdout", ""), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	traceID, _, _ := emit(t, tp, tp.Shutdown)
	dec := json.NewDecoder(&out)
	var names []string
	for dec.More() {
		var s struct {
			Name        string
			SpanContext struct{ TraceID string }
		}
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("decode %q: %v", out.String(), err)
		}
		if s.SpanContext.TraceID != traceID {
			t.Errorf("span %s in trace %s, want %s", s.Name, s.SpanContext.TraceID, traceID)
		}
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "inbox.apply,callback.receive" {
		t.Fatalf("spans %v", names)
	}
}

// New refuses what it cannot build, naming why.
func TestNewRefuses(t *testing.T) {
	off := configs.DefaultTracing()
	if _, err := tracing.New(t.Context(), tracing.Config{Tracing: off}); err == nil ||
		err.Error() != "tracing: tracing.enabled is false: nothing to build" {
		t.Errorf("off: %v", err)
	}
	bad := enabled("zipkin", "127.0.0.1:9411")
	if _, err := tracing.New(t.Context(), tracing.Config{Tracing: bad}); err == nil ||
		err.Error() != `tracing: tracing.exporter must be one of [otlp-http otlp-grpc stdout] (got "zipkin")` {
		t.Errorf("zipkin: %v", err)
	}
}

// The configuration decides where spans go: OpenTelemetry's own variables naming another
// collector, or asking for TLS, do not move the export.
func TestEndpointOverridesEnvironment(t *testing.T) {
	configured, other := testotlp.NewHTTP(t), testotlp.NewHTTP(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://"+other.Endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://"+other.Endpoint+"/elsewhere")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "false")
	tp, err := tracing.New(t.Context(), tracing.Config{Tracing: enabled("otlp-http", configured.Endpoint)})
	if err != nil {
		t.Fatal(err)
	}
	emit(t, tp, tp.Shutdown)
	if len(configured.Spans()) != 2 || other.Conns() != 0 {
		t.Fatalf("configured collector got %d spans, the other %d connections", len(configured.Spans()), other.Conns())
	}
}
