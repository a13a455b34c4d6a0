package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/store"
)

// The sink queue subtests. Unless a test says otherwise, deliveries are queued at base and due
// at once, and claims lease for a minute.

const sinkLease = time.Minute

func sinkEvent(id, job string) api.Event {
	return api.Event{
		ID: id, Type: "live.transcript", CreatedAt: api.Time{Time: base}, JobID: job, Kind: api.KindLive,
		Category: api.CategoryFinalTranscripts, CustomMetadata: json.RawMessage(`{"team":"a"}`),
		Data: json.RawMessage(`{"text":"hello ` + id + `"}`),
	}
}

// queued is a delivery of event id for sink, ordered by key, queued at base plus offset.
func queued(sink, id, key string, offset time.Duration) store.SinkDelivery {
	return store.SinkDelivery{
		Sink: sink, EventID: id, Event: sinkEvent(id, key), OrderKey: key,
		CreatedAt: base.Add(offset), NextAttempt: base.Add(offset),
	}
}

func enqueue(t *testing.T, s store.Store, ds ...store.SinkDelivery) {
	t.Helper()
	if err := s.EnqueueSinkDeliveries(t.Context(), ds); err != nil {
		t.Fatalf("EnqueueSinkDeliveries: %v", err)
	}
}

func claim(t *testing.T, s store.Store, sink string, ordered bool, now time.Time, limit int) []store.SinkDelivery {
	t.Helper()
	return must(s.ClaimSinkDeliveries(t.Context(), sink, ordered, now, sinkLease, limit))(t, "ClaimSinkDeliveries(%s)", sink)
}

// EventIDs lists the deliveries' event ids in order, for comparing a claim with the events
// expected.
func EventIDs(ds []store.SinkDelivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.EventID
	}
	return out
}

func depth(t *testing.T, s store.Store, sink string) int64 {
	t.Helper()
	return must(s.SinkDepth(t.Context(), sink))(t, "SinkDepth(%s)", sink)
}

func deadLetters(t *testing.T, s store.Store, sink string, since time.Time, limit int) []store.SinkDelivery {
	t.Helper()
	return must(s.DeadLetters(t.Context(), sink, since, limit))(t, "DeadLetters")
}

// checkSinkDelivery compares every field but the id; events compare by their JSON, which is
// what sinks send.
func checkSinkDelivery(t *testing.T, got, want store.SinkDelivery) {
	t.Helper()
	if got.Sink != want.Sink || got.EventID != want.EventID || got.OrderKey != want.OrderKey ||
		got.Attempts != want.Attempts || got.LastError != want.LastError ||
		!got.NextAttempt.Equal(want.NextAttempt) || !got.CreatedAt.Equal(want.CreatedAt) ||
		!got.FailedAt.Equal(want.FailedAt) || got.TraceParent != want.TraceParent || got.TraceState != want.TraceState {
		t.Errorf("sink delivery = %+v\nwant %+v", got, want)
	}
	if g, w := testjson.Marshal(t, got.Event), testjson.Marshal(t, want.Event); string(g) != string(w) {
		t.Errorf("event = %s, want %s", g, w)
	}
}

func testSinkEnqueueFields(t *testing.T, s store.Store) {
	a := queued("hook", "ev-a", "job-1", 0)
	// The trace context of the span that queued it comes back with each claim; b and c have
	// none (tracing off), which comes back empty.
	a.TraceParent, a.TraceState = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=opaque"
	// No EventID: the event's id. No NextAttempt: due when queued.
	b := store.SinkDelivery{Sink: "hook", Event: sinkEvent("ev-b", "job-2"), OrderKey: "job-2", CreatedAt: base.Add(time.Second)}
	// Due later than queued.
	c := queued("hook", "ev-c", "", 2*time.Second)
	c.NextAttempt = base.Add(time.Hour)
	enqueue(t, s, a, b, c)
	if n := depth(t, s, "hook"); n != 3 {
		t.Errorf("depth = %d, want 3", n)
	}

	got := claim(t, s, "hook", false, base.Add(time.Hour), 0)
	if len(got) != 3 {
		t.Fatalf("claimed %v, want 3 deliveries", EventIDs(got))
	}
	b.EventID, b.NextAttempt = "ev-b", b.CreatedAt
	for i, want := range []store.SinkDelivery{a, b, c} {
		checkSinkDelivery(t, got[i], want)
		if got[i].ID <= 0 || (i > 0 && got[i].ID <= got[i-1].ID) {
			t.Errorf("ids = %d, %d: want positive and increasing in queue order", got[max(i-1, 0)].ID, got[i].ID)
		}
	}

	// A delivery with no creation time is queued now and due now.
	before := time.Now()
	enqueue(t, s, store.SinkDelivery{Sink: "hook-now", Event: sinkEvent("ev-now", "")})
	after := time.Now()
	now := claim(t, s, "hook-now", false, after, 0)
	if len(now) != 1 || now[0].EventID != "ev-now" || now[0].CreatedAt.Before(before) ||
		now[0].CreatedAt.After(after) || !now[0].NextAttempt.Equal(now[0].CreatedAt) {
		t.Errorf("delivery without times = %+v, want queued and due between %v and %v", now, before, after)
	}

	for _, bad := range []store.SinkDelivery{
		{Event: sinkEvent("no-sink", "")},
		{Sink: "hook"},
	} {
		if err := s.EnqueueSinkDeliveries(t.Context(), []store.SinkDelivery{queued("hook", "ok", "", 0), bad}); err == nil {
			t.Errorf("EnqueueSinkDeliveries(%+v) succeeded, want an error", bad)
		}
	}
	if n := depth(t, s, "hook"); n != 3 {
		t.Errorf("depth after rejected batches = %d, want 3 (nothing of a failed batch stays)", n)
	}
	if err := s.EnqueueSinkDeliveries(t.Context(), nil); err != nil {
		t.Errorf("EnqueueSinkDeliveries(nil): %v", err)
	}
}

