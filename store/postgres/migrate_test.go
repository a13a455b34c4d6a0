package postgres

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/storetest"
)

// TestMigrations runs the migration checks on schemas built at earlier schema versions.
func TestMigrations(t *testing.T) {
	storetest.Migrations(t, storetest.Database{
		Dialect: dialect,
		Files:   migrationFiles,
		New: func(t *testing.T, version int) (*sql.DB, func(*testing.T) store.Store) {
			dsn := newSchema(t)
			cfg, _, err := parseDSN(Options{DSN: dsn})
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
