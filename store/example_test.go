package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// Read every stored job a filter selects, a page at a time, without holding the whole list:
// what `scribehook jobs list --all` does. Breaking out of the loop ends the reading.
func ExampleAllJobs() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "scribehook-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i, status := range []api.JobStatus{api.StatusDone, api.StatusError, api.StatusDone, api.StatusDone} {
		job := api.Job{ID: fmt.Sprintf("job-%d", i), Kind: api.KindPreRecorded, Status: status,
			CreatedAt: api.Time{Time: t0.Add(time.Duration(i) * time.Minute)}}
		if err := st.PutJob(ctx, store.JobRecord{Job: job}); err != nil {
			panic(err)
		}
	}

	// Pages of two, newest first, only the jobs that are done.
	q := api.ListQuery{Limit: api.Int(2), Status: []api.JobStatus{api.StatusDone}}
	for rec, err := range store.AllJobs(ctx, st, q) {
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Job.ID, rec.Job.Status)
	}
	// Output:
	// job-3 done
	// job-2 done
	// job-0 done
}