// testSinkEnqueueOnce: a (sink, event) pair is queued once whatever became of the first, in or
// out of Apply, and nothing stays of a rolled back Apply.
func testSinkEnqueueOnce(t *testing.T, s store.Store) {
	enqueue(t, s, queued("hook", "e1", "", 0), queued("hook", "e2", "", 0), queued("hook", "e3", "", 0),
		queued("hook", "e1", "", time.Second)) // in-batch duplicate
	ds := claim(t, s, "hook", false, base, 0)
	if !slices.Equal(EventIDs(ds), []string{"e1", "e2", "e3"}) {
		t.Fatalf("claimed %v, want [e1 e2 e3]", EventIDs(ds))
	}
	if err := s.CompleteSinkDelivery(t.Context(), ds[1].ID); err != nil {
		t.Fatalf("CompleteSinkDelivery: %v", err)
	}
	if err := s.KillSinkDelivery(t.Context(), ds[2].ID, "gone", base); err != nil {
		t.Fatalf("KillSinkDelivery: %v", err)
	}

	res := ingest(t, s, delivery("fanout"), delivery("fanout-rollback"))
	apply(t, s, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		// queued, delivered, dead, and a new one; the same event for another sink is its own.
		return tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{
			queued("hook", "e1", "", 0), queued("hook", "e2", "", 0), queued("hook", "e3", "", 0),
			queued("hook", "e4", "", 0), queued("files", "e1", "", 0),
		})
	})
	boom := errors.New("boom")
	err := s.Apply(t.Context(), res[1].ID, func(ctx context.Context, tx store.Tx) error {
		if err := tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{queued("hook", "e5", "", 0)}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Apply = %v, want boom", err)
	}

	// e1 is still leased from the first claim; once its lease ends it is the only old one.
	later := base.Add(2 * sinkLease)
	if got := EventIDs(claim(t, s, "hook", false, later, 0)); !slices.Equal(got, []string{"e1", "e4"}) {
		t.Errorf("hook claims %v, want [e1 e4] (no second e1, e2 or e3, no rolled back e5)", got)
	}
	if got := EventIDs(claim(t, s, "files", false, later, 0)); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("files claims %v, want [e1]", got)
	}
	if n := depth(t, s, "hook"); n != 2 {
		t.Errorf("hook depth = %d, want 2", n)
	}
	if dead := deadLetters(t, s, "", time.Time{}, 0); len(dead) != 1 || dead[0].EventID != "e3" {
		t.Errorf("dead letters = %v, want [e3] only", EventIDs(dead))
	}

	// An event id stands for one event, stored once: every sink gets the first one queued under
	// it, in the same batch or a later one.
	first, other := queued("one-a", "same", "job-1", 0), queued("one-b", "same", "job-1", 0)
	other.Event.Data = json.RawMessage(`{"text":"another"}`)
	again := queued("one-c", "same", "job-1", 0)
	again.Event.Type = "changed"
	enqueue(t, s, first, other)
	enqueue(t, s, again)
	for _, sink := range []string{"one-a", "one-b", "one-c"} {
		got := claim(t, s, sink, false, base, 0)
		if len(got) != 1 {
			t.Fatalf("%s claims %v, want [same]", sink, EventIDs(got))
		}
		want := first
		want.Sink = sink
		checkSinkDelivery(t, got[0], want)
	}
}

