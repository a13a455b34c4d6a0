package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// syncRecorder records, for every write transaction, the synchronous setting of the writer
// connection at the moment of its COMMIT (PRAGMA synchronous: 1 NORMAL, 2 FULL).
type syncRecorder struct {
	t  *testing.T
	mu sync.Mutex
	at map[string][]int // op → settings, in commit order
}

func recordSync(t *testing.T, s *Store) *syncRecorder {
	r := &syncRecorder{t: t, at: map[string][]int{}}
	s.beforeCommit = func(op string, q sqlcore.Querier) {
		var level int
		if err := q.QueryRowContext(context.Background(), `PRAGMA synchronous`).Scan(&level); err != nil {
			t.Errorf("read synchronous in %s: %v", op, err)
		}
		r.mu.Lock()
		r.at[op] = append(r.at[op], level)
		r.mu.Unlock()
	}
	return r
}

// TestSynchronousPerTransaction: with the default (full), what exists nowhere else commits
// with FULL (the delivery before its 2xx, tokens, a job the submitter created, events queued
// outside an inbox row, an operator's replay), and what is derived from durable inbox rows
// commits with NORMAL, in any interleaving: an ingest right after an apply is FULL again.
// With normal everything is NORMAL.
func TestSynchronousPerTransaction(t *testing.T) {
	for _, tc := range []struct {
		sync                   string
		wantDurable, wantDeriv int
	}{{"", 2, 1}, {"normal", 1, 1}} {
		t.Run("sync="+tc.sync, func(t *testing.T) {
			s := openTemp(t, Config{Synchronous: tc.sync})
			rec := recordSync(t, s)
			ctx := t.Context()
			ingest := func(key string) int64 {
				t.Helper()
				res, err := s.Ingest(ctx, []store.Delivery{delivery(key)})
				if err != nil {
					t.Fatal(err)
				}
				return res[0].ID
			}
			must := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			first, second := ingest("a"), ingest("b")
			ev := api.Event{ID: "ev-1", Type: "job.succeeded", JobID: "job-1", Kind: api.KindPreRecorded, Data: json.RawMessage(`{}`)}
			must("Apply", s.Apply(ctx, first, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: "job-1", InboxID: first, Payload: json.RawMessage(`{}`)}); err != nil {
					return err
				}
				if err := tx.PutJob(ctx, store.JobRecord{Job: api.Job{ID: "job-1", Status: api.StatusDone}}); err != nil {
					return err
				}
				return tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "hook", Event: ev}, {Sink: "files", Event: ev}})
			}))
			ingest("c") // right after a derived transaction
			must("MarkInboxFailed", s.MarkInboxFailed(ctx, second, "x", time.Now().Add(time.Second)))
			claimed, err := s.ClaimSinkDeliveries(ctx, "hook", true, time.Now(), time.Minute, 0)
			must("Claim", err)
			must("Complete", s.CompleteSinkDelivery(ctx, claimed[0].ID))
			files, err := s.ClaimSinkDeliveries(ctx, "files", false, time.Now(), time.Minute, 0)
			must("Claim files", err)
			must("Retry", s.RetrySinkDelivery(ctx, files[0].ID, time.Now(), "x"))
			must("Kill", s.KillSinkDelivery(ctx, files[0].ID, "x", time.Now()))
			must("Replay", s.ReplayDeadLetter(ctx, files[0].ID, time.Now()))
			_, err = s.ReleaseSinkLeases(ctx)
			must("ReleaseSinkLeases", err)
			must("EnqueueSinkDeliveries", s.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "hook", Event: api.Event{ID: "ev-2", Data: json.RawMessage(`{}`)}}}))
			must("PutJob", s.PutJob(ctx, store.JobRecord{Job: api.Job{ID: "job-2", Status: api.StatusQueued}}))
			_, err = s.CreateJob(ctx, store.JobRecord{Job: api.Job{ID: "job-3", Status: api.StatusQueued}})
			must("CreateJob", err)
			must("CreateToken", s.CreateToken(ctx, store.Token{Hash: []byte{1}, Kind: api.KindLive}))
			must("BindToken", s.BindToken(ctx, []byte{1}, "job-3"))
			must("RevokeToken", s.RevokeToken(ctx, []byte{1}))

			want := map[string][]int{}
			for _, op := range []string{"ingest", "replay dead letter", "enqueue sink deliveries", "put job",
				"create job", "create token", "bind token", "revoke token"} {
				want[op] = []int{tc.wantDurable}
			}
			want["ingest"] = []int{tc.wantDurable, tc.wantDurable, tc.wantDurable}
			for _, op := range []string{"apply", "mark inbox failed", "complete sink delivery",
				"retry sink delivery", "kill sink delivery", "release sink leases"} {
				want[op] = []int{tc.wantDeriv}
			}
			want["claim sink deliveries"] = []int{tc.wantDeriv, tc.wantDeriv}
			if !reflect.DeepEqual(rec.at, want) {
				t.Errorf("synchronous at COMMIT (1 NORMAL, 2 FULL):\n got %v\nwant %v", rec.at, want)
			}
		})
	}
}

// TestApplyCancelled: a context that ends while Apply's function runs rolls the row back, and
// the writer stays usable.
func TestApplyCancelled(t *testing.T) {
	s := openTemp(t, Config{})
	res, err := s.Ingest(t.Context(), []store.Delivery{delivery("a")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	err = s.Apply(ctx, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: "s", Payload: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a context cancelled inside = %v, want context.Canceled", err)
	}
	if row, err := s.InboxRow(t.Context(), res[0].ID); err != nil || row.Status != store.InboxPending {
		t.Errorf("row after the cancelled Apply = %+v, %v; want pending", row, err)
	}
	if ms, err := s.LiveMessages(t.Context(), "s", 0, 0); err != nil || len(ms) != 0 {
		t.Errorf("messages after the cancelled Apply = %d, %v; want none", len(ms), err)
	}
	if err := s.Apply(t.Context(), res[0].ID, func(context.Context, store.Tx) error { return nil }); err != nil {
		t.Errorf("Apply after the cancelled one: %v", err)
	}
	// A context already ended never takes the writer.
	if err := s.Apply(ctx, res[0].ID, func(context.Context, store.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with an ended context = %v, want context.Canceled", err)
	}
}

// TestWriterLeftInTransaction: should a transaction stay open on the writer connection after
// a failure, the next write must not run inside it.
func TestWriterLeftInTransaction(t *testing.T) {
	s := openTemp(t, Config{})
	writerExec(t, s, `BEGIN IMMEDIATE`) // as if a failed COMMIT had left it open
	w, err := s.begin(t.Context(), "test", sqlcore.Durable)
	if err == nil {
		w.Rollback()
		t.Fatal("BEGIN inside an open transaction succeeded")
	}
	if _, err := s.Ingest(t.Context(), []store.Delivery{delivery("a")}); err != nil {
		t.Fatalf("Ingest after the writer was settled: %v", err)
	}
	if n, err := s.InboxBacklog(t.Context()); err != nil || n != 1 {
		t.Errorf("backlog = %d, %v; want the committed row", n, err)
	}
}

// TestWriteAfterClose: a write after Close fails instead of opening the writer again.
func TestWriteAfterClose(t *testing.T) {
	s := openTemp(t, Config{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Ingest(t.Context(), []store.Delivery{delivery("a")})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Ingest after Close = %v, want the store is closed", err)
	}
}
