package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
	"github.com/scribehook/scribehook/store/sqlite/sqlitetest"
)

// backupSource opens a store at live.db in a directory of its own, holding a delivery for each
// key, and returns it with its path.
func backupSource(t *testing.T, keys ...string) (*Store, string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "live.db")
	s := openTemp(t, Config{Path: src})
	for _, k := range keys {
		if _, err := s.Ingest(t.Context(), []store.Delivery{delivery(k)}); err != nil {
			t.Fatal(err)
		}
	}
	return s, src
}

// TestBackupUnderWrites: a backup stepped one page at a time while another goroutine commits
// without pause finishes (the held read transaction keeps the backup from starting over at
// each commit), holds every row committed before it started, is one file in rollback-journal
// mode that passes integrity_check, and opens as a store at the latest schema.
func TestBackupUnderWrites(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	s := openTemp(t, Config{Path: src})
	for i := range 500 {
		if _, err := s.Ingest(t.Context(), []store.Delivery{delivery(fmt.Sprintf("before-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var during atomic.Int64
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := s.Ingest(ctx, []store.Delivery{delivery(fmt.Sprintf("during-%d", i))}); err != nil && ctx.Err() == nil {
				t.Errorf("ingest during the backup: %v", err)
				return
			}
			during.Add(1)
		}
	})
	dst := filepath.Join(dir, "copy.db")
	// Without the held snapshot this backup starts over at every commit and never ends.
	bctx, bcancel := context.WithTimeout(t.Context(), 30*time.Second)
	res, err := Backup(bctx, src, dst, BackupOptions{PagesPerStep: 1, Pause: time.Millisecond})
	bcancel()
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if during.Load() == 0 {
		t.Fatal("nothing was written during the backup: the test proves nothing")
	}
	if res.Steps < res.Pages || res.Pages < 2 {
		t.Errorf("backup took %d steps for %d pages, want one page a step", res.Steps, res.Pages)
	}
	ms, _ := sqlcore.LoadMigrations(migrationFiles)
	if res.SchemaVersion != ms[len(ms)-1].Version {
		t.Errorf("schema version %d, want %d", res.SchemaVersion, ms[len(ms)-1].Version)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Size() != res.Bytes {
		t.Errorf("backup file: %v, size %d; reported %d bytes", err, fi.Size(), res.Bytes)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".copy.db*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	raw, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	// Bytes 18 and 19 of the header are 1 in rollback-journal mode, 2 in WAL mode.
	if raw[18] != 1 || raw[19] != 1 {
		t.Errorf("header format bytes %d %d, want 1 1: the copy is not one self-contained file", raw[18], raw[19])
	}
	c := openTemp(t, Config{Path: dst})
	n := writerInt(t, c, `SELECT count(*) FROM inbox WHERE dedupe_key LIKE 'before-%'`)
	if n != 500 {
		t.Errorf("the copy holds %d of the 500 rows committed before the backup", n)
	}
	// The snapshot is a prefix of the commits: the rows written during the backup that it holds
	// are the first ones, without a gap.
	m := writerInt(t, c, `SELECT count(*) FROM inbox WHERE dedupe_key LIKE 'during-%'`)
	if m > 0 && writerInt(t, c, fmt.Sprintf(`SELECT count(*) FROM inbox WHERE dedupe_key = 'during-%d'`, m-1)) != 1 {
		t.Errorf("the copy's %d rows written during the backup are not the first %d", m, m)
	}
}

// TestBackupWhileStopped: the database of a stopped serve (no -wal nor -shm beside it) is
// copied too, and the backup leaves the source's directory as it found it.
func TestBackupWhileStopped(t *testing.T) {
	s, src := backupSource(t, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "copy.db")
	if _, err := Backup(t.Context(), src, dst, BackupOptions{}); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if n := writerInt(t, openTemp(t, Config{Path: dst}), `SELECT count(*) FROM inbox`); n != 1 {
		t.Errorf("copy holds %d rows, want 1", n)
	}
}

// TestBackupFileMode: the copy holds every delivery received, so it is readable by its owner
// only (0600, docs/operations.md), also when it replaces an earlier file that others could
// read.
func TestBackupFileMode(t *testing.T) {
	_, src := backupSource(t, "a")
	dst := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(dst, []byte("an older copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(t.Context(), src, dst, BackupOptions{}); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("backup file mode %#o, want 0600", m)
	}
}

func TestBackupRefuses(t *testing.T) {
	_, src := backupSource(t)
	dir := filepath.Dir(src)
	plain := filepath.Join(dir, "plain.db")
	sqlitetest.ForeignDatabase(t, plain)
	for _, c := range []struct{ name, src, dst, want string }{
		{"missing source", filepath.Join(dir, "none.db"), filepath.Join(dir, "b.db"), "no such file"},
		{"itself", src, src, "is the database itself"},
		{"not scribehook's", plain, filepath.Join(dir, "c.db"), "is it a scribehook database?"},
		{"missing directory", src, filepath.Join(dir, "no", "b.db"), "create temporary file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Backup(t.Context(), c.src, c.dst, BackupOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Backup error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Errorf("a backup of a missing database created it: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestBackupRollbackJournal: a database not in WAL mode is copied too, in one step.
func TestBackupRollbackJournal(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "old.db")
	db := oldDatabase(t, src, 1)
	if _, err := db.Exec(`PRAGMA journal_mode = DELETE`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	res, err := Backup(t.Context(), src, filepath.Join(dir, "copy.db"), BackupOptions{PagesPerStep: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 1 || res.SchemaVersion != 1 {
		t.Errorf("backup of a rollback-journal database: %d steps at version %d, want 1 step at 1", res.Steps, res.SchemaVersion)
	}
}
