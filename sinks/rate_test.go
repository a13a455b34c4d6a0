package sinks_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
)

func rateIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(prefix, i)
	}
	return ids
}

func TestPolicyRate(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		burst     int
		wantBurst int
		wantErr   string
	}{
		{rate: 0, burst: 0, wantBurst: 0},
		{rate: 5, wantBurst: 5},
		{rate: 0.5, wantBurst: 1},
		{rate: 2.5, wantBurst: 3},
		{rate: 5, burst: 1, wantBurst: 1},
		{rate: -1, wantErr: `sink "s": rate: -1 is not a positive number of deliveries a second, nor 0 for no limit`},
		{rate: math.Inf(1), wantErr: `sink "s": rate: +Inf is not a positive number of deliveries a second, nor 0 for no limit`},
		{rate: 5, burst: -2, wantErr: `sink "s": rate burst: -2 is negative`},
	} {
		p, err := sinks.PolicyOf(sinks.Spec{Name: "s", Rate: tc.rate, RateBurst: tc.burst})
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("rate %g burst %d: err = %v, want %q", tc.rate, tc.burst, err, tc.wantErr)
			}
			continue
		}
		if err != nil || p.Rate != tc.rate || p.Burst != tc.wantBurst {
			t.Errorf("rate %g burst %d: policy rate %g burst %d, err %v; want burst %d", tc.rate, tc.burst, p.Rate, p.Burst, err, tc.wantBurst)
		}
	}
}

// TestDispatchRateClock: on the hand-driven clock, a sink at 10 a second (burst 10) attempts
// its burst at once, then exactly as many as the tokens the clock's advances bring, while an
// unlimited sink beside it delivers everything at once.
func TestDispatchRateClock(t *testing.T) {
	e := newDispEnv(t)
	limited := newDispSink("limited", nil)
	free := newDispSink("free", nil)
	e.enqueue("limited", rateIDs("l", 40)...)
	e.enqueue("free", rateIDs("f", 40)...)
	d := e.run(sinks.DispatcherConfig{}, []sinks.Spec{{Name: "limited", Rate: 10}, {Name: "free"}}, limited, free)

	testwait.For(t, "the unlimited sink's 40", dispWait, func() bool { return len(free.done()) == 40 })
	testwait.For(t, "the limited sink's burst", dispWait, func() bool { return len(limited.done()) == 10 })
	dispStill(t, limited, 10, "no token left, the clock stopped")

	e.advance(d, 500*time.Millisecond) // 5 tokens
	testwait.For(t, "5 more", dispWait, func() bool { return len(limited.done()) == 15 })
	dispStill(t, limited, 15, "5 tokens in 500ms")
	e.advance(d, time.Second) // 10 tokens
	testwait.For(t, "10 more", dispWait, func() bool { return len(limited.done()) == 25 })
	dispStill(t, limited, 25, "10 tokens in 1s")
	e.advance(d, 10*time.Second) // the bucket holds 10 at most
	testwait.For(t, "a full bucket", dispWait, func() bool { return len(limited.done()) == 35 })
	dispStill(t, limited, 35, "a bucket never holds more than its burst")
	e.advance(d, 500*time.Millisecond)
	testwait.For(t, "the rest", dispWait, func() bool { return len(limited.done()) == 40 })
	testwait.For(t, "the queue drained", dispWait, func() bool { return e.depth("limited") == 0 })
	if n := len(e.deadLetters("limited")); n != 0 {
		t.Errorf("%d dead letters", n)
	}
	// The waits for tokens are counted: 0.5 + 1 + 10 s of the clock at least.
	if v := testmetrics.Value(t, e.reg, "scribehook_sink_rate_limited_seconds_total", "sink", "limited"); v < 11.5 {
		t.Errorf("rate_limited_seconds = %g, want ≥ 11.5", v)
	}
	if _, ok := testmetrics.Series(t, e.reg, "scribehook_sink_rate_limited_seconds_total", "sink", "free"); ok {
		t.Errorf("the unlimited sink has a rate_limited series")
	}
}

// rateBatchSink is a BatchSink that records the size of each batch.
type rateBatchSink struct {
	name    string
	mu      sync.Mutex
	batches []int
	n       int
}

func (s *rateBatchSink) Name() string { return s.name }
func (s *rateBatchSink) Close() error { return nil }
func (s *rateBatchSink) Deliver(ctx context.Context, ev api.Event) error {
	s.DeliverBatch(ctx, []api.Event{ev})
	return nil
}

