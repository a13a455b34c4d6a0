package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/scribehook/scribehook/store"
)

// ErrSchemaTooNew is returned by a store's Open for a database written by a newer scribehook:
// its schema has migrations this binary does not know, and writing to it could corrupt them.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// Migration is one embedded file, named NNNN_description.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Summary is the text of the migration's first comment line: what `scribehook migrate
// --check` says it does. Every migration file starts with a comment saying why it exists.
func (m Migration) Summary() string {
	for line := range strings.Lines(m.SQL) {
		line = strings.TrimSpace(line)
		if text, ok := strings.CutPrefix(line, "--"); ok {
			if text = strings.TrimSpace(text); text != "" {
				return text
			}
			continue
		}
		if line != "" {
			break
		}
	}
	return ""
}

// LoadMigrations reads the files of the directory migrations of files, in version order.
func LoadMigrations(files fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(files, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version and '_'", e.Name())
		}
		b, err := fs.ReadFile(files, path.Join("migrations", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	if len(ms) == 0 {
		return nil, errors.New("read migrations: none embedded")
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].Name, ms[i].Name, ms[i].Version)
		}
	}
	return ms, nil
}

// Migrator applies a store's embedded migrations, each together with its schema_migrations
// row. It writes nothing when the schema is current, so a database that may only be read
// still opens (for listing) and fails only on writes.
type Migrator struct {
	Files fs.FS
	// Prefix starts every error message (the store's name, or "").
	Prefix string
	// Exists selects whether schema_migrations exists (a boolean, or a count of 0 or 1): the
	// version of a new database is 0.
	Exists string
	// CreateTable creates schema_migrations when it does not exist.
	CreateTable string
	// Record inserts the schema_migrations row of version.
	Record func(ctx context.Context, tx *sql.Tx, version int) error
	// Lock, when set, runs first in every migration transaction: concurrent CREATE TABLE IF
	// NOT EXISTS alone is not safe on PostgreSQL.
	Lock func(ctx context.Context, tx *sql.Tx) error
	// OneTransaction applies every pending migration in one transaction (PostgreSQL, whose DDL
	// is transactional and whose lock is per transaction); otherwise each migration has its own
	// (SQLite: a long first migration does not hold the write lock for the later ones).
	OneTransaction bool
	// Applied is told the name of each migration once it is committed.
	Applied func(name string)
	// After runs Go steps of migrations, by version, in the migration's transaction after its
	// file: work SQL alone cannot do the way the store does it (indexing stored transcripts).
	After map[int]func(ctx context.Context, tx *sql.Tx) error
	// UpTo, when positive, stops at that version: tests build the schema of an earlier
	// version, to upgrade it from there.
	UpTo int
}

// load reads the migrations, up to UpTo when it is set.
func (m Migrator) load() ([]Migration, error) {
	ms, err := LoadMigrations(m.Files)
	if err != nil {
		return nil, fmt.Errorf("%s%w", m.Prefix, err)
	}
	if m.UpTo > 0 {
		i := slices.IndexFunc(ms, func(mg Migration) bool { return mg.Version > m.UpTo })
		if i == 0 {
			return nil, fmt.Errorf("%sno migration up to version %d", m.Prefix, m.UpTo)
		}
		if i > 0 {
			ms = ms[:i]
		}
	}
	return ms, nil
}

// Plan says what Run would do on q's database, writing nothing: its version, the latest
// version, and the migrations between them. A database newer than the migrations gives the
// plan and an error wrapping ErrSchemaTooNew.
func (m Migrator) Plan(ctx context.Context, q Querier) (store.MigrationPlan, error) {
	ms, err := m.load()
	if err != nil {
		return store.MigrationPlan{}, err
	}
	current, err := m.version(ctx, q)
	if err != nil {
		return store.MigrationPlan{}, err
	}
	return plan(ms, current), m.tooNew(current, ms)
}

