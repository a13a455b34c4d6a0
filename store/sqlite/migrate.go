package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// migrator applies this store's embedded migrations, each in its own IMMEDIATE transaction
// (the writer pool begins them so), logging each one applied to log.
func migrator(log *logrus.Entry) sqlcore.Migrator {
	m := sqlcore.Migrator{
		Files:  migrationFiles,
		Exists: `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`,
		CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			applied_at TEXT NOT NULL
		) STRICT`,
		Record: func(ctx context.Context, tx *sql.Tx, version int) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				version, formatTime(time.Now()))
			return err
		},
	}
	m.After = map[int]func(ctx context.Context, tx *sql.Tx) error{
		18: func(ctx context.Context, tx *sql.Tx) error { return sqlcore.BackfillSearch(ctx, tx, dialect) },
	}
	if log != nil {
		m.Applied = func(name string) { log.WithField("migration", name).Info("sqlite: migration applied") }
	}
	return m
}

// migrate applies the pending migrations.
func (s *Store) migrate(ctx context.Context) error {
	return migrator(s.log).Run(ctx, s.w)
}

// PendingMigrations says what opening the database at path would do to its schema, without
// doing it: it reads the schema version on a read-only connection of its own, so serve may be
// running on the database meanwhile. A path where no database exists yet gives every
// migration. A database written by a newer scribehook gives the plan and an error wrapping
// ErrSchemaTooNew.
func PendingMigrations(ctx context.Context, path string) (store.MigrationPlan, error) {
	m := migrator(nil)
	if isMemory(path) {
		return m.PlanNew()
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return m.PlanNew()
	}
	v := url.Values{}
	v.Set("mode", "ro")
	v.Set("_busy_timeout", strconv.FormatInt(DefaultBusyTimeout.Milliseconds(), 10))
	db, err := sql.Open("sqlite3", fileURI(path)+"?"+v.Encode())
	if err != nil {
		return store.MigrationPlan{}, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	defer db.Close()
	p, err := m.Plan(ctx, db)
	if err != nil {
		return p, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return p, nil
}

// Migrate applies the migrations the database of opts lacks, as Open does, and returns the
// plan it carried out (PendingMigrations just before).
func Migrate(ctx context.Context, opts Config) (store.MigrationPlan, error) {
	return sqlcore.Migrate(func() (store.MigrationPlan, error) { return PendingMigrations(ctx, opts.Path) },
		func() (io.Closer, error) { return Open(ctx, opts) })
}
