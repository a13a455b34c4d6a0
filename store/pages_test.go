package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// TestAllJobs: the pages from the query's offset to the end, newest first, with the filters
// kept on every page; a loop that breaks early ends it cleanly.
func TestAllJobs(t *testing.T) {
	ctx := t.Context()
	st := teststore.SQLite(t)
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

// TestAllLiveMessages: every message of a session longer than a page, in order, and none of
// another session's.
func TestAllLiveMessages(t *testing.T) {
	ctx := t.Context()
	st := teststore.SQLite(t)
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	const session, n = "session-1", 2345
	res, err := st.Ingest(ctx, []store.Delivery{{DedupeKey: "live-1", Route: "job", Kind: api.CallbackLiveMessage,
		Event: "live.transcript", JobID: session, MessageType: api.MessageTranscript, PartitionKey: session, Body: []byte(`{}`), ReceivedAt: t0}})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Apply(ctx, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		for range n {
			if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: session, Type: api.MessageTranscript,
				CreatedAt: t0, ReceivedAt: t0, InboxID: res[0].ID, Payload: []byte(`{"type":"transcript"}`)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		session string
		want    int
	}{{session, n}, {"session-2", 0}} {
		var seqs []int64
		for m, err := range store.AllLiveMessages(ctx, st, tc.session) {
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, m.Seq)
		}
		var want []int64
		for i := range tc.want {
			want = append(want, int64(i+1))
		}
		if !slices.Equal(seqs, want) {
			t.Errorf("%s: %d messages, seq %v…; want %d, seq 1 on in order", tc.session, len(seqs), seqs[:min(len(seqs), 3)], tc.want)
		}
	}
}
