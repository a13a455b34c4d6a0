package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// testReconcile: CreateJob lists each job it creates, once, due at its creation; due entries
// come soonest first; an update is read back whole; the queue position counts earlier entries
// of the kind; a finished entry is gone, and finishing or updating it again is no error.
func testReconcile(t *testing.T, s store.Store) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	for i, j := range []struct {
		id   string
		kind api.JobKind
	}{{"job-b", api.KindPreRecorded}, {"job-a", api.KindPreRecorded}, {"live-c", api.KindLive}} {
		rec := store.JobRecord{
			Job:   api.Job{ID: j.id, Kind: j.kind, Status: api.StatusQueued, Version: api.RecordVersion, CreatedAt: api.NewTime(t0.Add(time.Duration(i) * time.Minute))},
			Local: store.Local{Source: "submit"},
		}
		if ok, err := s.CreateJob(ctx, rec); err != nil || !ok {
			t.Fatalf("create %s: %v, %v", j.id, ok, err)
		}
	}
	// A second CreateJob of a listed job changes neither the record nor the entry.
	if ok, err := s.CreateJob(ctx, store.JobRecord{Job: api.Job{ID: "job-b", Kind: api.KindPreRecorded, Status: api.StatusDone, CreatedAt: api.NewTime(t0.Add(time.Hour))}}); err != nil || ok {
		t.Fatalf("second create of job-b: %v, %v", ok, err)
	}
	due, err := s.DueReconciles(ctx, t0.Add(90*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := entryIDs(due); got != "job-b,job-a" {
		t.Fatalf("due at t0+90s: %s, want job-b,job-a", got)
	}
	if !due[0].CreatedAt.Equal(t0) || !due[0].DueAt.Equal(t0) || due[0].Kind != api.KindPreRecorded || due[0].Checks != 0 ||
		!due[0].OverdueAt.IsZero() || !due[0].CheckedAt.IsZero() || due[0].Status != "" {
		t.Errorf("new entry %+v", due[0])
	}
	if n, err := s.ReconcileAhead(ctx, api.KindPreRecorded, t0.Add(time.Minute)); err != nil || n != 1 {
		t.Errorf("ahead of job-a: %d, %v; want 1", n, err)
	}
	if n, err := s.ReconcileAhead(ctx, api.KindLive, t0.Add(2*time.Minute)); err != nil || n != 0 {
		t.Errorf("ahead of live-c: %d, %v; want 0", n, err)
	}
	upd := store.ReconcileEntry{JobID: "job-b", DueAt: t0.Add(10 * time.Minute), Checks: 2, OverdueAt: t0.Add(5 * time.Minute),
		CheckedAt: t0.Add(6 * time.Minute), Status: "processing", LastError: "get job: 503"}
	if err := s.UpdateReconcile(ctx, upd); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReconcileEntry(ctx, "job-b")
	if err != nil {
		t.Fatal(err)
	}
	if !got.DueAt.Equal(upd.DueAt) || got.Checks != 2 || !got.OverdueAt.Equal(upd.OverdueAt) || !got.CheckedAt.Equal(upd.CheckedAt) ||
		got.Status != "processing" || got.LastError != "get job: 503" || !got.CreatedAt.Equal(t0) {
		t.Errorf("updated entry %+v, want %+v", got, upd)
	}
	due, err = s.DueReconciles(ctx, t0.Add(time.Hour), 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := entryIDs(due); got != "job-a,live-c" {
		t.Errorf("due at t0+1h, limit 2: %s, want job-a,live-c", got)
	}
	for range 2 {
		if err := s.FinishReconcile(ctx, "job-a"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ReconcileEntry(ctx, "job-a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finished entry read: %v, want ErrNotFound", err)
	}
	if err := s.UpdateReconcile(ctx, store.ReconcileEntry{JobID: "job-a", DueAt: t0}); err != nil {
		t.Errorf("update of a finished entry: %v", err)
	}
	if due, err = s.DueReconciles(ctx, t0.Add(24*time.Hour), 0); err != nil || entryIDs(due) != "live-c,job-b" {
		t.Errorf("due at the end: %s, %v; want live-c,job-b", entryIDs(due), err)
	}
}

func entryIDs(es []store.ReconcileEntry) string {
	s := ""
	for i, e := range es {
		if i > 0 {
			s += ","
		}
		s += e.JobID
	}
	return s
}
