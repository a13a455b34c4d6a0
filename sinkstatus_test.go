package scribehook_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

// TestSinkStatuses: the configured sinks and a removed one that still has a state and a
// queue, listed by name with their queues; a state set on an unknown name is refused with
// the names that could be meant, and one set on the removed sink is recorded.
func TestSinkStatuses(t *testing.T) {
	ctx := t.Context()
	cfg := configs.Default()
	cfg.Store.DSN = filepath.Join(t.TempDir(), "scribehook.db")
	cfg.Sinks = []configs.Sink{{Name: "hook"}, {Name: "files"}}
	st, err := scribehook.OpenStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })

	gone := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := st.SetSinkState(ctx, store.SinkState{Name: "old", Disabled: true, Reason: "answered 410 Gone", Since: gone}); err != nil {
		t.Fatal(err)
	}
	var ds []store.SinkDelivery
	// "handler" is the queue of an event handler (or of a sink renamed since): neither
	// configured nor with a state, it used to be left out.
	for i, sink := range []string{"hook", "hook", "old", "handler"} {
		ev := api.Event{ID: fmt.Sprintf("ev-%d", i), Type: api.EventSubtitlesReady, CreatedAt: api.Time{Time: gone},
			JobID: "job-1", Kind: api.KindPreRecorded, Data: json.RawMessage(`{}`)}
		ds = append(ds, store.SinkDelivery{Sink: sink, EventID: ev.ID, Event: ev, OrderKey: "job-1", NextAttempt: gone, CreatedAt: gone})
	}
	if err := st.EnqueueSinkDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}

	got, err := scribehook.SinkStatuses(ctx, cfg, st)
	want := []scribehook.SinkStatus{
		{Name: "files", Configured: true},
		{Name: "handler", Queued: 1},
		{Name: "hook", Configured: true, Queued: 2},
		{Name: "old", Disabled: true, Reason: "answered 410 Gone", Since: gone, Queued: 1},
	}
	if err != nil || !slices.EqualFunc(got, want, sameStatus) {
		t.Fatalf("SinkStatuses = %+v, %v\nwant %+v", got, err, want)
	}

	_, err = scribehook.SetSinkState(ctx, cfg, st, store.SinkState{Name: "nope"})
	var unknown *scribehook.UnknownSinkError
	if !errors.As(err, &unknown) || unknown.Name != "nope" || !slices.Equal(unknown.Known, []string{"files", "handler", "hook", "old"}) ||
		err.Error() != `no sink "nope" in the configuration (sinks: files, handler, hook, old)` {
		t.Errorf("SetSinkState of an unknown sink: %v", err)
	}
	if sts, err := st.SinkStates(ctx); err != nil || len(sts) != 1 {
		t.Errorf("states after the refused name: %+v, %v; want only old's", sts, err)
	}

	before := time.Now().Add(-time.Second)
	enabled, err := scribehook.SetSinkState(ctx, cfg, st, store.SinkState{Name: "old"})
	if err != nil || enabled.Name != "old" || enabled.Configured || enabled.Disabled || enabled.Reason != "" ||
		enabled.Since.Before(before) || enabled.Queued != 1 {
		t.Errorf("SetSinkState(old enabled) = %+v, %v; want old enabled now, 1 queued", enabled, err)
	}
}

func sameStatus(a, b scribehook.SinkStatus) bool {
	return a.Name == b.Name && a.Configured == b.Configured && a.Disabled == b.Disabled && a.Reason == b.Reason &&
		a.Since.Equal(b.Since) && a.Queued == b.Queued
}
