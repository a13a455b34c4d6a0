package handlers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
	"github.com/scribehook/scribehook/store"
)

// BenchmarkPipelineLiveMessages measures rows applied per second with four partitions: live
// messages of 16 sessions, ingested in batches of 64 and notified as the receiver does, with
// the store's default (durable) synchronous setting.
func BenchmarkPipelineLiveMessages(b *testing.B) { benchLive(b, nil) }

// BenchmarkPipelineLiveSink is BenchmarkPipelineLiveMessages with a sink taking every live
// event: each applied message also queues its event.
func BenchmarkPipelineLiveSink(b *testing.B) {
	benchLive(b, &sinks.Spec{Name: "files", Kind: sinks.KindFile, Dir: b.TempDir(), Filter: sinks.Filter{Events: []string{"live.*"}}})
}

// BenchmarkPipelineLiveSinkWhen is BenchmarkPipelineLiveSink with a when over the message's
// text: each message decoded for the expression and the expression run.
func BenchmarkPipelineLiveSinkWhen(b *testing.B) {
	when, err := sinkexpr.CompileWhen(`event.data.data.utterance.text.lowerAscii().contains("refund")`)
	if err != nil {
		b.Fatal(err)
	}
	benchLive(b, &sinks.Spec{Name: "files", Kind: sinks.KindFile, Dir: b.TempDir(), Filter: sinks.Filter{Events: []string{"live.*"}, When: when}})
}

func benchLive(b *testing.B, sink *sinks.Spec) {
	s := teststore.SQLite(b)
	cs := &applyCounter{Store: s}
	cfg := handlers.Config{Store: cs, Partitions: 4}
	if sink != nil {
		cfg.Sinks = []sinks.Spec{*sink}
	}
	r := start(b, cfg)
	const sessions, batch = 16, 64
	ds := make([]store.Delivery, b.N)
	for i := range ds {
		ds[i] = variedLive(fmt.Sprintf("bench-%d", i%sessions), i/sessions).Delivery
	}
	b.ResetTimer()
	begin := time.Now()
	for i := 0; i < len(ds); i += batch {
		ingest(b, cs, r.p, ds[i:min(i+batch, len(ds))]...)
	}
	for cs.n.Load() < int64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
	if n, err := s.InboxBacklog(context.Background()); err != nil || n != 0 {
		b.Fatalf("backlog %d, %v", n, err)
	}
}

// applyCounter counts the rows of successful Applies and groups.
type applyCounter struct {
	store.Store
	n atomic.Int64
}

func (c *applyCounter) Apply(ctx context.Context, id int64, fn func(context.Context, store.Tx) error) error {
	err := c.Store.Apply(ctx, id, fn)
	if err == nil {
		c.n.Add(1)
	}
	return err
}

// ApplyGroup counts each row a successful group applied.
func (c *applyCounter) ApplyGroup(ctx context.Context, ids []int64, fn func(context.Context, store.Tx, []int64) error) error {
	var n int
	err := c.Store.ApplyGroup(ctx, ids, func(ctx context.Context, tx store.Tx, marked []int64) error {
		n = len(marked)
		return fn(ctx, tx, marked)
	})
	if err == nil {
		c.n.Add(int64(n))
	}
	return err
}

// BenchmarkPipelineBacklog measures how fast the pipeline drains a backlog: b.N live messages
// of 64 sessions committed before it starts (a restart after an outage, or processing behind
// a burst), applied by four partitions in groups.
func BenchmarkPipelineBacklog(b *testing.B) {
	s := teststore.SQLite(b)
	cs := &applyCounter{Store: s}
	const sessions, batch = 64, 256
	ds := make([]store.Delivery, b.N)
	for i := range ds {
		ds[i] = variedLive(fmt.Sprintf("backlog-%d", i%sessions), i/sessions).Delivery
	}
	for i := 0; i < len(ds); i += batch {
		ingest(b, cs, nil, ds[i:min(i+batch, len(ds))]...)
	}
	b.ResetTimer()
	begin := time.Now()
	start(b, handlers.Config{Store: cs, Partitions: 4})
	for cs.n.Load() < int64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "rows/s")
}
