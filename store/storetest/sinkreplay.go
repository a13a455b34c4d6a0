package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The cases of store.SinkReplay: a window queued again for a sink, a backfill of a sink added
// later, and a sink's history.

func replayer(t *testing.T, s store.Store) store.SinkReplay {
	t.Helper()
	r, ok := s.(store.SinkReplay)
	if !ok {
		t.Fatalf("%T does not implement store.SinkReplay", s)
	}
	return r
}

// typed is queued with an event of type typ.
func typed(sink, id, key, typ string, offset time.Duration) store.SinkDelivery {
	d := queued(sink, id, key, offset)
	d.Event.Type = typ
	return d
}

func replaySink(t *testing.T, s store.Store, r store.SinkReplayRequest) store.SinkReplayResult {
	t.Helper()
	return must(replayer(t, s).ReplaySink(t.Context(), r))(t, "ReplaySink(%s)", r.Sink)
}

func checkReplay(t *testing.T, what string, got store.SinkReplayResult, requeued, backfilled, already []string, skipped int) {
	t.Helper()
	if !slices.Equal(got.Requeued, requeued) || !slices.Equal(got.Backfilled, backfilled) ||
		!slices.Equal(got.AlreadyQueued, already) || got.Skipped != skipped {
		t.Errorf("%s: requeued %v, backfilled %v, already queued %v, skipped %d; want %v, %v, %v, %d", what,
			got.Requeued, got.Backfilled, got.AlreadyQueued, got.Skipped, requeued, backfilled, already, skipped)
	}
}

func ofType(typ string) func(*api.Event) bool {
	return func(e *api.Event) bool { return e.Type == typ }
}

