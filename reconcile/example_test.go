package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/reconcile"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// finishedService answers every GET with the job done: the service finished it, and its
// callback never came. A program passes its submitter.Client (through a small adapter, as the
// kit does) instead.
type finishedService struct{}

func (finishedService) GetJob(_ context.Context, id string, kind api.JobKind) (api.Job, error) {
	return api.Job{ID: id, Kind: kind, Status: api.StatusDone, Version: api.RecordVersion,
		Result: json.RawMessage(`{"transcription":{"full_transcript":"Hello."}}`)}, nil
}

// A job the kit created (CreateJob lists it) whose callback never came: once After has
// passed, a pass asks the service, finds it done, and commits the callback it would have sent
// to the inbox, where the pipeline applies it.
func ExampleReconciler_Pass() {
	dir, _ := os.MkdirTemp("", "reconcile-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	created := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	_, _ = st.CreateJob(ctx, store.JobRecord{Job: api.Job{ID: "job-1", Kind: api.KindPreRecorded,
		Status: api.StatusQueued, Version: api.RecordVersion, CreatedAt: api.NewTime(created)}, Local: store.Local{Source: "submit"}})

	r, err := reconcile.New(reconcile.Config{
		Store: st, Service: finishedService{},
		Ingest: st.Ingest, // a kit also tells its pipeline of the new rows
		Emit: func(_ context.Context, typ, _, jobID string, _ api.JobKind, _ any) error {
			fmt.Println("event", typ, jobID)
			return nil
		},
		After: 2 * time.Minute,
		Now:   func() time.Time { return created.Add(5 * time.Minute) },
	})
	if err != nil {
		panic(err)
	}
	out, err := r.Pass(ctx, false)
	if err != nil {
		panic(err)
	}
	for _, o := range out {
		fmt.Println(o.JobID, o.Action, o.Status, o.Deliveries)
	}
	rows, _ := st.PendingInbox(ctx, 0, 0)
	fmt.Println("inbox:", rows[0].Route, rows[0].DedupeKey)
	// Output:
	// event job.overdue job-1
	// job-1 applied done 1
	// inbox: reconcile job:job-1:transcription.success
}