func testSinkClaimDue(t *testing.T, s store.Store) {
	// Queue order: d1..d5. Due times: d1 +3s, d2 +1s, d3 +1s, d4 +10s, d5 +1s.
	var ds []store.SinkDelivery
	for i, due := range []time.Duration{3, 1, 1, 10, 1} {
		d := queued("hook", fmt.Sprint("d", i+1), "", 0)
		d.NextAttempt = base.Add(due * time.Second)
		ds = append(ds, d)
	}
	enqueue(t, s, ds...)
	enqueue(t, s, queued("other", "x1", "", 0))

	if got := claim(t, s, "hook", false, base, 0); len(got) != 0 {
		t.Errorf("claim before anything is due = %v", EventIDs(got))
	}
	// Longest due first, then queue order; the limit takes the first ones.
	now := base.Add(5 * time.Second)
	if got := EventIDs(claim(t, s, "hook", false, now, 2)); !slices.Equal(got, []string{"d2", "d3"}) {
		t.Errorf("first claim = %v, want [d2 d3]", got)
	}
	if got := EventIDs(claim(t, s, "hook", false, now, 0)); !slices.Equal(got, []string{"d5", "d1"}) {
		t.Errorf("second claim = %v, want [d5 d1] (leased ones skipped, d4 not due)", got)
	}
	if got := claim(t, s, "hook", false, now, 0); len(got) != 0 {
		t.Errorf("third claim = %v, want nothing", EventIDs(got))
	}
	// Exactly at the due time is due.
	if got := EventIDs(claim(t, s, "hook", false, base.Add(10*time.Second), 0)); !slices.Equal(got, []string{"d4"}) {
		t.Errorf("claim at d4's due time = %v, want [d4]", got)
	}
	if n := depth(t, s, "hook"); n != 5 {
		t.Errorf("depth = %d, want 5 (leased deliveries are still queued)", n)
	}
	if n := depth(t, s, "other"); n != 1 {
		t.Errorf("other depth = %d, want 1", n)
	}
	if n := depth(t, s, "nobody"); n != 0 {
		t.Errorf("unknown sink depth = %d", n)
	}
}

func testSinkLeaseExpiry(t *testing.T, s store.Store) {
	enqueue(t, s, queued("hook", "e1", "", 0))
	first := claim(t, s, "hook", false, base, 1)
	if len(first) != 1 {
		t.Fatalf("claim = %v", EventIDs(first))
	}
	// The lease covers [base, base+lease]; it ends after that.
	for _, at := range []time.Duration{0, sinkLease / 2, sinkLease} {
		if got := claim(t, s, "hook", false, base.Add(at), 0); len(got) != 0 {
			t.Errorf("claimed at +%s, inside the lease: %v", at, EventIDs(got))
		}
	}
	again := claim(t, s, "hook", false, base.Add(sinkLease+time.Microsecond), 0)
	if len(again) != 1 || again[0].ID != first[0].ID || again[0].Attempts != 0 {
		t.Fatalf("claim after the lease = %+v, want the same delivery, attempts 0", again)
	}
	// The new lease runs from the new claim.
	if got := claim(t, s, "hook", false, base.Add(sinkLease+sinkLease/2), 0); len(got) != 0 {
		t.Errorf("claimed inside the second lease: %v", EventIDs(got))
	}
	// Retry releases the lease: due again at its next attempt, even inside the old lease.
	if err := s.RetrySinkDelivery(t.Context(), first[0].ID, base.Add(sinkLease+2*time.Second), "timeout"); err != nil {
		t.Fatalf("RetrySinkDelivery: %v", err)
	}
	got := claim(t, s, "hook", false, base.Add(sinkLease+2*time.Second), 0)
	if len(got) != 1 || got[0].Attempts != 1 || got[0].LastError != "timeout" {
		t.Errorf("claim after retry = %+v, want attempts 1, last error timeout", got)
	}
}

