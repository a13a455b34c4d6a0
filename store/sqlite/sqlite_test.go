package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
	"github.com/scribehook/scribehook/store/storetest"
)

func openTemp(t *testing.T, opts Config) *Store {
	t.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(t.TempDir(), "scribehook.db")
	}
	s, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// writerExec runs query on the writer connection, outside any transaction.
func writerExec(t *testing.T, s *Store, query string) {
	t.Helper()
	if err := s.withWriter(t.Context(), func(c *sql.Conn) error {
		_, err := c.ExecContext(t.Context(), query)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// writerInt reads one integer on the writer connection.
func writerInt(t *testing.T, s *Store, query string) int {
	t.Helper()
	var n int
	if err := s.withWriter(t.Context(), func(c *sql.Conn) error {
		return c.QueryRowContext(t.Context(), query).Scan(&n)
	}); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Features{ReleasesLeases: true}, func(t *testing.T) store.Store { return openTemp(t, Config{}) })
}

func TestContractSynchronousNormal(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	storetest.Run(t, storetest.Features{ReleasesLeases: true}, func(t *testing.T) store.Store { return openTemp(t, Config{Synchronous: "NORMAL"}) })
}

func delivery(key string) store.Delivery {
	return store.Delivery{
		DedupeKey: key, Route: "job", Kind: api.CallbackJobSuccess, Event: "transcription.success",
		JobID: "job-1", PartitionKey: "job-1", Body: []byte(`{"id":"job-1"}`), ReceivedAt: time.Now(),
	}
}

// TestReopenKeepsRows: what Ingest reported committed is in the file after Close and Open.
func TestReopenKeepsRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir with space?#%", "db.sqlite")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	res, err := s.Ingest(t.Context(), []store.Delivery{delivery("a"), delivery("b"),
		{Route: "account", Quarantine: "not JSON", Body: []byte("x")}})
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not at the escaped path: %v", err)
	}

	s2 := openTemp(t, Config{Path: path})
	for i, key := range []string{"a", "b"} {
		row, err := s2.InboxRow(t.Context(), res[i].ID)
		if err != nil || row.DedupeKey != key {
			t.Errorf("row %d after reopen = %+v, %v", res[i].ID, row, err)
		}
	}
	if q, err := s2.Quarantined(t.Context(), 0); err != nil || len(q) != 1 || q[0].ID != res[2].ID {
		t.Errorf("quarantine after reopen = %+v, %v", q, err)
	}
	// Dedupe survives the restart too.
	again, err := s2.Ingest(t.Context(), []store.Delivery{delivery("a")})
	if err != nil || !again[0].Duplicate || again[0].ID != res[0].ID {
		t.Errorf("redelivery after reopen = %+v, %v; want duplicate of %d", again, err, res[0].ID)
	}
}

// TestReadOnlyFile: a database that cannot be written must fail Ingest, never report success.
func TestReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: file modes do not stop writes (TestQueryOnlyWriter covers the read-only case)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ro.db")
	s, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(path, 0o644) })
	s, err = Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Logf("Open refused the read-only file: %v", err) // an error surfaced too
		return
	}
	defer s.Close()
	if _, err := s.Ingest(t.Context(), []store.Delivery{delivery("a")}); err == nil {
		t.Fatal("Ingest into a read-only database file succeeded")
	}
	// Reads still work: the CLI can list a database it may not write.
	if _, err := s.InboxBacklog(t.Context()); err != nil {
		t.Errorf("InboxBacklog on a read-only file: %v", err)
	}
}

// TestQueryOnlyWriter makes the writer connection read-only, which works as root as well:
// every write method must return the error.
func TestQueryOnlyWriter(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := t.Context()
	res, err := s.Ingest(ctx, []store.Delivery{delivery("before")})
	if err != nil {
		t.Fatal(err)
	}
	writerExec(t, s, `PRAGMA query_only = 1`)
	checks := map[string]error{}
	_, checks["Ingest"] = s.Ingest(ctx, []store.Delivery{delivery("a")})
	checks["Apply"] = s.Apply(ctx, res[0].ID, func(context.Context, store.Tx) error { return nil })
	checks["MarkInboxFailed"] = s.MarkInboxFailed(ctx, res[0].ID, "x", time.Now().Add(time.Second))
	checks["PutJob"] = s.PutJob(ctx, store.JobRecord{Job: api.Job{ID: "j", Status: api.StatusQueued}})
	checks["CreateToken"] = s.CreateToken(ctx, store.Token{Hash: []byte{1}})
	for name, err := range checks {
		if err == nil {
			t.Errorf("%s on a read-only writer succeeded", name)
		} else if !strings.Contains(err.Error(), "readonly") && !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s error = %v, want the read-only error", name, err)
		}
	}
	if row, err := s.InboxRow(ctx, res[0].ID); err != nil || row.Status != store.InboxPending {
		t.Errorf("row after failed writes = %+v, %v", row, err)
	}
}

// TestDiskFull: SQLITE_FULL must surface from Ingest and leave nothing half-written.
func TestDiskFull(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := t.Context()
	pages := writerInt(t, s, `PRAGMA page_count`)
	writerExec(t, s, `PRAGMA max_page_count = `+strconv.Itoa(pages+2))
	var ds []store.Delivery
	for i := range 50 {
		d := delivery("full-" + strconv.Itoa(i))
		d.Body = make([]byte, 4096)
		ds = append(ds, d)
	}
	_, err := s.Ingest(ctx, ds)
	if err == nil {
		t.Fatal("Ingest past the size limit succeeded")
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("error = %v, want database or disk is full", err)
	}
	if n, err := s.InboxBacklog(ctx); err != nil || n != 0 {
		t.Errorf("backlog after a failed batch = %d, %v; want 0", n, err)
	}
}

