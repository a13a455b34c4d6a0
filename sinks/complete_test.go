package sinks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// batchSpy is the store's queue counting how deliveries are completed: in groups
// (CompleteSinkDeliveries, CompleteAndClaimSinkDeliveries) or one by one; failMany makes every group fail, as one unknown id would.
type batchSpy struct {
	store.SinkQueue
	failMany bool

	mu      sync.Mutex
	groups  []int // the size of each group recorded
	single  int   // Complete calls
	claims  int   // Claim calls
	claimed int   // deliveries they returned
}

func newBatchSpy(s store.Store, failMany bool) *batchSpy {
	return &batchSpy{SinkQueue: s, failMany: failMany}
}

func (q *batchSpy) ClaimSinkDeliveries(ctx context.Context, sink string, ordered bool, now time.Time, lease time.Duration, limit int) ([]store.SinkDelivery, error) {
	ds, err := q.SinkQueue.ClaimSinkDeliveries(ctx, sink, ordered, now, lease, limit)
	q.mu.Lock()
	q.claims++
	q.claimed += len(ds)
	q.mu.Unlock()
	return ds, err
}

func (q *batchSpy) CompleteSinkDeliveries(ctx context.Context, ids []int64) error {
	q.mu.Lock()
	q.groups = append(q.groups, len(ids))
	q.mu.Unlock()
	if q.failMany {
		return errors.New("batch refused")
	}
	return q.SinkQueue.CompleteSinkDeliveries(ctx, ids)
}

func (q *batchSpy) CompleteAndClaimSinkDeliveries(ctx context.Context, done []int64, sink string, ordered bool, now time.Time,
	lease time.Duration, limit int) ([]store.SinkDelivery, error) {
	q.mu.Lock()
	q.claims++
	if len(done) > 0 {
		q.groups = append(q.groups, len(done))
	}
	q.mu.Unlock()
	if q.failMany && len(done) > 0 {
		return nil, errors.New("batch refused")
	}
	ds, err := q.SinkQueue.CompleteAndClaimSinkDeliveries(ctx, done, sink, ordered, now, lease, limit)
	q.mu.Lock()
	q.claimed += len(ds)
	q.mu.Unlock()
	return ds, err
}

func (q *batchSpy) CompleteSinkDelivery(ctx context.Context, id int64) error {
	q.mu.Lock()
	q.single++
	q.mu.Unlock()
	return q.SinkQueue.CompleteSinkDelivery(ctx, id)
}

func (q *batchSpy) counts() (groups []int, single int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.groups), q.single
}

// dispIDs is "e0@k0", "e1@k1"… over keys order keys.
func dispIDs(n, keys int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("e%d@k%d", i, i%keys)
	}
	return out
}

// TestDispatchCompletesInGroups: with a queue that records many completions at once, the
// attempts finishing together are completed in one transaction, every delivery once; when a
// group fails, each of its deliveries is completed on its own.
func TestDispatchCompletesInGroups(t *testing.T) {
	for _, failMany := range []bool{false, true} {
		t.Run(fmt.Sprintf("failMany=%t", failMany), func(t *testing.T) {
			const n = 300
			e := newDispEnv(t)
			q := newBatchSpy(e.store, failMany)
			sink := newDispSink("hook", func(context.Context, api.Event, int) error {
				time.Sleep(2 * time.Millisecond)
				return nil
			})
			e.enqueue("hook", dispIDs(n, 30)...)
			e.run(sinks.DispatcherConfig{Queue: q}, []sinks.Spec{{Name: "hook"}}, sink)
			testwait.For(t, "every delivery recorded", dispWait, func() bool { return e.depth("hook") == 0 })
			if got := sink.done(); len(got) != n || len(sinkSet(got)) != n {
				t.Fatalf("%d attempts succeeded for %d distinct events, want %d once each", len(got), len(sinkSet(got)), n)
			}
			groups, single := q.counts()
			grouped := 0
			for _, g := range groups {
				grouped += g
			}
			switch {
			case !failMany && grouped+single != n:
				t.Errorf("%d completed in %d groups and %d alone, want %d in all", grouped, len(groups), single, n)
			case !failMany && len(groups)+single >= n:
				t.Errorf("%d transactions for %d deliveries (%d groups, %d alone): nothing was grouped", len(groups)+single, n, len(groups), single)
			case failMany && single != n:
				t.Errorf("%d completed alone after their group failed, want all %d", single, n)
			}
		})
	}
}

func sinkSet(ids []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// TestDispatchOrderedInParallel: an ordered sink with the default concurrency works its keys in
// parallel, never two deliveries of one key at once, and each key in queue order.
func TestDispatchOrderedInParallel(t *testing.T) {
	const n, keys = 240, 12
	e := newDispEnv(t)
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		most     int
		twice    []string
	)
	sink := newDispSink("hook", func(_ context.Context, ev api.Event, _ int) error {
		mu.Lock()
		if inFlight[ev.JobID] {
			twice = append(twice, ev.ID)
		}
		inFlight[ev.JobID] = true
		most = max(most, len(inFlight))
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		delete(inFlight, ev.JobID)
		mu.Unlock()
		return nil
	})
	ids := dispIDs(n, keys)
	e.enqueue("hook", ids...)
	e.run(sinks.DispatcherConfig{Queue: newBatchSpy(e.store, false)}, []sinks.Spec{{Name: "hook", Ordered: true}}, sink)
	testwait.For(t, "every delivery", dispWait, func() bool { return len(sink.done()) == n })
	if len(twice) > 0 {
		t.Errorf("attempted while another of their key was in flight: %v", twice)
	}
	if most < 2 {
		t.Errorf("at most %d keys in flight at once, want parallel keys", most)
	}
	got := map[int][]int{}
	for _, id := range sink.done() {
		var i int
		if _, err := fmt.Sscanf(id, "e%d", &i); err != nil {
			t.Fatalf("event id %q: %v", id, err)
		}
		got[i%keys] = append(got[i%keys], i)
	}
	for k, seq := range got {
		if !slices.IsSorted(seq) || len(seq) != n/keys {
			t.Errorf("key k%d delivered %v, want %d in queue order", k, seq, n/keys)
		}
	}
}
