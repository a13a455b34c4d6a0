package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// migrate applies the pending migrations in one transaction, under an advisory lock keyed by
// the schema: replicas starting at once wait for each other, and the later ones find the
// schema current. It writes nothing when the schema is already current, so a role that may
// only read still opens the store.
func (s *Store) migrate(ctx context.Context) error {
	schema, err := currentSchema(ctx, s.db)
	if err != nil {
		return err
	}
	return migrator(schema, s.log).Run(ctx, s.db)
}

// currentSchema is the schema the DSN's search_path selects, where the tables are.
func currentSchema(ctx context.Context, db *sql.DB) (string, error) {
	var schema sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", fmt.Errorf("postgres: read current schema: %w", err)
	}
	if !schema.Valid {
		return "", errors.New("postgres: no schema of the search_path exists: create it or fix search_path in the DSN")
	}
	return schema.String, nil
}

// migrator applies this store's migrations in schema, logging each one applied to log.
func migrator(schema string, log *logrus.Entry) sqlcore.Migrator {
	m := sqlcore.Migrator{
		Files:  migrationFiles,
		Prefix: "postgres: ",
		Exists: `SELECT to_regclass('schema_migrations') IS NOT NULL`,
		CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			applied_at TIMESTAMPTZ NOT NULL
		)`,
		Record: func(ctx context.Context, tx *sql.Tx, version int) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())`, version)
			return err
		},
		// Held until COMMIT; concurrent CREATE TABLE IF NOT EXISTS alone is not safe (two
		// sessions can both pass the check and one then fails on a duplicate catalog row).
		Lock: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey(schema))
			return err
		},
		OneTransaction: true,
		After: map[int]func(ctx context.Context, tx *sql.Tx) error{
			16: func(ctx context.Context, tx *sql.Tx) error { return sqlcore.BackfillSearch(ctx, tx, dialect) },
		},
	}
	if log != nil {
		m.Applied = func(name string) {
			log.WithFields(logrus.Fields{"migration": name, "schema": schema}).Info("postgres: migration applied")
		}
	}
	return m
}

// migrationLockKey is the advisory lock of one schema's migrations: schemas of one database
// (one per test, or per tenant) migrate independently.
func migrationLockKey(schema string) int64 { return sqlcore.LockKey("migrate", schema) }

// PendingMigrations says what opening the database of opts would do to its schema, without
// doing it: it only reads the schema version, so replicas may be running on the database
// meanwhile. A database written by a newer scribehook gives the plan and an error wrapping
// ErrSchemaTooNew.
func PendingMigrations(ctx context.Context, opts Config) (store.MigrationPlan, error) {
	cfg, _, err := parseDSN(opts)
	if err != nil {
		return store.MigrationPlan{}, err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	db.SetMaxOpenConns(1)
	schema, err := currentSchema(ctx, db)
	if err != nil {
		return store.MigrationPlan{}, err
	}
	return migrator(schema, nil).Plan(ctx, db)
}

// Migrate applies the migrations the database of opts lacks, as Open does, and returns the
// plan it carried out (PendingMigrations just before).
func Migrate(ctx context.Context, opts Config) (store.MigrationPlan, error) {
	return sqlcore.Migrate(func() (store.MigrationPlan, error) { return PendingMigrations(ctx, opts) },
		func() (io.Closer, error) { return Open(ctx, opts) })
}