// TestBusy: another process holding the write lock past the busy timeout makes Ingest fail
// with "database is locked" instead of waiting forever or succeeding.
func TestBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	s := openTemp(t, Config{Path: path, BusyTimeout: 50 * time.Millisecond})
	other := openTemp(t, Config{Path: path})
	ctx := t.Context()
	tx, err := other.begin(ctx, "hold the lock", sqlcore.Durable) // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now()
	_, err = s.Ingest(ctx, []store.Delivery{delivery("a")})
	if err == nil {
		t.Fatal("Ingest while another connection holds the write lock succeeded")
	}
	if !strings.Contains(err.Error(), "locked") && !strings.Contains(err.Error(), "busy") {
		t.Errorf("error = %v, want database is locked", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Errorf("failed after %s, before the busy timeout", d)
	}
	// Reads are not blocked by a writer in WAL mode.
	if _, err := s.InboxBacklog(ctx); err != nil {
		t.Errorf("read while locked: %v", err)
	}
	tx.Rollback()
	if _, err := s.Ingest(ctx, []store.Delivery{delivery("a")}); err != nil {
		t.Errorf("Ingest after the lock was released: %v", err)
	}
}

func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s := openTemp(t, Config{Path: path})
	writerExec(t, s, `INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 'x')`)
	_, err := Open(t.Context(), Config{Path: path})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema error = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "9999") {
		t.Errorf("error %q does not name the version", err)
	}
}

func TestMigrationsRecorded(t *testing.T) {
	s := openTemp(t, Config{})
	storetest.MigrationsRecorded(t, migrationFiles, s.r)
	var mode string
	if err := s.r.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode = %q, %v; want wal", mode, err)
	}
	// The readers must not write, even by mistake.
	if _, err := s.r.ExecContext(t.Context(), `DELETE FROM inbox`); err == nil {
		t.Error("a write through the read pool succeeded")
	}
}

func TestSynchronousSetting(t *testing.T) {
	for _, tc := range []struct {
		opt  string
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"", 2}, {"full", 2}, {"normal", 1}, {"NORMAL", 1}} {
		s := openTemp(t, Config{Synchronous: tc.opt})
		got := writerInt(t, s, `PRAGMA synchronous`)
		if got != tc.want {
			t.Errorf("Synchronous %q: PRAGMA synchronous = %d, want %d", tc.opt, got, tc.want)
		}
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, opts := range []Config{
		{},
		{Path: ":memory:"},
		{Path: "file::memory:?cache=shared"},
		{Path: filepath.Join(t.TempDir(), "x.db"), Synchronous: "off"},
		{Path: filepath.Join(t.TempDir(), "x.db"), BusyTimeout: -time.Second},
	} {
		if s, err := Open(t.Context(), opts); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", opts)
		}
	}
}

// TestCommitSurvivesKill: a child process ingests, reports the ids Ingest returned and is
// killed with SIGKILL before it can close anything; the rows must be in the file, in both
// synchronous modes (NORMAL loses commits only on an OS crash or power loss).
func TestCommitSurvivesKill(t *testing.T) {
	if path := os.Getenv("SCRIBEHOOK_TEST_KILL_DB"); path != "" {
		killedChild(path, os.Getenv("SCRIBEHOOK_TEST_KILL_SYNC"))
		return
	}
	for _, mode := range []string{"full", "normal"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "killed.db")
			cmd := exec.Command(os.Args[0], "-test.run", "^TestCommitSurvivesKill$")
			cmd.Env = append(os.Environ(), "SCRIBEHOOK_TEST_KILL_DB="+path, "SCRIBEHOOK_TEST_KILL_SYNC="+mode)
			out, err := cmd.Output()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
			}
			var ids []int64
			for _, f := range strings.Fields(string(out)) {
				id, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					t.Fatalf("child output %q", out)
				}
				ids = append(ids, id)
			}
			if len(ids) != 100 {
				t.Fatalf("child reported %d ids, want 100", len(ids))
			}
			s := openTemp(t, Config{Path: path})
			for i, id := range ids {
				row, err := s.InboxRow(t.Context(), id)
				if err != nil || row.DedupeKey != "kill-"+strconv.Itoa(i) {
					t.Errorf("row %d after SIGKILL = %q, %v", id, row.DedupeKey, err)
				}
			}
		})
	}
}

func killedChild(path, mode string) {
	s, err := Open(context.Background(), Config{Path: path, Synchronous: mode})
	if err != nil {
		os.Exit(3)
	}
	for i := range 100 {
		res, err := s.Ingest(context.Background(), []store.Delivery{delivery("kill-" + strconv.Itoa(i))})
		if err != nil {
			os.Exit(4)
		}
		// Reported only after COMMIT returned, like the receiver's 2xx.
		os.Stdout.WriteString(strconv.FormatInt(res[0].ID, 10) + "\n")
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func TestSessions(t *testing.T) {
	storetest.Sessions(t, func(t *testing.T) (storetest.SessionStore, func(t *testing.T) storetest.SessionStore) {
		path := filepath.Join(t.TempDir(), "scribehook.db")
		s := openTemp(t, Config{Path: path})
		return s, func(t *testing.T) storetest.SessionStore {
			// On disk, closed and opened again: what a restart finds.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return openTemp(t, Config{Path: path})
		}
	})
}