// Migrate is a store's Migrate: the plan (PendingMigrations), then opening the store, which
// applies it, and closing it. It returns the plan it carried out.
func Migrate(plan func() (store.MigrationPlan, error), open func() (io.Closer, error)) (store.MigrationPlan, error) {
	p, err := plan()
	if err != nil {
		return p, err
	}
	s, err := open()
	if err != nil {
		return p, err
	}
	return p, s.Close()
}

// PlanNew is the plan of a database that does not exist yet: every migration.
func (m Migrator) PlanNew() (store.MigrationPlan, error) {
	ms, err := m.load()
	if err != nil {
		return store.MigrationPlan{}, err
	}
	return plan(ms, 0), nil
}

func plan(ms []Migration, current int) store.MigrationPlan {
	p := store.MigrationPlan{Current: current, Latest: ms[len(ms)-1].Version}
	for _, mg := range ms {
		if mg.Version > current {
			p.Pending = append(p.Pending, store.Migration{Version: mg.Version, Name: mg.Name, Summary: mg.Summary()})
		}
	}
	return p
}

func (m Migrator) tooNew(current int, ms []Migration) error {
	if latest := ms[len(ms)-1].Version; current > latest {
		return fmt.Errorf("%sschema version %d, binary knows up to %d: %w", m.Prefix, current, latest, ErrSchemaTooNew)
	}
	return nil
}

// Run applies the pending migrations. The version is read again inside each transaction,
// after its lock: another process may have migrated in the meantime.
func (m Migrator) Run(ctx context.Context, db *sql.DB) error {
	ms, err := m.load()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].Version
	current, err := m.version(ctx, db)
	if err != nil {
		return err
	}
	for current < latest {
		if current, err = m.step(ctx, db, ms, current); err != nil {
			return err
		}
	}
	return m.tooNew(current, ms)
}

// version is the highest applied migration, 0 for a new database.
func (m Migrator) version(ctx context.Context, q Querier) (int, error) {
	var exists bool
	if err := q.QueryRowContext(ctx, m.Exists).Scan(&exists); err != nil {
		return 0, fmt.Errorf("%sread schema version: %w", m.Prefix, err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("%sread schema version: %w", m.Prefix, err)
	}
	return v, nil
}

// step runs one migration transaction and returns the version it leaves.
func (m Migrator) step(ctx context.Context, db *sql.DB, ms []Migration, before int) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return before, fmt.Errorf("%smigrate: begin: %w", m.Prefix, err)
	}
	defer func() { _ = tx.Rollback() }()
	if m.Lock != nil {
		if err := m.Lock(ctx, tx); err != nil {
			return before, fmt.Errorf("%smigrate: lock: %w", m.Prefix, err)
		}
	}
	if _, err := tx.ExecContext(ctx, m.CreateTable); err != nil {
		return before, fmt.Errorf("%screate schema_migrations: %w", m.Prefix, err)
	}
	current, err := m.version(ctx, tx)
	if err != nil {
		return before, err
	}
	var applied []string
	for _, mg := range ms {
		if mg.Version <= current {
			continue
		}
		if _, err := tx.ExecContext(ctx, mg.SQL); err != nil {
			return before, fmt.Errorf("%smigration %s: %w", m.Prefix, mg.Name, err)
		}
		if after := m.After[mg.Version]; after != nil {
			if err := after(ctx, tx); err != nil {
				return before, fmt.Errorf("%smigration %s: %w", m.Prefix, mg.Name, err)
			}
		}
		if err := m.Record(ctx, tx, mg.Version); err != nil {
			return before, fmt.Errorf("%smigration %s: record version: %w", m.Prefix, mg.Name, err)
		}
		applied, current = append(applied, mg.Name), mg.Version
		if !m.OneTransaction {
			break
		}
	}
	if err := tx.Commit(); err != nil {
		return before, fmt.Errorf("%smigrate: commit: %w", m.Prefix, err)
	}
	if m.Applied != nil {
		for _, name := range applied {
			m.Applied(name)
		}
	}
	return current, nil
}
