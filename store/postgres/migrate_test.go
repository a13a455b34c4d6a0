package postgres

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/storetest"
)

// versions is a schema built at an earlier schema version, then opened by the store.
func versions() storetest.Database {
	var dsn string
	return storetest.Database{
		Dialect: dialect,
		Files:   migrationFiles,
		New: func(t *testing.T, version int) *sql.DB {
			dsn = newSchema(t)
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
			return db
		},
		Open: func(t *testing.T) store.Store { return open(t, dsn) },
	}
}

func TestMigrationRedactsLegacyTokens(t *testing.T) {
	storetest.MigrationRedactsLegacyTokens(t, versions())
}

func TestMigrationsFromEveryVersion(t *testing.T) {
	storetest.MigrationsFromEveryVersion(t, versions())
}
