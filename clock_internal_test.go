package scribehook

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// WithClock reaches every part that stamps a time: the receiver (a delivery's received_at),
// the store (an inbox row's processed_at), the pipeline (a job record's updated_at, an event's
// queueing) and the sinks' dispatcher (a dead letter's failed_at). The clock is fixed an hour
// back, so a part that reads time.Now instead shows.
func TestWithClockReachesEveryPart(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	clock := func() time.Time { return t0 }
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	k := startKit(t, cfg, ln, WithService(w.service), WithClock(clock), WithEventHandler(EventHandler{
		Name: "refusing", Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}},
		Retry: []time.Duration{0}, // one attempt, then the dead letter
		Func:  func(context.Context, api.Event) error { return errors.New("refused") },
	}))
	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
	if err != nil {
		t.Fatal(err)
	}
	var dead []store.SinkDelivery
	testwait.For(t, "the dead letter", 30*time.Second, func() bool {
		dead, _ = k.store.DeadLetters(ctx, "refusing", time.Time{}, 0)
		return len(dead) == 1
	})
	rec, err := k.store.GetJob(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	row, err := k.store.InboxRow(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		got  time.Time
	}{
		{"dispatcher: dead letter's failed_at", dead[0].FailedAt},
		{"pipeline: the event's queueing (dead letter's created_at)", dead[0].CreatedAt},
		{"pipeline: job record's local.updated_at", rec.Local.UpdatedAt},
		{"receiver: job record's local.received_at", rec.Local.ReceivedAt},
		{"receiver: inbox row's received_at", row.ReceivedAt},
		{"store: inbox row's processed_at", row.ProcessedAt},
	} {
		if !c.got.Equal(t0) {
			t.Errorf("%s = %v, want the kit's clock, %v", c.what, c.got, t0)
		}
	}
}
