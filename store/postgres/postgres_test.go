package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
	"github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/store/storetest"
)

// newSchema creates an empty schema, dropped when the test ends, and returns a DSN that uses
// it: every test starts from a new database as far as the store can tell.
func newSchema(t testing.TB) string {
	t.Helper()
	return testinfra.PGSchema(t).DSN
}

func open(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{DSN: dsn})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	testinfra.PGDSN(t)
	storetest.Run(t, storetest.Features{}, func(t *testing.T) store.Store { return open(t, newSchema(t)) })
}

func TestMigrationsRecorded(t *testing.T) {
	storetest.MigrationsRecorded(t, migrationFiles, open(t, newSchema(t)).db)
}

// TestConcurrentOpen: replicas starting together migrate the schema once, all of them open.
func TestConcurrentOpen(t *testing.T) {
	dsn := newSchema(t)
	const replicas = 6
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), Config{DSN: dsn, MaxConns: 2}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Open: %v", i, err)
			continue
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	ms, _ := sqlcore.LoadMigrations(migrationFiles)
	var n int
	if err := stores[0].db.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
	}
}

func TestSchemaTooNew(t *testing.T) {
	dsn := newSchema(t)
	s := open(t, dsn)
	if _, err := s.db.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, applied_at) VALUES (9999, now())`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), Config{DSN: dsn})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "9999") {
		t.Fatalf("Open of a newer schema error = %v, want ErrSchemaTooNew naming 9999", err)
	}
}

func TestOpenRejects(t *testing.T) {
	// A port nothing listens on: the error must come back, not hang.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	for name, opts := range map[string]Config{
		"no DSN":          {},
		"bad DSN":         {DSN: "postgres://%zz"},
		"negative conns":  {DSN: "postgres://x@" + closed + "/db", MaxConns: -1},
		"bad pool size":   {DSN: "postgres://x@" + closed + "/db?pool_max_conns=zero"},
		"connection fail": {DSN: "postgres://x@" + closed + "/db?sslmode=disable&connect_timeout=5"},
	} {
		s, err := Open(t.Context(), opts)
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

func TestOpenOptions(t *testing.T) {
	dsn := newSchema(t)
	s := open(t, dsn+"&pool_max_conns=3")
	if got := s.db.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("pool_max_conns=3 gave %d connections", got)
	}
	s2 := open(t, dsn+"&pool_max_conns=3")
	_ = s2.Close()
	s3, err := Open(t.Context(), Config{DSN: dsn + "&pool_max_conns=3", MaxConns: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if got := s3.db.Stats().MaxOpenConnections; got != 5 {
		t.Errorf("MaxConns 5 with pool_max_conns=3 gave %d connections, want 5", got)
	}
	missing, err := testinfra.WithSearchPath(testinfra.PGDSN(t), "no_such_schema")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Open(t.Context(), Config{DSN: missing}); err == nil {
		_ = s.Close()
		t.Error("Open with a search_path naming no schema succeeded")
	} else if !strings.Contains(err.Error(), "search_path") {
		t.Errorf("error %q does not name search_path", err)
	}
}

// TestAwkwardText: text PostgreSQL refuses (NUL, invalid UTF-8) must not fail a batch, and
// bytes that are stored as given come back exactly.
func TestAwkwardText(t *testing.T) {
	s := open(t, newSchema(t))
	ctx := t.Context()
	d := store.Delivery{
		DedupeKey: "live:a\x00b", Route: "job", Kind: api.CallbackLiveMessage, Event: "live.transcript",
		JobID: "a\x00b", PartitionKey: "a\x00b", Headers: map[string]string{"x-bad": "\xff\x00"},
		Body: []byte("{\"id\":\"a\\u0000b\",\"text\":\"\xff\"}"), ReceivedAt: time.Now(),
	}
	res, err := s.Ingest(ctx, []store.Delivery{d, {Route: "job\x00", Quarantine: "bad \xff", Body: []byte{0, 0xff}}})
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	row, err := s.InboxRow(ctx, res[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(row.Body) != string(d.Body) || row.JobID != "a\uFFFDb" || row.Headers["x-bad"] != "\uFFFD\uFFFD" {
		t.Errorf("row = %q %q %q", row.Body, row.JobID, row.Headers)
	}
	again, err := s.Ingest(ctx, []store.Delivery{d})
	if err != nil || !again[0].Duplicate || again[0].ID != res[0].ID {
		t.Errorf("redelivery = %+v, %v; want duplicate of %d", again, err, res[0].ID)
	}
	rec := store.JobRecord{Job: api.Job{ID: "a\x00b", Status: api.StatusDone, CustomMetadata: []byte("{\"k\":\"\xff\"}")}}
	if err := s.PutJob(ctx, rec); err != nil {
		t.Fatalf("PutJob: %v", err)
	}
	got, err := s.GetJob(ctx, "a\x00b")
	if err != nil || string(got.Job.CustomMetadata) != string(rec.Job.CustomMetadata) {
		t.Errorf("GetJob = %q, %v", got.Job.CustomMetadata, err)
	}
	if err := s.Apply(ctx, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AppendLiveMessage(ctx, store.LiveMessage{SessionID: "a\x00b", InboxID: res[0].ID, Payload: d.Body})
		return err
	}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if msgs, err := s.LiveMessages(ctx, "a\x00b", 0, 0); err != nil || len(msgs) != 1 || string(msgs[0].Payload) != string(d.Body) {
		t.Errorf("LiveMessages = %+v, %v", msgs, err)
	}
}

func TestQuarantineKeyMatchesSQLite(t *testing.T) {
	for _, c := range []struct {
		route string
		body  []byte
	}{{"account", []byte("garbage")}, {"", nil}, {"a", []byte("bc")}, {"ab", []byte("c")}} {
		if got, want := QuarantineKey(c.route, c.body), sqlite.QuarantineKey(c.route, c.body); got != want {
			t.Errorf("QuarantineKey(%q, %q) = %s, SQLite's %s", c.route, c.body, got, want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"":         "",
		"plain":    "plain",
		"Zoë":      "Zoë",
		"a\x00b":   "a\uFFFDb",
		"a\xffb":   "a\uFFFDb",
		"\x00\xff": "\uFFFD\uFFFD",
	} {
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
}

// sqlDB gives tests the pool, for checks the Store does not offer.
func sqlDB(s *Store) *sql.DB { return s.db }

func keyOf(i int) string { return fmt.Sprintf("k%04d", i) }

func TestSessions(t *testing.T) {
	testinfra.PGDSN(t)
	storetest.Sessions(t, func(t *testing.T) (storetest.SessionStore, func(t *testing.T) storetest.SessionStore) {
		dsn := newSchema(t)
		s := open(t, dsn)
		return s, func(t *testing.T) storetest.SessionStore {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, dsn)
		}
	})
}
