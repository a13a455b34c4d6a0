package store_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// TestAllJobs: the pages from the query's offset to the end, newest first, with the filters
// kept on every page; a loop that breaks early ends it cleanly.
func TestAllJobs(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "jobs.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i := range 7 {
		status := api.StatusDone
		if i%3 == 0 {
			status = api.StatusError
		}
		job := api.Job{ID: fmt.Sprintf("job-%d", i), Kind: api.KindPreRecorded, Status: status, CreatedAt: api.Time{Time: t0.Add(time.Duration(i) * time.Minute)}}
		if err := st.PutJob(ctx, store.JobRecord{Job: job}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(q api.ListQuery, stopAfter int) []string {
		t.Helper()
		var got []string
		for rec, err := range store.AllJobs(ctx, st, q) {
			if err != nil {
				t.Fatal(err)
			}
			if got = append(got, rec.Job.ID); len(got) == stopAfter {
				break
			}
		}
		return got
	}
	tests := []struct {
		name      string
		q         api.ListQuery
		stopAfter int
		want      []string
	}{
		{"pages of 2", api.ListQuery{Limit: api.Int(2)}, 0, []string{"job-6", "job-5", "job-4", "job-3", "job-2", "job-1", "job-0"}},
		{"from an offset", api.ListQuery{Limit: api.Int(2), Offset: api.Int(3)}, 0, []string{"job-3", "job-2", "job-1", "job-0"}},
		{"filtered", api.ListQuery{Limit: api.Int(1), Status: []api.JobStatus{api.StatusError}}, 0, []string{"job-6", "job-3", "job-0"}},
		{"stopped", api.ListQuery{Limit: api.Int(2)}, 3, []string{"job-6", "job-5", "job-4"}},
	}
	for _, tt := range tests {
		if got := ids(tt.q, tt.stopAfter); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
