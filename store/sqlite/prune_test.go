package sqlite

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
	"github.com/scribehook/scribehook/store/sqlite/sqlitetest"
)

// fillInbox stores and applies n deliveries of size bytes each.
func fillInbox(t *testing.T, s *Store, n, size int) {
	t.Helper()
	body := []byte(strings.Repeat("x", size))
	for i := range n {
		res, err := s.Ingest(t.Context(), []store.Delivery{{DedupeKey: fmt.Sprintf("k%d", i), Route: "job",
			Kind: api.CallbackJobSuccess, JobID: "j", PartitionKey: "j", Body: body, ReceivedAt: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(t.Context(), res[0].ID, func(context.Context, store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A new database gives the pages pruning frees back to the file system: the file shrinks.
func TestPruneReclaimsSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scribehook.db")
	s := openTemp(t, Config{Path: path})
	if ok, err := s.IncrementalVacuum(t.Context()); err != nil || !ok {
		t.Fatalf("IncrementalVacuum = %v, %v; want true for a new database", ok, err)
	}
	fillInbox(t, s, 400, 16<<10)
	writerExec(t, s, `PRAGMA wal_checkpoint(TRUNCATE)`)
	full := fileSize(t, path)
	rep, err := s.Prune(t.Context(), store.RetentionPolicy{Inbox: time.Hour}, time.Now().Add(2*time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows[store.PruneInbox] != 400 {
		t.Fatalf("pruned %v", rep.Rows)
	}
	after := fileSize(t, path)
	// 400 bodies of 16 KiB are 6.4 MB; what stays is the schema and a few pages.
	if rep.ReclaimedBytes < 6<<20 || after > full/10 {
		t.Fatalf("file %d bytes → %d, reclaimed %d", full, after, rep.ReclaimedBytes)
	}
}

// A database created before retention keeps its size until Vacuum converts it; then pruning
// gives space back.
func TestPruneOldDatabaseNeedsVacuum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scribehook.db")
	sqlitetest.ForeignDatabase(t, path)
	s := openTemp(t, Config{Path: path})
	if ok, err := s.IncrementalVacuum(t.Context()); err != nil || ok {
		t.Fatalf("IncrementalVacuum = %v, %v; want false for a database made before", ok, err)
	}
	fillInbox(t, s, 50, 16<<10)
	rep, err := s.Prune(t.Context(), store.RetentionPolicy{Inbox: time.Hour}, time.Now().Add(2*time.Hour), false)
	if err != nil || rep.Rows[store.PruneInbox] != 50 || rep.ReclaimedBytes != 0 {
		t.Fatalf("Prune = %+v, %v; want 50 rows, nothing reclaimed", rep, err)
	}
	if err := s.Vacuum(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.IncrementalVacuum(t.Context()); err != nil || !ok {
		t.Fatalf("after Vacuum: IncrementalVacuum = %v, %v", ok, err)
	}
}

// TestPruneBatchBytes: a batch of large rows stops at about sqlcore.PruneBatchBytes, whatever
// the batch size, so that one transaction does not hold the writer while it frees gigabytes
// (a batch of 500 job results of a few MB each did); every row still goes.
func TestPruneBatchBytes(t *testing.T) {
	s := openTemp(t, Config{Path: filepath.Join(t.TempDir(), "scribehook.db")})
	const size = 3 << 20
	fillInbox(t, s, 12, size)
	var deleted []int64 // rows each prune transaction of the inbox deleted
	left := int64(12)
	s.beforeCommit = func(op string, q sqlcore.Querier) {
		if op != "prune "+string(store.PruneInbox) {
			return
		}
		var n int64
		if err := q.QueryRowContext(context.Background(), `SELECT count(*) FROM inbox`).Scan(&n); err != nil {
			t.Errorf("count in %s: %v", op, err)
		}
		deleted = append(deleted, left-n)
		left = n
	}
	rep, err := s.Prune(t.Context(), store.RetentionPolicy{Inbox: time.Hour, BatchSize: 500}, time.Now().Add(2*time.Hour), false)
	if err != nil || rep.Rows[store.PruneInbox] != 12 {
		t.Fatalf("Prune = %v, %v; want 12 inbox rows", rep.Rows, err)
	}
	// Rows go while those before them in the batch sum to less than the bound: 3 of 3 MiB.
	per := int64((sqlcore.PruneBatchBytes + size - 1) / size)
	want := []int64{per, per, per, per, 0}
	if !slices.Equal(deleted, want) {
		t.Errorf("rows deleted per transaction %v, want %v", deleted, want)
	}
}

// endedSessions stores n ended live sessions of two lifecycle messages each: the first may be
// pruned, the last stays as long as its job.
func endedSessions(t testing.TB, s *Store, n int) {
	res, err := s.Ingest(context.Background(), []store.Delivery{{DedupeKey: "sessions", Route: "live",
		Kind: api.CallbackLiveMessage, JobID: "s", PartitionKey: "s", Body: []byte("{}"), ReceivedAt: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	received := time.Now().Add(-time.Hour)
	if err := s.Apply(context.Background(), res[0].ID, func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			session := fmt.Sprintf("sess-%07d", i)
			rec := store.JobRecord{Job: api.Job{ID: session, Kind: api.KindLive, Status: api.StatusDone},
				Local: store.Local{Final: "live.end_session"}}
			if err := tx.PutJob(ctx, rec); err != nil {
				return err
			}
			for range 2 {
				received = received.Add(time.Microsecond)
				if _, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: session, Type: api.MessageEndSession,
					Category: api.CategoryLifecycleEvents, CreatedAt: received, ReceivedAt: received,
					InboxID: res[0].ID, Payload: []byte(`{}`)}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// explain gives the lines of SQLite's plan of query.
func explain(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	lines, err := sqlcore.Collect(rows, func(r sqlcore.Scanner) (string, error) {
		var id, parent, unused int
		var detail string
		return detail, r.Scan(&id, &parent, &unused, &detail)
	})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return lines
}

// Live messages are picked on the read side and deleted by key: however many messages of ended
// sessions are kept (the last of each, for as long as its job), a write transaction of the
// pruner reads only the rows it deletes, one seek each, and the picks walk the kept messages
// once per run, each pick starting where the one before stopped.
func TestPruneLiveWriterReadsByKey(t *testing.T) {
	s := openTemp(t, Config{})
	const sessions, batch = 2000, 100
	endedSessions(t, s, sessions)

	// The write side: one message, found by its key; the checks seek its session's last
	// number and its job, and never walk the category's index.
	for _, line := range explain(t, s, stmtSQLPlain[sqlcore.StPruneLive], "lifecycle_events", formatTime(time.Now()), "sess-0000001", 1) {
		if strings.HasPrefix(line, "SCAN") || strings.Contains(line, "live_messages_category_received") ||
			(strings.Contains(line, "live_messages_1") && !strings.Contains(line, "(session_id=?")) {
			t.Errorf("the write side's plan reads more than its row: %q", line)
		}
	}
	// The read side: the category's index, from the last pick on.
	plan := explain(t, s, sqlcore.LiveCandidates(dialect), "lifecycle_events", formatTime(time.Now()), formatTime(time.Time{}), "", 0, batch)
	if !slices.Contains(plan, "SEARCH l USING INDEX live_messages_category_received (category=? AND received_at>? AND received_at<?)") {
		t.Errorf("the picks do not start from the last one in the index: %q", plan)
	}

	// Each write transaction deletes a full batch (total_changes, on the writer connection, is
	// what its transactions changed); none runs to find nothing.
	var changed []int64
	last := int64(writerInt(t, s, `SELECT total_changes()`))
	op := "prune " + string(store.LiveKind(api.CategoryLifecycleEvents))
	s.beforeCommit = func(o string, q sqlcore.Querier) {
		var n int64
		if err := q.QueryRowContext(context.Background(), `SELECT total_changes()`).Scan(&n); err != nil {
			t.Errorf("total_changes: %v", err)
		}
		if o == op {
			changed = append(changed, n-last)
		}
		last = n
	}
	policy := store.RetentionPolicy{BatchSize: batch, Live: map[api.MessageCategory]time.Duration{api.CategoryLifecycleEvents: time.Minute}}
	rep, err := s.Prune(t.Context(), policy, time.Now(), false)
	if err != nil || rep.Rows[store.LiveKind(api.CategoryLifecycleEvents)] != sessions {
		t.Fatalf("Prune = %v, %v; want %d messages", rep.Rows, err, sessions)
	}
	want := slices.Repeat([]int64{batch}, sessions/batch)
	if !slices.Equal(changed, want) {
		t.Errorf("rows each write transaction deleted: %v, want %v", changed, want)
	}
}

// The reads of pending rows take the one index of statuses (migration 0010): a seek and an
// ordered range, no scan of the table nor a sort, with many done rows around them.
func TestPendingReadsUseStatusIndex(t *testing.T) {
	s := openTemp(t, Config{})
	for i, query := range s.PendingReads() {
		plan := explain(t, s, query, int64(0), 10)
		if i == 2 {
			plan = explain(t, s, query)
		}
		if !slices.ContainsFunc(plan, func(l string) bool {
			return strings.Contains(l, "USING") && strings.Contains(l, "INDEX inbox_status_processed (status=? AND processed_at=?")
		}) || slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, "TEMP B-TREE") || strings.HasPrefix(l, "SCAN") }) {
			t.Errorf("plan of %q: %q", query, plan)
		}
	}
	// The pruner's failed rows (few, kept apart from done rows by the index's status) are read
	// from the same index.
	plan := explain(t, s, stmtSQLPlain[sqlcore.StPruneInboxFailed], formatTime(time.Now()), 10, 1<<20)
	if slices.ContainsFunc(plan, func(l string) bool { return strings.HasPrefix(l, "SCAN inbox") }) {
		t.Errorf("the pruner scans the inbox for failed rows: %q", plan)
	}
}

// TestPruneEventBatchBytes: the deliveries a batch deletes are cut where the events they
// refer to reach about sqlcore.PruneBatchBytes, and the events that no delivery refers to any
// more go in the same transaction: none is left behind.
func TestPruneEventBatchBytes(t *testing.T) {
	s := openTemp(t, Config{})
	const n, size = 12, 3 << 20
	ctx := t.Context()
	data := []byte(`"` + strings.Repeat("x", size-2) + `"`)
	for i := range n {
		ev := api.Event{ID: fmt.Sprint("big-", i), Type: api.EventJobSucceeded, JobID: "j", Kind: api.KindPreRecorded, Data: data}
		if err := s.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "hook", Event: ev, OrderKey: "j"}}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.ClaimSinkDeliveries(ctx, "hook", false, time.Now(), time.Minute, 0)
	if err != nil || len(ds) != n {
		t.Fatalf("claim: %d, %v", len(ds), err)
	}
	var ids []int64
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	if err := s.CompleteSinkDeliveries(ctx, ids); err != nil {
		t.Fatal(err)
	}
	var deleted [][2]int64 // deliveries and events each prune transaction deleted
	left := [2]int64{n, n}
	s.beforeCommit = func(op string, q sqlcore.Querier) {
		if op != "prune "+string(store.PruneSinkDelivered) {
			return
		}
		var now [2]int64
		if err := q.QueryRowContext(context.Background(), `SELECT (SELECT count(*) FROM sink_deliveries),
			(SELECT count(*) FROM events)`).Scan(&now[0], &now[1]); err != nil {
			t.Errorf("count in %s: %v", op, err)
		}
		deleted = append(deleted, [2]int64{left[0] - now[0], left[1] - now[1]})
		left = now
	}
	policy := store.RetentionPolicy{SinkDelivered: time.Hour, BatchSize: 500}
	dry, err := s.Prune(ctx, policy, time.Now().Add(2*time.Hour), true)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Prune(ctx, policy, time.Now().Add(2*time.Hour), false)
	want := map[store.PruneKind]int64{store.PruneSinkDelivered: n, store.PruneEvents: n}
	if err != nil || !maps.Equal(rep.Rows, want) || !maps.Equal(dry.Rows, want) {
		t.Fatalf("Prune = %v, %v (dry run %v); want %v", rep.Rows, err, dry.Rows, want)
	}
	per := int64((sqlcore.PruneBatchBytes + size - 1) / size)
	wantBatches := [][2]int64{{per, per}, {per, per}, {per, per}, {per, per}, {0, 0}}
	if !slices.Equal(deleted, wantBatches) {
		t.Errorf("deliveries and events deleted per transaction %v, want %v", deleted, wantBatches)
	}
}

// TestSinkQueuePlans: the queue's statements read what they need through the indexes of
// migration 0011, never the whole table, and a delivered row is in none of the claim's.
func TestSinkQueuePlans(t *testing.T) {
	s := openTemp(t, Config{})
	now := formatTime(time.Now())
	for _, c := range []struct {
		name, query string
		args        []any
		want        string
	}{
		{"claim", stmtSQLPlain[sqlcore.StSinkClaim], []any{now, "hook", now, true, 10}, "sink_deliveries_due (sink=? AND next_attempt_at<?)"},
		{"depth", `SELECT count(*) FROM sink_deliveries WHERE sink = ? AND status = 'queued'`, []any{"hook"}, "sink_deliveries_"},
		{"events of a batch", stmtSQLPlain[sqlcore.StPruneEvents], []any{1}, "sqlite_autoindex_sink_deliveries_1 (event=?)"},
		{"delivered batch", stmtSQLPlain[sqlcore.StPruneSinkDelivered], []any{now, 10, 1 << 20}, "sink_deliveries_delivered (delivered_at<?)"},
	} {
		plan := explain(t, s, c.query, c.args...)
		if !slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, c.want) }) {
			t.Errorf("%s: plan %q does not use %s", c.name, plan, c.want)
		}
		for _, l := range plan {
			if table, ok := strings.CutPrefix(l, "SCAN "); ok && (strings.HasPrefix(table, "sink_deliveries") || strings.HasPrefix(table, "events")) {
				t.Errorf("%s: %q scans a table", c.name, l)
			}
		}
	}
}

// The reads of the inbox's failures take an index: DueInboxKeys the partial inbox_due (only
// rows waiting for a retry are in it), CountFailedInbox and FailedInbox the index of statuses;
// none scans the table or sorts.
func TestFailureReadsUseIndexes(t *testing.T) {
	s := openTemp(t, Config{})
	reads := s.FailureReads()
	for _, c := range []struct {
		query string
		args  []any
		index string
	}{
		{reads[0], []any{formatTime(time.Now()), 10}, "USING INDEX inbox_due ("},
		{reads[1], nil, "INDEX inbox_status_processed (status=? AND processed_at=?)"},
		{`SELECT id FROM inbox WHERE status = 'failed' AND processed_at IS NULL AND job_id = ? ORDER BY id DESC LIMIT ?`,
			[]any{"j", 10}, "INDEX inbox_status_processed (status=? AND processed_at=?)"},
	} {
		plan := explain(t, s, c.query, c.args...)
		if !slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, c.index) }) ||
			slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, "TEMP B-TREE") || strings.HasPrefix(l, "SCAN") }) {
			t.Errorf("plan of %q: %q, want %s", c.query, plan, c.index)
		}
	}
}
