package sinks_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// BenchmarkDispatchRateLimited is "a rate-limited sink beside an unlimited one": two signed
// webhook sinks on one dispatcher and one SQLite store (synchronous full), to one loopback
// receiver. The unlimited sink drains 20,000 queued events, alone, then beside a sink at
// rate 50 (burst 50) that drains 300. It reports the unlimited sink's events/s; the limited
// sink's time to deliver its 300 (its bucket allows no less than (300 − 50) / 50 = 5 s), its
// rate beyond the burst ((300 − 50) / that time) and the most deliveries it made in any one
// second (at most 50 + 50 by its bucket); each a mean (the last a maximum) over the iterations,
// each iteration one run alone and one beside. Run with -benchtime 3x: an iteration takes about
// twenty seconds.
func BenchmarkDispatchRateLimited(b *testing.B) {
	const unlimited, limited, rate = 20000, 300, 50
	// Alone and beside alternate, so that a machine's load weighs on both alike.
	var alone, beside, limitedRate, limitedS float64
	var max1s int
	for range b.N {
		alone += runRateBench(b, unlimited, 0, 0).freeRate
		r := runRateBench(b, unlimited, limited, rate)
		beside += r.freeRate
		limitedRate += r.limitedRate
		limitedS += r.limitedSpan.Seconds()
		max1s = max(max1s, r.limitedMax1s)
	}
	n := float64(b.N)
	b.ReportMetric(alone/n, "unlimited-alone-events/s")
	b.ReportMetric(beside/n, "unlimited-beside-events/s")
	b.ReportMetric(limitedS/n, "limited-s")
	b.ReportMetric(limitedRate/n, "limited-events/s")
	b.ReportMetric(float64(max1s), "limited-max-per-1s")
}

type rateBenchResult struct {
	freeRate     float64 // the unlimited sink's events a second
	limitedRate  float64 // the limited sink's, after its burst
	limitedMax1s int
	limitedSpan  time.Duration
}

func runRateBench(b *testing.B, nFree, nLimited int, rate float64) rateBenchResult {
	b.StopTimer()
	var mu sync.Mutex
	var freeN int
	var freeLast time.Time
	var limitedAt []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		now := time.Now()
		mu.Lock()
		if r.URL.Path == "/limited" {
			limitedAt = append(limitedAt, now)
		} else {
			freeN++
			freeLast = now
		}
		mu.Unlock()
	}))
	defer srv.Close()
	secret := []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("bench signing key, 32 bytes!!!!!"))}
	specs := []sinks.Spec{{Name: "free", Kind: sinks.KindWebhook, URL: srv.URL + "/free", Allow: []string{"127.0.0.0/8"}, SigningSecrets: secret}}
	if nLimited > 0 {
		specs = append(specs, sinks.Spec{Name: "limited", Kind: sinks.KindWebhook, URL: srv.URL + "/limited",
			Allow: []string{"127.0.0.0/8"}, SigningSecrets: secret, Rate: rate})
	}
	ctx := b.Context()
	s := teststore.SQLite(b)
	now := time.Now()
	queue := func(sink string, n int) {
		ds := make([]store.SinkDelivery, n)
		for i := range ds {
			session := "session-" + strconv.Itoa(i%64)
			ev := api.Event{ID: sink + "-" + strconv.Itoa(i), Type: "live.transcript", CreatedAt: api.NewTime(now), JobID: session,
				Kind: api.KindLive, Category: api.CategoryFinalTranscripts,
				Data: []byte(`{"id":"` + strconv.Itoa(i) + `","is_final":true,"utterance":{"start":1.5,"end":2.5,"channel":0,"text":"the quick brown fox jumps over the lazy dog"}}`)}
			ds[i] = store.SinkDelivery{Sink: sink, Event: ev, OrderKey: session, CreatedAt: now}
		}
		for i := 0; i < len(ds); i += 1000 {
			if err := s.EnqueueSinkDeliveries(ctx, ds[i:min(i+1000, len(ds))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	queue("free", nFree)
	if nLimited > 0 {
		queue("limited", nLimited)
	}
	d := sinks.NewDispatcher(sinks.DispatcherConfig{Queue: s, Logger: dispQuiet()})
	for _, spec := range specs {
		sink, err := sinks.New(spec, sinks.Deps{Logger: dispQuiet()})
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Add(spec, sink); err != nil {
			b.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.StartTimer()
	start := time.Now()
	go func() { done <- d.Run(runCtx) }()
	d.Wake("")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		finished := freeN >= nFree && len(limitedAt) >= nLimited
		mu.Unlock()
		if finished {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("not drained in 2 minutes: %d of %d, %d of %d", freeN, nFree, len(limitedAt), nLimited)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	_ = d.Close()
	mu.Lock()
	defer mu.Unlock()
	r := rateBenchResult{freeRate: float64(nFree) / freeLast.Sub(start).Seconds()}
	if nLimited > 0 {
		burst := sinks.DefaultBurst(rate)
		r.limitedSpan = limitedAt[nLimited-1].Sub(start)
		r.limitedRate = float64(nLimited-burst) / r.limitedSpan.Seconds()
		for i := range limitedAt {
			k := 0
			for j := i; j < len(limitedAt) && limitedAt[j].Sub(limitedAt[i]) < time.Second; j++ {
				k++
			}
			r.limitedMax1s = max(r.limitedMax1s, k)
		}
	}
	return r
}