func testSinkClaimOrdered(t *testing.T, s store.Store) {
	// a1 a2 a3 of job-a, b1 b2 of job-b, n1 n2 without a key, interleaved in queue order.
	var ds []store.SinkDelivery
	for i, ev := range [][2]string{{"a1", "job-a"}, {"b1", "job-b"}, {"a2", "job-a"}, {"n1", ""}, {"a3", "job-a"},
		{"b2", "job-b"}, {"n2", ""}} {
		ds = append(ds, queued("hook", ev[0], ev[1], time.Duration(i)*time.Millisecond))
	}
	// The same keys on another sink do not hold "hook" back.
	enqueue(t, s, queued("other", "o1", "job-a", 0))
	enqueue(t, s, ds...)
	now := base.Add(time.Second)
	ids := map[string]int64{}

	heads := claim(t, s, "hook", true, now, 0)
	if !slices.Equal(EventIDs(heads), []string{"a1", "b1", "n1", "n2"}) {
		t.Fatalf("ordered claim = %v, want [a1 b1 n1 n2]", EventIDs(heads))
	}
	for _, d := range heads {
		ids[d.EventID] = d.ID
	}
	// Heads in flight hold their keys.
	if got := claim(t, s, "hook", true, now, 0); len(got) != 0 {
		t.Errorf("claim while heads are leased = %v, want nothing", EventIDs(got))
	}
	// a1 fails and waits for a retry: a2 still waits for it.
	if err := s.RetrySinkDelivery(t.Context(), ids["a1"], now.Add(time.Minute), "503"); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteSinkDelivery(t.Context(), ids["b1"]); err != nil {
		t.Fatal(err)
	}
	b2 := claim(t, s, "hook", true, now, 0)
	if !slices.Equal(EventIDs(b2), []string{"b2"}) {
		t.Fatalf("claim while a1 waits for its retry = %v, want [b2]", EventIDs(b2))
	}
	ids["b2"] = b2[0].ID
	// a1's lease ending does not free a2 either: a1 is still queued.
	if got := EventIDs(claim(t, s, "hook", true, now.Add(time.Minute), 0)); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("claim at a1's retry = %v, want [a1]", got)
	}
	// A dead letter no longer holds its key.
	if err := s.KillSinkDelivery(t.Context(), ids["a1"], "410", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a2 := claim(t, s, "hook", true, now.Add(time.Minute), 0)
	if !slices.Equal(EventIDs(a2), []string{"a2"}) {
		t.Fatalf("claim after a1 died = %v, want [a2]", EventIDs(a2))
	}
	if err := s.CompleteSinkDelivery(t.Context(), a2[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := EventIDs(claim(t, s, "hook", true, now.Add(time.Minute), 0)); !slices.Equal(got, []string{"a3"}) {
		t.Errorf("claim after a2 = %v, want [a3]", got)
	}
	for _, ev := range []string{"b2", "n1", "n2"} {
		if err := s.CompleteSinkDelivery(t.Context(), ids[ev]); err != nil {
			t.Fatal(err)
		}
	}
	// Replaying a1 makes it the head of job-a again, ahead of anything queued after it.
	if err := s.ReplayDeadLetter(t.Context(), ids["a1"], now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, queued("hook", "a4", "job-a", 3*time.Minute))
	if got := EventIDs(claim(t, s, "hook", true, now.Add(5*time.Minute), 0)); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("claim after replaying a1 = %v, want [a1] (a3, its lease over, and a4 now wait behind a1)", got)
	}
	if got := EventIDs(claim(t, s, "other", true, now, 0)); !slices.Equal(got, []string{"o1"}) {
		t.Errorf("other sink = %v, want [o1]", got)
	}
}

// testSinkClaimUnordered: without ordering, a key's later deliveries do not wait.
func testSinkClaimUnordered(t *testing.T, s store.Store) {
	enqueue(t, s, queued("hook", "a1", "job-a", 0), queued("hook", "a2", "job-a", 0))
	first := claim(t, s, "hook", false, base, 1)
	if err := s.RetrySinkDelivery(t.Context(), first[0].ID, base.Add(time.Hour), "503"); err != nil {
		t.Fatal(err)
	}
	if got := EventIDs(claim(t, s, "hook", false, base, 0)); !slices.Equal(got, []string{"a2"}) {
		t.Errorf("unordered claim = %v, want [a2]", got)
	}
}

func testSinkRetry(t *testing.T, s store.Store) {
	enqueue(t, s, queued("hook", "e1", "job-1", 0))
	d := claim(t, s, "hook", false, base, 0)[0]
	for i, wait := range []time.Duration{5 * time.Second, 5 * time.Minute} {
		at := base.Add(time.Duration(i) * time.Hour)
		if err := s.RetrySinkDelivery(t.Context(), d.ID, at.Add(wait), fmt.Sprint("503 #", i+1)); err != nil {
			t.Fatalf("RetrySinkDelivery: %v", err)
		}
		if got := claim(t, s, "hook", false, at.Add(wait-time.Microsecond), 0); len(got) != 0 {
			t.Errorf("claimed before the next attempt: %v", EventIDs(got))
		}
		got := claim(t, s, "hook", false, at.Add(wait), 0)
		if len(got) != 1 {
			t.Fatalf("claim at the next attempt = %v", EventIDs(got))
		}
		want := queued("hook", "e1", "job-1", 0)
		want.Attempts, want.NextAttempt, want.LastError = i+1, at.Add(wait), fmt.Sprint("503 #", i+1)
		checkSinkDelivery(t, got[0], want)
	}
	if err := s.RetrySinkDelivery(t.Context(), 999999, base, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RetrySinkDelivery(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.CompleteSinkDelivery(t.Context(), d.ID); err != nil {
		t.Fatal(err)
	}
	// A late failure of an attempt that overran its lease must not undo a delivery.
	if err := s.RetrySinkDelivery(t.Context(), d.ID, base, "late"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RetrySinkDelivery(delivered) = %v, want ErrNotFound", err)
	}
	if err := s.KillSinkDelivery(t.Context(), d.ID, "late", base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KillSinkDelivery(delivered) = %v, want ErrNotFound", err)
	}
	if got := claim(t, s, "hook", false, base.Add(24*time.Hour), 0); len(got) != 0 {
		t.Errorf("delivered delivery claimed again: %v", EventIDs(got))
	}
	if n := depth(t, s, "hook"); n != 0 {
		t.Errorf("depth = %d, want 0", n)
	}
}

func testSinkComplete(t *testing.T, s store.Store) {
	enqueue(t, s, queued("hook", "e1", "", 0), queued("hook", "e2", "", 0))
	ds := claim(t, s, "hook", false, base, 0)
	for range 2 { // completing twice is a no-op
		if err := s.CompleteSinkDelivery(t.Context(), ds[0].ID); err != nil {
			t.Fatalf("CompleteSinkDelivery: %v", err)
		}
	}
	if n := depth(t, s, "hook"); n != 1 {
		t.Errorf("depth = %d, want 1", n)
	}
	// An attempt that overran its lease and succeeded after another attempt gave up: the event
	// was delivered, so it leaves the dead letters.
	if err := s.KillSinkDelivery(t.Context(), ds[1].ID, "timeout", base); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteSinkDelivery(t.Context(), ds[1].ID); err != nil {
		t.Fatal(err)
	}
	if dead := deadLetters(t, s, "", time.Time{}, 0); len(dead) != 0 {
		t.Errorf("dead letters = %v, want none", EventIDs(dead))
	}
	if err := s.ReplayDeadLetter(t.Context(), ds[1].ID, base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ReplayDeadLetter(delivered) = %v, want ErrNotFound", err)
	}
	if err := s.CompleteSinkDelivery(t.Context(), 999999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CompleteSinkDelivery(unknown) = %v, want ErrNotFound", err)
	}
	testSinkCompleteMany(t, s)
}

// testSinkCompleteMany: several deliveries completed in one call, all or nothing.
func testSinkCompleteMany(t *testing.T, s store.Store) {
	enqueue(t, s, queued("many", "m1", "a", 0), queued("many", "m2", "a", 0), queued("many", "m3", "b", 0),
		queued("many", "m4", "b", 0))
	ds := claim(t, s, "many", false, base, 0)
	if len(ds) != 4 {
		t.Fatalf("claimed %v, want m1..m4", EventIDs(ds))
	}
	if err := s.CompleteSinkDeliveries(t.Context(), nil); err != nil {
		t.Errorf("CompleteSinkDeliveries(none) = %v", err)
	}
	// One unknown id and nothing is completed.
	if err := s.CompleteSinkDeliveries(t.Context(), []int64{ds[0].ID, 999999}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CompleteSinkDeliveries(known, unknown) = %v, want ErrNotFound", err)
	}
	if n := depth(t, s, "many"); n != 4 {
		t.Errorf("depth after a refused group = %d, want 4", n)
	}
	// m1 dead-lettered meanwhile: completing it takes it out of the dead letters, as one at a
	// time does; m2 twice in the group is a no-op the second time.
	if err := s.KillSinkDelivery(t.Context(), ds[0].ID, "timeout", base); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteSinkDeliveries(t.Context(), []int64{ds[0].ID, ds[1].ID, ds[2].ID, ds[1].ID}); err != nil {
		t.Fatalf("CompleteSinkDeliveries: %v", err)
	}
	if n := depth(t, s, "many"); n != 1 {
		t.Errorf("depth = %d, want 1 (m4)", n)
	}
	if dead := deadLetters(t, s, "many", time.Time{}, 0); len(dead) != 0 {
		t.Errorf("dead letters = %v, want none", EventIDs(dead))
	}
	// The ordered head of key a moved on: nothing of a is left; b's next is m4.
	if got := EventIDs(claim(t, s, "many", true, base.Add(2*sinkLease), 0)); !slices.Equal(got, []string{"m4"}) {
		t.Errorf("ordered claim after the group = %v, want [m4]", got)
	}

	// Complete and claim in one: the claim sees the completion, so key c's next is eligible.
	enqueue(t, s, queued("both", "c1", "c", 0), queued("both", "c2", "c", 0), queued("both", "c3", "c", 0))
	heads := claim(t, s, "both", true, base, 0)
	if got := EventIDs(heads); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("ordered claim = %v, want [c1]", got)
	}
	if _, err := s.CompleteAndClaimSinkDeliveries(t.Context(), []int64{heads[0].ID, 999999}, "both", true, base, sinkLease, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CompleteAndClaimSinkDeliveries(unknown) = %v, want ErrNotFound", err)
	}
	if n := depth(t, s, "both"); n != 3 {
		t.Errorf("depth after a refused complete-and-claim = %d, want 3", n)
	}
	next, err := s.CompleteAndClaimSinkDeliveries(t.Context(), []int64{heads[0].ID}, "both", true, base, sinkLease, 5)
	if err != nil {
		t.Fatalf("CompleteAndClaimSinkDeliveries: %v", err)
	}
	if got := EventIDs(next); !slices.Equal(got, []string{"c2"}) {
		t.Errorf("claimed with c1's completion = %v, want [c2]", got)
	}
	if got := claim(t, s, "both", false, base, 0); len(got) != 1 || got[0].EventID != "c3" {
		t.Errorf("unordered claim after = %v, want [c3] (c2 leased)", EventIDs(got))
	}
	if next, err := s.CompleteAndClaimSinkDeliveries(t.Context(), nil, "both", false, base, sinkLease, 1); err != nil || len(next) != 0 {
		t.Errorf("CompleteAndClaimSinkDeliveries(nothing due) = %v, %v; want none", EventIDs(next), err)
	}
}

// testSinkQueues: a store that lists its sink queues (store.SinkQueues) counts each sink's
// queued deliveries, not the delivered nor the dead ones, and leaves out a sink with none.
func testSinkQueues(t *testing.T, s store.Store) {
	sq, ok := s.(store.SinkQueues)
	if !ok {
		t.Skip("the store does not list its sink queues")
	}
	enqueue(t, s, queued("hook", "h1", "job-1", 0), queued("hook", "h2", "job-2", 0), queued("hook", "h3", "job-3", 0),
		queued("files", "f1", "job-1", 0), queued("gone", "g1", "job-1", 0))
	ids := map[string]int64{}
	for _, sink := range []string{"hook", "gone"} {
		for _, d := range claim(t, s, sink, false, base, 0) {
			ids[d.EventID] = d.ID
		}
	}
	if err := s.CompleteSinkDelivery(t.Context(), ids["h1"]); err != nil {
		t.Fatal(err)
	}
	if err := s.KillSinkDelivery(t.Context(), ids["g1"], "410 Gone", base); err != nil {
		t.Fatal(err)
	}
	got, err := sq.SinkQueues(t.Context())
	if want := map[string]int64{"hook": 2, "files": 1}; err != nil || !maps.Equal(got, want) {
		t.Errorf("SinkQueues = %v, %v; want %v", got, err, want)
	}
}

func testSinkDeadLetters(t *testing.T, s store.Store) {
	enqueue(t, s, queued("hook", "h1", "job-1", 0), queued("hook", "h2", "job-2", 0),
		queued("files", "f1", "job-1", 0), queued("hook", "h3", "job-3", 0))
	ids := map[string]int64{}
	for _, sink := range []string{"hook", "files"} {
		for _, d := range claim(t, s, sink, false, base, 0) {
			ids[d.EventID] = d.ID
		}
	}
	// h1 failed once before dying; h2 and f1 die at the same instant.
	if err := s.RetrySinkDelivery(t.Context(), ids["h1"], base, "503"); err != nil {
		t.Fatal(err)
	}
	kills := []struct {
		ev  string
		at  time.Duration
		msg string
	}{{"h1", time.Second, "500 after 8 attempts"}, {"h2", 2 * time.Second, "400 bad body"}, {"f1", 2 * time.Second, "disk full"}}
	for _, k := range kills {
		if err := s.KillSinkDelivery(t.Context(), ids[k.ev], k.msg, base.Add(k.at)); err != nil {
			t.Fatalf("KillSinkDelivery(%s): %v", k.ev, err)
		}
	}
	all := deadLetters(t, s, "", time.Time{}, 0)
	if !slices.Equal(EventIDs(all), []string{"f1", "h2", "h1"}) {
		t.Fatalf("dead letters = %v, want [f1 h2 h1] (newest first, then newest id)", EventIDs(all))
	}
	want := queued("hook", "h1", "job-1", 0)
	want.Attempts, want.LastError, want.FailedAt, want.NextAttempt = 2, "500 after 8 attempts", base.Add(time.Second), base
	checkSinkDelivery(t, all[2], want)
	if all[2].ID != ids["h1"] {
		t.Errorf("dead letter id = %d, want %d", all[2].ID, ids["h1"])
	}
	want = queued("hook", "h2", "job-2", 0)
	want.Attempts, want.LastError, want.FailedAt = 1, "400 bad body", base.Add(2*time.Second)
	checkSinkDelivery(t, all[1], want)

	if got := EventIDs(deadLetters(t, s, "hook", time.Time{}, 0)); !slices.Equal(got, []string{"h2", "h1"}) {
		t.Errorf("hook dead letters = %v, want [h2 h1]", got)
	}
	// since is inclusive.
	if got := EventIDs(deadLetters(t, s, "", base.Add(2*time.Second), 0)); !slices.Equal(got, []string{"f1", "h2"}) {
		t.Errorf("dead letters since +2s = %v, want [f1 h2]", got)
	}
	if got := EventIDs(deadLetters(t, s, "hook", base.Add(time.Second+time.Microsecond), 0)); !slices.Equal(got, []string{"h2"}) {
		t.Errorf("hook dead letters since +1.000001s = %v, want [h2]", got)
	}
	if got := EventIDs(deadLetters(t, s, "", time.Time{}, 2)); !slices.Equal(got, []string{"f1", "h2"}) {
		t.Errorf("dead letters limit 2 = %v, want [f1 h2]", got)
	}
	if got := deadLetters(t, s, "nobody", time.Time{}, 0); len(got) != 0 {
		t.Errorf("unknown sink dead letters = %v", EventIDs(got))
	}
	if err := s.KillSinkDelivery(t.Context(), ids["h1"], "again", base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("KillSinkDelivery(dead) = %v, want ErrNotFound", err)
	}
	if n := depth(t, s, "hook"); n != 1 {
		t.Errorf("hook depth = %d, want 1 (dead letters are not queued)", n)
	}
	// Dead letters are never claimed.
	if got := EventIDs(claim(t, s, "hook", false, base.Add(24*time.Hour), 0)); !slices.Equal(got, []string{"h3"}) {
		t.Errorf("claim = %v, want [h3]", got)
	}
}

func testSinkReplay(t *testing.T, s store.Store) {
	enqueue(t, s, queued("hook", "e1", "job-1", 0), queued("hook", "e2", "job-1", 0))
	ds := claim(t, s, "hook", false, base, 0)
	if err := s.RetrySinkDelivery(t.Context(), ds[0].ID, base, "503"); err != nil {
		t.Fatal(err)
	}
	if err := s.KillSinkDelivery(t.Context(), ds[0].ID, "500", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Only dead letters replay.
	if err := s.ReplayDeadLetter(t.Context(), ds[1].ID, base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ReplayDeadLetter(queued) = %v, want ErrNotFound", err)
	}
	if err := s.CompleteSinkDelivery(t.Context(), ds[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.ReplayDeadLetter(t.Context(), 999999, base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ReplayDeadLetter(unknown) = %v, want ErrNotFound", err)
	}
	replayAt := base.Add(2 * time.Hour)
	if err := s.ReplayDeadLetter(t.Context(), ds[0].ID, replayAt); err != nil {
		t.Fatalf("ReplayDeadLetter: %v", err)
	}
	if err := s.ReplayDeadLetter(t.Context(), ds[0].ID, replayAt); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second ReplayDeadLetter = %v, want ErrNotFound (no longer dead)", err)
	}
	if dead := deadLetters(t, s, "", time.Time{}, 0); len(dead) != 0 {
		t.Errorf("dead letters after replay = %v", EventIDs(dead))
	}
	if n := depth(t, s, "hook"); n != 1 {
		t.Errorf("depth = %d, want 1", n)
	}
	if got := claim(t, s, "hook", false, replayAt.Add(-time.Microsecond), 0); len(got) != 0 {
		t.Errorf("replayed delivery due before the replay: %v", EventIDs(got))
	}
	// Due at the replay, attempts reset, no failure time; the last error stays for the record.
	got := claim(t, s, "hook", false, replayAt, 0)
	want := queued("hook", "e1", "job-1", 0)
	want.NextAttempt, want.LastError = replayAt, "500"
	if len(got) != 1 {
		t.Fatalf("claim after replay = %v, want [e1]", EventIDs(got))
	}
	checkSinkDelivery(t, got[0], want)
	if err := s.CompleteSinkDelivery(t.Context(), got[0].ID); err != nil {
		t.Fatal(err)
	}
}

// testSinkClaimConcurrent: claimers racing on one sink never get the same delivery, and
// between them they get every one.
func testSinkClaimConcurrent(t *testing.T, s store.Store) {
	const n, claimers = 300, 8
	var ds []store.SinkDelivery
	for i := range n {
		ds = append(ds, queued("hook", fmt.Sprint("e", i), fmt.Sprint("job-", i%5), 0))
	}
	enqueue(t, s, ds...)
	claim := func() ([]store.SinkDelivery, error) {
		return s.ClaimSinkDeliveries(context.Background(), "hook", false, base, sinkLease, 7)
	}
	if got := ClaimAll(t, slices.Repeat([]func() ([]store.SinkDelivery, error){claim}, claimers)...); got != n {
		t.Errorf("%d deliveries claimed, want %d", got, n)
	}
}

// ClaimAll runs the claimers at once, each until a claim of its comes back empty, fails t when
// two of them get the same delivery, and returns how many deliveries they got in all. A claimer
// that settles what it claims (completes it) does so before it returns.
func ClaimAll(t *testing.T, claimers ...func() ([]store.SinkDelivery, error)) int {
	var mu sync.Mutex
	owner := map[int64]int{}
	var wg sync.WaitGroup
	for c, claim := range claimers {
		wg.Go(func() {
			for {
				got, err := claim()
				if err != nil {
					t.Errorf("claimer %d: %v", c, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					if prev, ok := owner[d.ID]; ok {
						t.Errorf("delivery %d claimed by %d and %d", d.ID, prev, c)
					}
					owner[d.ID] = c
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return len(owner)
}

// testReleaseSinkLeases: after ReleaseSinkLeases a store that releases makes a claimed
// delivery claimable again at once, its attempts, due time and error unchanged, and leaves
// delivered and dead deliveries alone; a store that does not release changes nothing.
func testReleaseSinkLeases(t *testing.T, s store.Store, releases bool) {
	ctx := t.Context()
	enqueue(t, s, queued("hook", "a", "job-1", 0), queued("hook", "b", "job-2", 0),
		queued("files", "c", "job-1", 0), queued("hook", "done", "job-3", 0), queued("hook", "dead", "job-4", 0),
		queued("hook", "free", "job-5", 0), queued("other", "idle", "job-6", 0))
	// "idle" is queued but never claimed: it holds no lease, so a release must not count it.
	// "a" failed once before this claim: its attempt count and error must survive the release.
	first := claim(t, s, "hook", false, base, 0)
	byID := map[string]store.SinkDelivery{}
	for _, d := range first {
		byID[d.EventID] = d
	}
	if err := s.RetrySinkDelivery(ctx, byID["a"].ID, base, "timeout"); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteSinkDelivery(ctx, byID["done"].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.KillSinkDelivery(ctx, byID["dead"].ID, "gone", base); err != nil {
		t.Fatal(err)
	}
	if err := s.RetrySinkDelivery(ctx, byID["free"].ID, base, "timeout"); err != nil {
		t.Fatal(err)
	}
	// Claimed again after their retries: a and free. Leased now: a, b, free, and c (files).
	if got := EventIDs(claim(t, s, "hook", false, base, 0)); !slices.Equal(got, []string{"a", "free"}) {
		t.Fatalf("second claim = %v, want [a free]", got)
	}
	if got := EventIDs(claim(t, s, "files", false, base, 0)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("claim of files = %v, want [c]", got)
	}

	n, err := s.ReleaseSinkLeases(ctx)
	if err != nil {
		t.Fatalf("ReleaseSinkLeases: %v", err)
	}
	inLease := base.Add(sinkLease / 2)
	if !releases {
		if n != 0 {
			t.Errorf("ReleaseSinkLeases = %d, want 0 (a store shared by replicas releases nothing)", n)
		}
		if got := claim(t, s, "hook", false, inLease, 0); len(got) != 0 {
			t.Errorf("claimed inside the leases after a no-op release: %v", EventIDs(got))
		}
		return
	}
	if n != 4 {
		t.Errorf("ReleaseSinkLeases = %d, want 4 (a, b, free on hook, c on files)", n)
	}
	got := claim(t, s, "hook", false, inLease, 0)
	if ids := EventIDs(got); !slices.Equal(ids, []string{"a", "b", "free"}) {
		t.Fatalf("claim inside the old leases after the release = %v, want [a b free]", ids)
	}
	for _, d := range got {
		want := queued("hook", d.EventID, d.OrderKey, 0)
		if d.EventID == "a" || d.EventID == "free" {
			want.Attempts, want.LastError = 1, "timeout"
		}
		checkSinkDelivery(t, d, want)
	}
	if got := EventIDs(claim(t, s, "files", false, inLease, 0)); !slices.Equal(got, []string{"c"}) {
		t.Errorf("claim of files after the release = %v, want [c]", got)
	}
	if dl := deadLetters(t, s, "hook", time.Time{}, 0); len(dl) != 1 || dl[0].EventID != "dead" {
		t.Errorf("dead letters after the release = %v, want [dead]", EventIDs(dl))
	}
	if n := depth(t, s, "hook"); n != 3 {
		t.Errorf("depth of hook = %d, want 3 (done stays delivered, dead stays dead)", n)
	}
	// A release counts the leases it finds: those of the claims just made.
	if n, err := s.ReleaseSinkLeases(ctx); err != nil || n != 4 {
		t.Errorf("second ReleaseSinkLeases = %d, %v; want 4 (the claims just made)", n, err)
	}
}
