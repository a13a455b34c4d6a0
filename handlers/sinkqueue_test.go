package handlers_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// TestSinkQueueAdapter runs every Queue method through the adapter on the real store and checks
// that each field crosses over.
func TestSinkQueueAdapter(t *testing.T) {
	s := teststore.SQLite(t)
	ctx := t.Context()
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ev := api.Event{ID: "ev-1", Type: api.EventSubtitlesReady, CreatedAt: api.Time{Time: t0}, JobID: "job-1",
		Kind: api.KindPreRecorded, CustomMetadata: json.RawMessage(`{"team":"a"}`), Data: json.RawMessage(`{"formats":["srt"]}`)}
	if err := s.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{
		{Sink: "hook", Event: ev, OrderKey: "job-1", CreatedAt: t0},
		{Sink: "other", Event: ev, OrderKey: "job-1", CreatedAt: t0},
	}); err != nil {
		t.Fatal(err)
	}
	q := handlers.SinkQueue(s)

	got, err := q.Claim(ctx, "hook", true, t0, time.Minute, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("Claim = %+v, %v", got, err)
	}
	d := got[0]
	evJSON, _ := json.Marshal(ev)
	gotJSON, _ := json.Marshal(d.Event)
	if d.ID <= 0 || d.Sink != "hook" || d.EventID != "ev-1" || d.OrderKey != "job-1" || d.Attempts != 0 ||
		!d.NextAttempt.Equal(t0) || !d.CreatedAt.Equal(t0) || d.LastError != "" || string(gotJSON) != string(evJSON) {
		t.Errorf("claimed %+v (event %s), want every field of what was queued", d, gotJSON)
	}
	if n, err := q.Depth(ctx, "hook"); err != nil || n != 1 {
		t.Errorf("Depth = %d, %v; want 1", n, err)
	}

	if err := q.Retry(ctx, d.ID, t0.Add(5*time.Second), "503"); err != nil {
		t.Fatal(err)
	}
	got, err = q.Claim(ctx, "hook", false, t0.Add(5*time.Second), time.Minute, 0)
	if err != nil || len(got) != 1 || got[0].Attempts != 1 || got[0].LastError != "503" || !got[0].NextAttempt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("Claim after Retry = %+v, %v", got, err)
	}
	failedAt := t0.Add(time.Minute)
	if err := q.Kill(ctx, d.ID, "410 Gone", failedAt); err != nil {
		t.Fatal(err)
	}
	dead, err := q.DeadLetters(ctx, "hook", time.Time{}, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadLetters = %+v, %v", dead, err)
	}
	if dl := dead[0]; dl.ID != d.ID || dl.EventID != "ev-1" || dl.Attempts != 2 || dl.LastError != "410 Gone" ||
		!dl.FailedAt.Equal(failedAt) || dl.Event.ID != "ev-1" {
		t.Errorf("dead letter = %+v", dl)
	}
	if dead, _ := q.DeadLetters(ctx, "hook", failedAt.Add(time.Second), 0); len(dead) != 0 {
		t.Errorf("DeadLetters since after the failure = %+v", dead)
	}

	if err := q.Replay(ctx, d.ID, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := q.Replay(ctx, d.ID, t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Replay = %v, want ErrNotFound", err)
	}
	got, err = q.Claim(ctx, "hook", false, t0.Add(time.Hour), time.Minute, 0)
	if err != nil || len(got) != 1 || got[0].Attempts != 0 {
		t.Fatalf("Claim after Replay = %+v, %v", got, err)
	}
	if err := q.Complete(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Depth(ctx, "hook"); n != 0 {
		t.Errorf("Depth after Complete = %d", n)
	}
	if n, _ := q.Depth(ctx, "other"); n != 1 {
		t.Errorf("other sink's depth = %d, want 1", n)
	}
	if err := q.Complete(ctx, 424242); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Complete(unknown) = %v, want ErrNotFound", err)
	}
}
