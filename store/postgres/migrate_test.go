package postgres

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
	"github.com/scribehook/scribehook/store/storetest"
)

// TestMigrations runs the migration checks on schemas built at earlier schema versions.
func TestMigrations(t *testing.T) {
	storetest.Migrations(t, storetest.Database{
		Dialect: dialect,
		Files:   migrationFiles,
		New: func(t *testing.T, version int) (*sql.DB, func(*testing.T) store.Store) {
			dsn := newSchema(t)
			cfg, _, err := parseDSN(Config{DSN: dsn})
			if err != nil {
				t.Fatal(err)
			}
			db := stdlib.OpenDB(*cfg)
			t.Cleanup(func() { _ = db.Close() })
			schema, err := currentSchema(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			m := migrator(schema, nil)
			m.UpTo = version
			if err := m.Run(t.Context(), db); err != nil {
				t.Fatal(err)
			}
			return db, func(t *testing.T) store.Store { return open(t, dsn) }
		},
	})
}

// TestLockKeys pins the advisory locks' keys: replicas of two versions, during a rolling
// update, must take the same ones.
func TestLockKeys(t *testing.T) {
	if got := migrationLockKey("public"); got != -284276066345752586 {
		t.Errorf("migrationLockKey(public) = %d", got)
	}
	if got := sqlcore.JobLockKey("job-1"); got != 6056380095383140454 {
		t.Errorf("JobLockKey(job-1) = %d", got)
	}
}
