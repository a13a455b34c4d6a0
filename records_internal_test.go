package scribehook

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/store"
)

// TestRecords reads through Kit.Records what a job submitted to the kit left in its store (its
// record, by id and in a filtered list, its subtitle files), and replays a handler's dead
// letter with a filter: it is queued again and delivered, same event.
func TestRecords(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	f := newFlaky()
	k := startKit(t, cfg, ln, WithService(w.service), WithEventHandler(f.handler(0)))
	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio, CustomMetadata: json.RawMessage(`{"team":"records"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := k.Records()
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rec, err := WaitJob(waitCtx, r, created.ID, 0, nil)
	if err != nil || rec.Job.Status != api.StatusDone || rec.Local.Source != SourceSubmit || rec.Local.Deliveries == 0 {
		t.Fatalf("WaitJob through Records: %v, %s, %+v", err, rec.Job.Status, rec.Local)
	}
	if got, err := r.GetJob(ctx, created.ID); err != nil || got.Job.ID != created.ID || got.Job.Status != api.StatusDone {
		t.Errorf("GetJob: %v %+v", err, got.Job)
	}
	if _, err := r.GetJob(ctx, "no-such-job"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetJob of an unknown id: %v, want store.ErrNotFound", err)
	}
	page, err := r.ListJobs(ctx, api.ListQuery{Status: []api.JobStatus{api.StatusDone}, CustomMetadata: json.RawMessage(`{"team":"records"}`)})
	if err != nil || len(page.Items) != 1 || page.Items[0].Job.ID != created.ID {
		t.Errorf("ListJobs by status and custom_metadata: %v, %d items", err, len(page.Items))
	}
	if page, err := r.ListJobs(ctx, api.ListQuery{CustomMetadata: json.RawMessage(`{"team":"other"}`)}); err != nil || len(page.Items) != 0 {
		t.Errorf("ListJobs of another team: %v, %d items", err, len(page.Items))
	}
	testwait.For(t, "the job's subtitles", 30*time.Second, func() bool {
		arts, err := r.Artifacts(ctx, created.ID)
		return err == nil && len(arts) > 0 && arts[0].JobID == created.ID
	})

	var dead []store.SinkDelivery
	testwait.For(t, "the dead letter", 30*time.Second, func() bool {
		dead, _ = r.DeadLetters(ctx, "flaky", time.Time{}, 0)
		return len(dead) == 1
	})
	if dead[0].Event.JobID != created.ID || dead[0].LastError != "database down" {
		t.Fatalf("dead letter %+v", dead[0])
	}
	if n, err := r.SinkDepth(ctx, "flaky"); err != nil || n != 0 {
		t.Errorf("SinkDepth with the delivery dead: %d, %v", n, err)
	}
	if n, err := r.ReplayDeadLetters(ctx, "", time.Time{}); err == nil || n != 0 {
		t.Errorf("ReplayDeadLetters without a filter: %d, %v; want an error", n, err)
	}
	if n, err := r.ReplayDeadLetters(ctx, "other", time.Time{}); err != nil || n != 0 {
		t.Errorf("ReplayDeadLetters of another sink: %d, %v", n, err)
	}
	f.mu.Lock()
	f.failing = false
	f.mu.Unlock()
	if n, err := r.ReplayDeadLetters(ctx, "flaky", time.Time{}); err != nil || n != 1 {
		t.Fatalf("ReplayDeadLetters: %d, %v; want 1", n, err)
	}
	testwait.For(t, "the replayed delivery", 30*time.Second, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.calls) == 2
	})
	f.mu.Lock()
	if f.calls[1] != dead[0].EventID {
		t.Errorf("replayed event %s, the dead letter's %s", f.calls[1], dead[0].EventID)
	}
	f.mu.Unlock()
	if d, err := r.DeadLetters(ctx, "flaky", time.Time{}, 0); err != nil || len(d) != 0 {
		t.Errorf("dead letters after the replay: %d, %v", len(d), err)
	}
	if err := r.ReplayDeadLetter(ctx, dead[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("replaying a delivered event: %v, want store.ErrNotFound", err)
	}
	sts, err := r.SinkStatuses(ctx)
	if err != nil || len(sts) != 1 || sts[0].Name != "flaky" || !sts[0].Registered || sts[0].Kind != KindGo {
		t.Errorf("SinkStatuses: %v %+v", err, sts)
	}
}

// TestRecordsReadOnly: the view has none of the store's writing methods, and is no store.
func TestRecordsReadOnly(t *testing.T) {
	var r any = &Records{}
	if _, ok := r.(store.Store); ok {
		t.Fatal("*Records is a store.Store")
	}
	typ := reflect.TypeOf(r)
	for _, m := range []string{"Ingest", "Apply", "ApplyGroup", "MarkInboxFailed", "PutJob", "CreateJob",
		"EnqueueSinkDeliveries", "ClaimSinkDeliveries", "CompleteSinkDelivery", "KillSinkDelivery",
		"CreateToken", "BindToken", "RevokeToken", "Prune", "Close"} {
		if _, ok := typ.MethodByName(m); ok {
			t.Errorf("*Records has %s", m)
		}
	}
	if _, ok := reflect.TypeOf(&Kit{}).MethodByName("Store"); ok {
		t.Error("Kit still hands out its store")
	}
}
