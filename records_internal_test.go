package scribehook

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
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

// refusingStore is a store that refuses to apply inbox rows while refuse is set, as a store
// whose disk is failing would.
type refusingStore struct {
	store.Store
	refuse atomic.Bool
}

var errRefused = errors.New("disk I/O error (injected)")

func (s *refusingStore) Apply(ctx context.Context, id int64, fn func(context.Context, store.Tx) error) error {
	if s.refuse.Load() {
		return errRefused
	}
	return s.Store.Apply(ctx, id, fn)
}

func (s *refusingStore) ApplyGroup(ctx context.Context, ids []int64, fn func(context.Context, store.Tx, []int64) error) error {
	if s.refuse.Load() {
		return errRefused
	}
	return s.Store.ApplyGroup(ctx, ids, fn)
}

// TestRecordsReplayFailedDelivery: a job's result callback that the store refuses to apply
// fails its attempt and its retry, and is marked failed; Records lists it (by job, without its
// body) and, once the store is fixed, replays it: the kit applies it once, the record counts
// one delivery, its subtitles are written and its job.succeeded event handled once. A bare
// replay is refused.
func TestRecordsReplayFailedDelivery(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	cfg := kitConfig(t.TempDir(), ln, w.sandbox)
	st := &refusingStore{Store: teststore.OpenSQLite(t, sqlite.Config{Path: cfg.Store.DSN})}
	st.refuse.Store(true)
	rec, ops := &recorder{}, &recorder{}
	k := startKit(t, cfg, ln, WithService(w.service), WithStore(st), WithInboxRetry(10*time.Millisecond), WithEventHandler(EventHandler{
		Name: "succeeded", Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}}, Func: rec.handle,
	}), WithEventHandler(EventHandler{Name: "ops", Filter: sinks.Filter{Events: []string{api.EventInboxFailed}}, Func: ops.handle}))
	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio})
	if err != nil {
		t.Fatal(err)
	}
	r := k.Records()
	var failed []store.InboxRow
	testwait.For(t, "the failed delivery", 30*time.Second, func() bool {
		failed, err = r.FailedInbox(ctx, store.InboxFilter{JobID: created.ID}, 0)
		return err == nil && len(failed) == 1
	})
	row := failed[0]
	if row.Kind != api.CallbackJobSuccess || row.Attempts != 2 || row.LastError != errRefused.Error() ||
		row.FailedAt.IsZero() || row.Body != nil {
		t.Errorf("failed delivery: kind %s, %d attempts, error %q, failed at %v, %d bytes of body; want job.success, 2, %q, a time, none",
			row.Kind, row.Attempts, row.LastError, row.FailedAt, len(row.Body), errRefused)
	}
	// The operator is told: one inbox.failed, with the row, its attempts and its error.
	testwait.For(t, "inbox.failed", 10*time.Second, func() bool { return len(ops.of(created.ID)) == 1 })
	var fd api.InboxFailedData
	if evs := ops.of(created.ID); json.Unmarshal(evs[0].Data, &fd) != nil || evs[0].Type != api.EventInboxFailed ||
		fd.InboxID != row.ID || fd.Attempts != 2 || fd.Error != errRefused.Error() || fd.Kind != api.CallbackJobSuccess ||
		evs[0].Kind != api.KindPreRecorded {
		t.Errorf("inbox.failed %+v: %+v", evs[0], fd)
	}
	if whole, err := r.InboxRow(ctx, row.ID); err != nil || len(whole.Body) == 0 || whole.Status != store.InboxFailed {
		t.Errorf("InboxRow(%d): %v, %s, %d bytes", row.ID, err, whole.Status, len(whole.Body))
	}
	if moved, err := r.ReplayInbox(ctx, store.InboxFilter{}); !errors.Is(err, store.ErrEmptyFilter) || len(moved) != 0 {
		t.Errorf("ReplayInbox without a filter: %v, %v; want store.ErrEmptyFilter", moved, err)
	}

	st.refuse.Store(false) // the cause, fixed
	moved, err := r.ReplayInbox(ctx, store.InboxFilter{JobID: created.ID})
	if err != nil || len(moved) != 1 || moved[0].ID != row.ID {
		t.Fatalf("ReplayInbox(job %s) = %v, %v; want row %d", created.ID, moved, err, row.ID)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	job, err := WaitJob(waitCtx, r, created.ID, 0, nil)
	if err != nil || job.Job.Status != api.StatusDone || job.Local.Deliveries != 1 {
		t.Fatalf("job after the replay: %v, %s, %d deliveries; want done, 1", err, job.Job.Status, job.Local.Deliveries)
	}
	testwait.For(t, "the job.succeeded event", 30*time.Second, func() bool { return len(rec.of(created.ID)) == 1 })
	if again, err := r.ReplayInbox(ctx, store.InboxFilter{IDs: []int64{row.ID}}); err != nil || len(again) != 0 {
		t.Errorf("replaying the applied row: %v, %v; want nothing moved", again, err)
	}
	time.Sleep(200 * time.Millisecond) // nothing may apply it twice: watch a while
	if evs := rec.of(created.ID); len(evs) != 1 {
		t.Errorf("job.succeeded events of %s after the replay: %d, want 1", created.ID, len(evs))
	}
	if arts, err := r.Artifacts(ctx, created.ID); err != nil || len(arts) == 0 {
		t.Errorf("subtitles after the replay: %v, %d files", err, len(arts))
	}
	if got, err := r.FailedInbox(ctx, store.InboxFilter{}, 0); err != nil || len(got) != 0 {
		t.Errorf("failed deliveries after the replay: %v, %v", got, err)
	}
	if final, err := r.InboxRow(ctx, row.ID); err != nil || final.Status != store.InboxDone || final.Attempts != 1 {
		t.Errorf("the replayed row: %v, %s, %d attempts; want done, 1", err, final.Status, final.Attempts)
	}
}
