package sqlite

import (
	"context"
	"fmt"
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
	s := openTemp(t, Options{Path: path})
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
	s := openTemp(t, Options{Path: path})
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
	s := openTemp(t, Options{Path: filepath.Join(t.TempDir(), "scribehook.db")})
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
