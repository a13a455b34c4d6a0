package receiver

import (
	"context"
	"io"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// BenchmarkServeCallback is the receiver's own work per callback, from the token to the
// answer, over a live transcript body on a static route: the store's commit is left out (an
// ingester that only counts), so what is measured is what the receiver adds to it.
func BenchmarkServeCallback(b *testing.B) { benchServeCallback(b, nil) }

// BenchmarkServeCallbackTraced is BenchmarkServeCallback with tracing on: every callback
// sampled, its span recorded by the SDK and dropped (no exporter), and its context stored.
func BenchmarkServeCallbackTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchServeCallback(b, tp)
}

func benchServeCallback(b *testing.B, tp trace.TracerProvider) {
	ing := &countingIngester{}
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	r, err := New(Config{
		Store:          teststore.SQLite(b),
		Ingester:       ing,
		Routes:         []Route{{Name: "partner", Token: testRouteToken}},
		Metrics:        prometheus.NewRegistry(),
		Logger:         logger,
		TracerProvider: tp,
	})
	if err != nil {
		b.Fatal(err)
	}
	bodies := apitest.LiveCallbackBodies(1, 256)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a := r.serveCallback(testRouteToken, benchRequest{raw: bodies[i%len(bodies)]})
		if a.status != 200 {
			b.Fatalf("status %d: %v", a.status, a.body)
		}
		i++
	}
}

// countingIngester acknowledges every delivery without storing it.
type countingIngester struct{ n atomic.Int64 }

func (c *countingIngester) Submit(_ context.Context, _ store.Delivery) (store.IngestResult, error) {
	return store.IngestResult{ID: c.n.Add(1)}, nil
}

// benchRequest is a callback request with a JSON body and nothing else.
type benchRequest struct{ raw []byte }

func (q benchRequest) header(name string) string {
	if name == "content-type" {
		return "application/json"
	}
	return ""
}

func (q benchRequest) body(int) ([]byte, error) { return q.raw, nil }

func (q benchRequest) client() netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, 1}) }