func (s *rateBatchSink) DeliverBatch(_ context.Context, evs []api.Event) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, len(evs))
	s.n += len(evs)
	return make([]error, len(evs))
}

func (s *rateBatchSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestDispatchRateBatches: a batched kind's rate counts deliveries, not batches.
func TestDispatchRateBatches(t *testing.T) {
	e := newDispEnv(t)
	s := &rateBatchSink{name: "batched"}
	e.enqueue("batched", rateIDs("b", 30)...)
	d := e.run(sinks.DispatcherConfig{}, []sinks.Spec{{Name: "batched", Rate: 4, RateBurst: 8}}, s)
	testwait.For(t, "the burst", dispWait, func() bool { return s.count() == 8 })
	time.Sleep(100 * time.Millisecond)
	if n := s.count(); n != 8 {
		t.Fatalf("%d delivered with the clock stopped, want the burst of 8", n)
	}
	e.advance(d, time.Second)
	testwait.For(t, "4 more", dispWait, func() bool { return s.count() == 12 })
	time.Sleep(100 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n != 12 {
		t.Fatalf("%d delivered after 1s at 4/s, want 12 (batches %v)", s.n, s.batches)
	}
	for _, b := range s.batches {
		if b > 8 {
			t.Errorf("a batch of %d, above the burst (batches %v)", b, s.batches)
		}
	}
}

// TestDispatchRateRealTime: on the real clock, a sink at 20 a second with a burst of 1 takes at
// least 2.9 s for 60 deliveries, no 1-second window holds more than 21 of its attempts, and an
// unlimited sink queued at the same time is done long before it.
func TestDispatchRateRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 3 s")
	}
	e := newDispEnv(t)
	var mu sync.Mutex
	var at []time.Time
	limited := newDispSink("limited", func(context.Context, api.Event, int) error {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return nil
	})
	free := newDispSink("free", nil)
	e.enqueue("limited", rateIDs("l", 60)...)
	e.enqueue("free", rateIDs("f", 100)...)
	start := time.Now()
	d := e.run(sinks.DispatcherConfig{Now: time.Now, PollInterval: 50 * time.Millisecond},
		[]sinks.Spec{{Name: "limited", Rate: 20, RateBurst: 1}, {Name: "free"}}, limited, free)
	d.Wake("")
	testwait.For(t, "the unlimited sink", dispWait, func() bool { return len(free.done()) == 100 })
	freeDone := time.Since(start)
	limitedThen := len(limited.done())
	testwait.For(t, "the limited sink", dispWait, func() bool { return len(limited.done()) == 60 })
	elapsed := time.Since(start)
	t.Logf("unlimited: 100 in %s (the limited one had %d then); limited: 60 in %s",
		freeDone.Round(time.Millisecond), limitedThen, elapsed.Round(time.Millisecond))
	if elapsed < 2900*time.Millisecond {
		t.Errorf("60 deliveries at 20/s took %s, want ≥ 2.9s", elapsed)
	}
	if limitedThen >= 60 {
		t.Errorf("the unlimited sink finished after the limited one: it was slowed")
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < time.Second; j++ {
			n++
		}
		if n > 21 {
			t.Fatalf("%d attempts within 1s from attempt %d, want ≤ 21 (20/s, burst 1)", n, i)
		}
	}
}

// TestDispatchRateGroups: once held back, a sink at 100 a second waits for a tenth of a
// second's tokens (10) before it claims again, rather than claiming each token as it comes.
func TestDispatchRateGroups(t *testing.T) {
	e := newDispEnv(t)
	s := newDispSink("fast", nil)
	e.enqueue("fast", rateIDs("g", 40)...)
	d := e.run(sinks.DispatcherConfig{}, []sinks.Spec{{Name: "fast", Rate: 100, RateBurst: 10}}, s)
	testwait.For(t, "the burst", dispWait, func() bool { return len(s.done()) == 10 })
	e.advance(d, 50*time.Millisecond) // 5 tokens: fewer than a group
	dispStill(t, s, 10, "5 tokens, a group is 10")
	e.advance(d, 50*time.Millisecond) // 10
	testwait.For(t, "a group of 10", dispWait, func() bool { return len(s.done()) == 20 })
	dispStill(t, s, 20, "one group")
}
