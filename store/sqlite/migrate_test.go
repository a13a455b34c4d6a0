package sqlite

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
	"github.com/scribehook/scribehook/store/storetest"
)

// oldDatabase creates a database at path with the migrations up to version applied.
func oldDatabase(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", writerDSN(Config{Path: path, Synchronous: SynchronousFull, BusyTimeout: DefaultBusyTimeout}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	m := migrator(nil)
	m.UpTo = version
	if err := m.Run(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestMigrations runs the migration checks on databases built at earlier schema versions in
// files of their own.
func TestMigrations(t *testing.T) {
	storetest.Migrations(t, storetest.Database{
		Dialect: dialect,
		Files:   migrationFiles,
		New: func(t *testing.T, version int) (*sql.DB, func(*testing.T) store.Store) {
			path := filepath.Join(t.TempDir(), "old.db")
			return oldDatabase(t, path, version), func(t *testing.T) store.Store { return openTemp(t, Config{Path: path}) }
		},
	})
}

// TestPendingMigrations: at every version, PendingMigrations names the migrations after it,
// each with its summary, and changes nothing; Migrate then applies exactly those.
func TestPendingMigrations(t *testing.T) {
	ms, err := sqlcore.LoadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	latest := ms[len(ms)-1].Version
	for _, at := range ms {
		path := filepath.Join(t.TempDir(), "old.db")
		raw := oldDatabase(t, path, at.Version)
		plan, err := PendingMigrations(t.Context(), path)
		if err != nil {
			t.Fatalf("at %d: %v", at.Version, err)
		}
		if plan.Current != at.Version || plan.Latest != latest || len(plan.Pending) != latest-at.Version {
			t.Errorf("at %d: plan %+v", at.Version, plan)
		}
		for i, m := range plan.Pending {
			if m.Version != at.Version+1+i || m.Name != ms[at.Version+i].Name || m.Summary == "" || strings.HasPrefix(m.Summary, "-") {
				t.Errorf("at %d: pending %d is %+v", at.Version, i, m)
			}
		}
		var n int
		if err := raw.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != at.Version {
			t.Errorf("at %d: the check left %d schema_migrations rows (%v)", at.Version, n, err)
		}
	}
	missing := filepath.Join(t.TempDir(), "none.db")
	plan, err := PendingMigrations(t.Context(), missing)
	if err != nil || plan.Current != 0 || len(plan.Pending) != len(ms) {
		t.Errorf("plan of a new database: %+v, %v", plan, err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the check created the database: %v", err)
	}
	applied, err := Migrate(t.Context(), Config{Path: missing})
	if err != nil || len(applied.Pending) != len(ms) {
		t.Errorf("Migrate of a new database: %+v, %v", applied, err)
	}
	if plan, err := PendingMigrations(t.Context(), missing); err != nil || plan.Current != latest || len(plan.Pending) != 0 {
		t.Errorf("plan after Migrate: %+v, %v", plan, err)
	}
}
