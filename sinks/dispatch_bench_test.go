package sinks_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/benchcpu"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// BenchmarkDispatchWebhook is "one webhook sink, sustained": a dispatcher drains b.N live events
// queued on the real SQLite store (synchronous full, as serve runs it) to a loopback receiver,
// signed, over 64 sessions, and reports events per second from its start to the last
// delivery recorded in the queue. The receiver only reads and answers 200; verifying the
// signatures would take the sink's CPU on a small machine.
func BenchmarkDispatchWebhook(b *testing.B) {
	for _, ordered := range []bool{false, true} {
		for _, conc := range []int{0, 4, 16} {
			b.Run(fmt.Sprintf("ordered=%t/concurrency=%d", ordered, conc), func(b *testing.B) {
				benchDispatchWebhook(b, ordered, conc)
			})
		}
	}
}

func benchDispatchWebhook(b *testing.B, ordered bool, concurrency int) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
	}))
	defer srv.Close()
	spec := sinks.Spec{Name: "hook", Kind: sinks.KindWebhook, URL: srv.URL + "/hook", Allow: []string{"127.0.0.0/8"},
		SigningSecrets: []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("bench signing key, 32 bytes!!!!!"))},
		Ordered:        ordered, Concurrency: concurrency}
	sink, err := sinks.New(spec, sinks.Deps{Logger: dispQuiet()})
	if err != nil {
		b.Fatal(err)
	}
	benchDispatch(b, spec, sink)
	if got.Load() < int64(b.N) {
		b.Fatalf("%d of %d events reached the receiver", got.Load(), b.N)
	}
}

// BenchmarkDispatchFile is the file sink under the same drain: each event written atomically
// and durably, in batches (one sync for a claim's events) or one at a time.
func BenchmarkDispatchFile(b *testing.B) {
	for _, batch := range []bool{true, false} {
		b.Run(fmt.Sprintf("batch=%t", batch), func(b *testing.B) {
			spec := sinks.Spec{Name: "files", Kind: sinks.KindFile, Dir: filepath.Join(b.TempDir(), "out")}
			fs, err := sinks.NewFile(spec, sinks.Deps{Logger: dispQuiet()})
			if err != nil {
				b.Fatal(err)
			}
			var sink sinks.Sink = fs
			if !batch {
				sink = struct{ sinks.Sink }{fs} // hides DeliverBatch
			}
			benchDispatch(b, spec, sink)
		})
	}
}

// benchDispatch queues b.N live events over 64 sessions for spec's sink on a new SQLite store,
// then times a dispatcher draining them.
func benchDispatch(b *testing.B, spec sinks.Spec, sink sinks.Sink) {
	ctx := b.Context()
	s := teststore.SQLite(b)
	ds := make([]store.SinkDelivery, b.N)
	now := time.Now()
	for i := range ds {
		session := "session-" + strconv.Itoa(i%64)
		ev := api.Event{ID: "ev-" + strconv.Itoa(i), Type: "live.transcript", CreatedAt: api.NewTime(now), JobID: session,
			Kind: api.KindLive, Category: api.CategoryFinalTranscripts,
			Data: []byte(`{"id":"` + strconv.Itoa(i) + `","is_final":true,"utterance":{"start":1.5,"end":2.5,"channel":0,"text":"the quick brown fox jumps over the lazy dog"}}`)}
		ds[i] = store.SinkDelivery{Sink: spec.Name, Event: ev, OrderKey: session, CreatedAt: now}
	}
	for i := 0; i < len(ds); i += 1000 {
		if err := s.EnqueueSinkDeliveries(ctx, ds[i:min(i+1000, len(ds))]); err != nil {
			b.Fatal(err)
		}
	}
	q := newBatchSpy(s, false)
	d := sinks.NewDispatcher(sinks.DispatcherConfig{Queue: q, Logger: dispQuiet()})
	if err := d.Add(spec, sink); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := benchcpu.Start(b)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	d.Wake("")
	for {
		n, err := q.SinkDepth(ctx, spec.Name)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
		// Counting the queue is a query of its own: often enough to time the drain within 10
		// ms, rarely enough not to weigh on it.
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	_ = d.Close()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	cpu.Report()
	groups, single := q.counts()
	b.ReportMetric(float64(q.claims)/float64(b.N), "claims/op")
	b.ReportMetric(float64(len(groups)+single)/float64(b.N), "completions/op")
}
