// Package postgres implements store.Store on PostgreSQL through database/sql and pgx's stdlib
// adapter: the store of several scribehook replicas sharing one database. The contract's flows
// are store/internal/sqlcore's, shared with the SQLite store; this package gives them its
// dialect (SQL text, locks, a write transaction on a *sql.Tx, or on the pool for a single
// statement) and ingests and queues sink deliveries in batches of its own.
//
// # Replicas
//
// Every guarantee of the contract holds across processes, not only across goroutines, because
// each rests on the database rather than on the process:
//
//   - Dedupe: inbox.dedupe_key is UNIQUE and Ingest inserts with ON CONFLICT DO NOTHING. Two
//     replicas ingesting the same delivery at once store it once: the second insert waits for
//     the first transaction and then finds the row. Each batch inserts its rows in dedupe key
//     order, so two batches sharing keys never wait for each other in a cycle (a deadlock).
//   - Apply locks its inbox row from its first statement (the UPDATE that marks it done): a
//     second replica applying the same row waits, then sees it done and gets
//     store.ErrAlreadyApplied. Apply's function may call the Store's own methods (they use
//     other connections of the pool), but those do not see its uncommitted writes and must not
//     wait for rows it has locked.
//   - Tx.Job takes a transaction-level advisory lock on the job id before it reads: Applies of
//     one job on several replicas run one after the other, so no read-modify-write of a record
//     is lost.
//   - Live sequence numbers come from a per-session counter row (live_sequences) updated in the
//     Apply's transaction and locked until it ends: the Applies of one session take their
//     numbers in commit order, without gaps even when one rolls back.
//   - Sink claims select with FOR UPDATE SKIP LOCKED and set a lease (lease_until): two claimers
//     never get the same delivery, and a delivery whose claimer died is claimed again once its
//     lease has ended.
//   - Migrations run under a transaction-level advisory lock: replicas starting together apply
//     them once.
//
// # Storage format
//
// Times are TIMESTAMPTZ, which keeps microseconds: finer parts of a time.Time are truncated.
// Bytes that must come back exactly (bodies, job records, live payloads, sink events) are BYTEA.
// PostgreSQL text cannot hold NUL nor invalid UTF-8, which decoded JSON strings can contain
// (a "\u0000" escape), so text columns receive strings with those replaced by U+FFFD: such an
// id is stored altered rather than failing a whole ingest batch. Methods that take a limit
// treat a limit of zero or less as "no limit".
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// DefaultMaxConns is the pool size when neither Config.MaxConns nor the DSN's pool_max_conns
// sets one.
const DefaultMaxConns = 10

// ErrSchemaTooNew is returned by Open for a database written by a newer scribehook: its schema
// has migrations this binary does not know, and writing to it could corrupt them.
var ErrSchemaTooNew = sqlcore.ErrSchemaTooNew

// Options is Config's former name.
//
// Deprecated: use Config; Options goes in the next release.
type Options = Config

// Config configures Open; zero fields take the defaults.
type Config struct {
	// DSN is a PostgreSQL connection string, URL (postgres://user@host:5432/db?sslmode=…) or
	// key=value form, as pgx reads it. Its search_path parameter selects the schema. A
	// pool_max_conns parameter sets the pool size when MaxConns is zero.
	DSN string
	// MaxConns bounds the pool of connections (default DefaultMaxConns). Each Apply holds one
	// connection while its function runs.
	MaxConns int
	// Logger receives migration and setup messages; nil discards them.
	Logger logrus.FieldLogger
	// Now is the clock of the times the store stamps itself (a row processed, a delivery
	// delivered); nil is time.Now. Tests on a fake clock set it to prune what they made.
	Now func() time.Time
}

// Store is the PostgreSQL store.Store. Every method is safe for concurrent use, from any
// number of processes sharing the database.
type Store struct {
	// The contract's methods but Ingest, Ping and Close, shared with the SQLite store.
	*core
	db  *sql.DB
	log *logrus.Entry

	closeOnce sync.Once
	closeErr  error
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Sessions = (*Store)(nil)
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Open connects to the database, applies pending migrations and returns the store.
func Open(ctx context.Context, opts Config) (*Store, error) {
	if opts.DSN == "" {
		return nil, errors.New("postgres: DSN is required")
	}
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("postgres: max conns must not be negative (got %d)", opts.MaxConns)
	}
	opts.Logger = logx.OrDiscard(opts.Logger)
	cfg, maxConns, err := parseDSN(opts)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	// Connections are recycled now and then so that a replica follows a failover or a
	// configuration reload of the server without being restarted.
	db.SetConnMaxLifetime(30 * time.Minute)
	s := &Store{db: db, log: logx.Entry(opts.Logger)}
	s.core = sqlcore.NewCore(db, dialect, writes{s})
	s.core.SetClock(opts.Now)
	if err := s.setup(ctx, cfg, maxConns); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) setup(ctx context.Context, cfg *pgx.ConnConfig, maxConns int) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("postgres: connect to %s:%d/%s: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.log.WithFields(logrus.Fields{
		"host": cfg.Host, "port": cfg.Port, "database": cfg.Database, "max_conns": maxConns,
	}).Debug("postgres: store open")
	return nil
}

// parseDSN reads opts.DSN and the pool size it and opts give.
func parseDSN(opts Config) (*pgx.ConnConfig, int, error) {
	cfg, err := pgx.ParseConfig(opts.DSN)
	if err != nil {
		// pgx's message never repeats the password.
		return nil, 0, fmt.Errorf("postgres: parse DSN: %w", err)
	}
	maxConns := opts.MaxConns
	// pgx passes parameters it does not know to the server, which would refuse this one.
	if v, ok := cfg.RuntimeParams["pool_max_conns"]; ok {
		delete(cfg.RuntimeParams, "pool_max_conns")
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, 0, fmt.Errorf("postgres: DSN pool_max_conns must be a positive integer (got %q)", v)
		}
		if maxConns == 0 {
			maxConns = n
		}
	}
	if maxConns == 0 {
		maxConns = DefaultMaxConns
	}
	return cfg, maxConns, nil
}

// Ping checks that the database answers a query (readiness).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Close closes the pool. Later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("close postgres: %w", err)
		}
	})
	return s.closeErr
}