// testSinkReplayWindow: a sink's delivered and dead deliveries of the window go back to
// queued (attempts reset, due at the replay, under their event ids), a queued one is left
// alone, Until and Match bound the window, a dry run writes nothing, and a replay twice is
// the first one.
func testSinkReplayWindow(t *testing.T, s store.Store) {
	enqueue(t, s,
		queued("hook", "e1", "job-1", 0),
		typed("hook", "e2", "job-2", "job.succeeded", time.Minute),
		queued("hook", "e3", "job-3", 2*time.Minute),
		queued("other", "e4", "job-4", 3*time.Minute))
	ds := claim(t, s, "hook", false, base.Add(10*time.Minute), 0)
	if got := EventIDs(ds); !slices.Equal(got, []string{"e1", "e2", "e3"}) {
		t.Fatalf("claimed %v", got)
	}
	if err := s.CompleteSinkDelivery(t.Context(), ds[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.KillSinkDelivery(t.Context(), ds[1].ID, "500", base.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	now := base.Add(time.Hour)
	if _, err := replayer(t, s).ReplaySink(t.Context(), store.SinkReplayRequest{Sink: "hook", Since: now, Until: base}); err == nil {
		t.Error("ReplaySink with until before since: no error")
	}

	checkReplay(t, "dry run", replaySink(t, s, store.SinkReplayRequest{Sink: "hook", Since: base, Now: now, DryRun: true}),
		[]string{"e1", "e2"}, nil, []string{"e3"}, 1)
	if n := depth(t, s, "hook"); n != 1 {
		t.Errorf("depth after a dry run = %d, want 1", n)
	}
	checkReplay(t, "until e2", replaySink(t, s, store.SinkReplayRequest{Sink: "hook", Since: base, Until: base.Add(time.Minute), Now: now}),
		[]string{"e1"}, nil, nil, 0)
	checkReplay(t, "job.succeeded", replaySink(t, s, store.SinkReplayRequest{Sink: "hook", Since: base, Match: ofType("job.succeeded"), Now: now}),
		[]string{"e2"}, nil, nil, 3)
	checkReplay(t, "again", replaySink(t, s, store.SinkReplayRequest{Sink: "hook", Since: base, Now: now}),
		nil, nil, []string{"e1", "e2", "e3"}, 1)
	if n := depth(t, s, "hook"); n != 3 {
		t.Errorf("depth after the replays = %d, want 3", n)
	}
	if dead := deadLetters(t, s, "hook", time.Time{}, 0); len(dead) != 0 {
		t.Errorf("dead letters after the replay: %v", EventIDs(dead))
	}
	if got := claim(t, s, "hook", false, now.Add(-time.Microsecond), 0); !slices.Equal(EventIDs(got), []string{"e3"}) {
		t.Errorf("claimed before the replay's time: %v, want [e3] (its lease ended)", EventIDs(got))
	}
	got := claim(t, s, "hook", false, now, 0)
	if !slices.Equal(EventIDs(got), []string{"e1", "e2"}) {
		t.Fatalf("claimed at the replay's time: %v, want [e1 e2]", EventIDs(got))
	}
	want := queued("hook", "e1", "job-1", 0)
	want.NextAttempt = now
	checkSinkDelivery(t, got[0], want)
	want = typed("hook", "e2", "job-2", "job.succeeded", time.Minute)
	want.NextAttempt, want.LastError = now, "500"
	checkSinkDelivery(t, got[1], want)
	if other := depth(t, s, "other"); other != 1 {
		t.Errorf("depth of the other sink = %d, want 1", other)
	}
}

// testSinkReplayBackfill: a sink without deliveries is queued the window's events that its
// filter takes, with their events and order keys, once; the window is the events' first queue
// time, which the backfill does not move.
func testSinkReplayBackfill(t *testing.T, s store.Store) {
	enqueue(t, s,
		queued("a", "e1", "job-1", 0),
		typed("a", "e2", "job-2", "job.succeeded", time.Minute),
		queued("a", "e3", "job-3", 2*time.Minute),
		queued("b", "e3", "job-3", 2*time.Minute))
	now := base.Add(time.Hour)
	r := store.SinkReplayRequest{Sink: "new", Since: base.Add(-time.Hour), Backfill: ofType("live.transcript"), Now: now}
	dry := r
	dry.DryRun = true
	checkReplay(t, "dry run", replaySink(t, s, dry), nil, []string{"e1", "e3"}, nil, 1)
	if n := depth(t, s, "new"); n != 0 {
		t.Errorf("depth after a dry run = %d", n)
	}
	checkReplay(t, "backfill", replaySink(t, s, r), nil, []string{"e1", "e3"}, nil, 1)
	checkReplay(t, "backfill again", replaySink(t, s, r), nil, nil, []string{"e1", "e3"}, 1)
	// Without Backfill a sink's missing events are not queued.
	checkReplay(t, "replay of a sink without deliveries", replaySink(t, s, store.SinkReplayRequest{Sink: "none", Since: base, Now: now}),
		nil, nil, nil, 3)
	got := claim(t, s, "new", false, now, 0)
	if !slices.Equal(EventIDs(got), []string{"e1", "e3"}) {
		t.Fatalf("claimed %v, want [e1 e3]", EventIDs(got))
	}
	for i, id := range []string{"e1", "e3"} {
		want := queued("new", id, "job-"+id[1:], 0)
		want.CreatedAt, want.NextAttempt = now, now
		checkSinkDelivery(t, got[i], want)
	}
	// The events were first queued at base..base+2m: the backfill at base+1h moved none.
	checkReplay(t, "window after the backfill", replaySink(t, s, store.SinkReplayRequest{Sink: "a", Since: base.Add(30 * time.Minute), Now: now}),
		nil, nil, nil, 0)
	checkReplay(t, "window of e3", replaySink(t, s, store.SinkReplayRequest{Sink: "a", Since: base.Add(90 * time.Second), Now: now}),
		nil, nil, []string{"e3"}, 0)
}

// testSinkReplayDataFromInbox: an event stored by reference to its inbox row (a live message)
// is matched and backfilled with its data, the message byte for byte.
func testSinkReplayDataFromInbox(t *testing.T, s store.Store) {
	payload := "{\"type\":\"transcript\", \"data\":{\"utterance\":{\"text\":\"a < b\"}}}"
	res := ingest(t, s, locatedDelivery("ev-in", "s-r", api.MessageTranscript, api.CategoryFinalTranscripts, payload, base))
	row := inboxRow(t, s, res[0].ID)
	data, _ := row.Message.Of(row.Body)
	ev := api.Event{ID: "ev-ref", Type: "live.transcript", CreatedAt: api.NewTime(base), JobID: "s-r", Kind: api.KindLive,
		Category: api.CategoryFinalTranscripts, Data: data}
	apply(t, s, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		if err := tx.AppendReceivedMessages(ctx, []int64{res[0].ID}); err != nil {
			return err
		}
		return tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "a", Event: ev, OrderKey: "s-r", CreatedAt: base, DataFrom: res[0].ID}})
	})
	var seen string
	r := store.SinkReplayRequest{Sink: "late", Since: base, Now: base.Add(time.Hour),
		Backfill: func(e *api.Event) bool { seen = string(e.Data); return true }}
	checkReplay(t, "backfill", replaySink(t, s, r), nil, []string{"ev-ref"}, nil, 0)
	if seen != payload {
		t.Errorf("Backfill saw data %q, want %q", seen, payload)
	}
	got := claim(t, s, "late", true, base.Add(time.Hour), 0)
	if len(got) != 1 || got[0].EventID != "ev-ref" || string(got[0].Event.Data) != payload || got[0].OrderKey != "s-r" {
		t.Fatalf("claimed %+v, want ev-ref with the message %q", got, payload)
	}
}

