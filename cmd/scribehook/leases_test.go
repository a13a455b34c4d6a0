package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// TestRestartReleasesSinkLeases: a delivery leased by a process that was then killed goes out
// as soon as serve starts again on the same SQLite file, not when its lease would have ended
// (an hour here, so a slow machine cannot make the test pass by waiting it out).
func TestRestartReleasesSinkLeases(t *testing.T) {
	dir, dbPath := tempDB(t)
	out := filepath.Join(dir, "out")
	ctx := context.Background()
	st := teststore.OpenSQLite(t, sqlite.Config{Path: dbPath})
	ev := api.Event{
		ID: "ev-leased-1", Type: "live.transcript", JobID: "session-1", Kind: api.KindLive,
		CreatedAt: api.Time{Time: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)},
		Data:      []byte(`{"type":"transcript"}`),
	}
	if err := st.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "files", EventID: ev.ID, Event: ev, OrderKey: ev.JobID, NextAttempt: ev.CreatedAt.Time}}); err != nil {
		t.Fatal(err)
	}
	// The "killed" process claimed it with an hour's lease and never settled it.
	claimed, err := st.ClaimSinkDeliveries(ctx, "files", false, time.Now(), time.Hour, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	if again, _ := st.ClaimSinkDeliveries(ctx, "files", false, time.Now(), time.Hour, 10); len(again) != 0 {
		t.Fatalf("claimed twice before the restart: %v", again)
	}

	srv := serveOn(t, st, "", serverOptions{Logger: logx.Discard(), Sinks: []sinkSetup{fileSink(t, out)}})
	t.Cleanup(func() { srv.stop(t) })
	path := filepath.Join(out, ev.JobID, "events", sinks.EventFileName(ev))
	testwait.For(t, "the leased delivery at the file sink", 30*time.Second, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	testwait.For(t, "the sink queue empty", 10*time.Second, func() bool {
		n, err := st.SinkDepth(ctx, "files")
		return err == nil && n == 0
	})
}