// testSinkHistory: a sink's deliveries newest first, with the event's id and type, status,
// attempts, error and times, filtered by status and creation time, paged by id.
func testSinkHistory(t *testing.T, s store.Store) {
	enqueue(t, s,
		queued("hook", "e1", "job-1", 0),
		typed("hook", "e2", "job-2", "job.succeeded", time.Minute),
		queued("hook", "e3", "job-3", 2*time.Minute),
		queued("other", "e1", "job-1", 0))
	ds := claim(t, s, "hook", false, base.Add(10*time.Minute), 0)
	before := time.Now()
	if err := s.CompleteSinkDelivery(t.Context(), ds[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.KillSinkDelivery(t.Context(), ds[1].ID, "500 from target", base.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	r := replayer(t, s)
	items := must(r.SinkHistory(t.Context(), store.SinkHistoryQuery{Sink: "hook"}))(t, "SinkHistory")
	if len(items) != 3 {
		t.Fatalf("history: %d items, want 3", len(items))
	}
	e3, e2, e1 := items[0], items[1], items[2]
	if e3.EventID != "e3" || e3.EventType != "live.transcript" || e3.JobID != "job-3" || e3.Status != "queued" ||
		e3.Attempts != 0 || !e3.CreatedAt.Equal(base.Add(2*time.Minute)) || !e3.DeliveredAt.IsZero() || !e3.FailedAt.IsZero() || e3.Sink != "hook" {
		t.Errorf("e3: %+v", e3)
	}
	if e2.EventID != "e2" || e2.EventType != "job.succeeded" || e2.Status != "dead" || e2.Attempts != 1 ||
		e2.LastError != "500 from target" || !e2.FailedAt.Equal(base.Add(10*time.Minute)) {
		t.Errorf("e2: %+v", e2)
	}
	if e1.EventID != "e1" || e1.Status != "delivered" || e1.DeliveredAt.Before(before.Add(-time.Second)) || e1.LastError != "" {
		t.Errorf("e1: %+v", e1)
	}
	ids := func(q store.SinkHistoryQuery) []string {
		t.Helper()
		var out []string
		for _, it := range must(r.SinkHistory(t.Context(), q))(t, "SinkHistory") {
			out = append(out, it.EventID)
		}
		return out
	}
	for _, tc := range []struct {
		q    store.SinkHistoryQuery
		want []string
	}{
		{store.SinkHistoryQuery{Sink: "hook", Status: "dead"}, []string{"e2"}},
		{store.SinkHistoryQuery{Sink: "hook", Status: "delivered"}, []string{"e1"}},
		{store.SinkHistoryQuery{Sink: "hook", Before: e3.ID}, []string{"e2", "e1"}},
		{store.SinkHistoryQuery{Sink: "hook", Limit: 1}, []string{"e3"}},
		{store.SinkHistoryQuery{Sink: "hook", Since: base.Add(time.Minute)}, []string{"e3", "e2"}},
		{store.SinkHistoryQuery{Sink: "other"}, []string{"e1"}},
		{store.SinkHistoryQuery{Sink: "nobody"}, nil},
	} {
		if got := ids(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("SinkHistory(%+v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if _, err := r.SinkHistory(t.Context(), store.SinkHistoryQuery{Sink: "hook", Status: "gone"}); err == nil {
		t.Error("SinkHistory with an unknown status: no error")
	}
}
