// Package sqlite implements store.Store on SQLite through mattn/go-sqlite3: the embedded
// default of scribehook, one process, one database file. The contract's flows are
// store/internal/sqlcore's, shared with the PostgreSQL store; this package gives them its
// dialect (SQL text, times as text) and its write transactions on the held writer connection,
// and ingests on statements of its own.
//
// # Connections
//
// SQLite allows one writer at a time. The store therefore keeps two pools on the same file:
// a writer pool of exactly one connection, and a pool of read connections with query_only set.
// In WAL mode readers never block the writer nor the writer them. The store takes the writer
// connection once and keeps it with every write statement prepared on it (go-sqlite3 would
// prepare each statement again on every call); every write of the process queues for it, in
// arrival order. Write transactions begin IMMEDIATE (they take the write lock at BEGIN, so a
// read-then-write transaction never fails half-way with "database is locked", which a deferred
// BEGIN does without waiting for the busy timeout); the busy timeout only matters when another
// process holds the lock.
//
// Because the writer is a single connection, the function given to Apply must do its writes
// through its Tx: calling the Store's own write methods from inside it waits for the
// connection Apply holds, until the context ends.
//
// # Durability
//
// Config.Synchronous chooses SQLite's synchronous setting, in WAL mode:
//
//   - "full" (the default): a COMMIT that records something which exists nowhere else is
//     fsynced to the WAL before it returns, so it survives a power loss or an OS crash.
//   - "normal": the WAL is fsynced only at checkpoints. A COMMIT survives the process being
//     killed (kill -9, a panic), but the last commits can be lost on an OS crash or a power
//     loss; the database itself stays consistent.
//
// scribehook answers a delivery with 2xx only after its COMMIT, and the service does not
// resend a delivery it saw acknowledged, so only "full" keeps the promise that a 2xx means the
// delivery is stored. "normal" trades that for throughput on machines where the last second
// of deliveries may be lost. Group commit (store.Batcher) makes "full" cheap enough: one fsync
// covers every delivery that arrived while the previous batch was being written.
//
// With "full", only the transactions whose content exists nowhere else are durable at COMMIT:
// Ingest (the inbox rows, before the 2xx), the tokens (CreateToken, BindToken, RevokeToken),
// CreateJob and PutJob (a record the caller made), EnqueueSinkDeliveries outside Apply (nothing
// would queue those events again) and ReplayDeadLetter (an operator's decision). Every other
// write is derived from inbox rows that are already durable and commits with
// synchronous=NORMAL, set on the writer connection just before the transaction: Apply and
// everything its function writes, MarkInboxFailed, and the sink queue's claims, completions,
// retries, kills and ReleaseSinkLeases. This is safe because the WAL is one file written in
// order: a later FULL commit (the next ingest batch, or a checkpoint) fsyncs the frames of the
// NORMAL commits before it too, so a power loss or an OS crash can lose only the derived
// commits since the last durable one, never a delivery, and what it loses is derived again:
// the inbox rows they applied are pending again and are applied again at the next start (live
// messages get the same sequence numbers, since a session's rows are applied in order), and
// the events they queued are queued again under the same ids (at least once, exactly once in
// effect for sinks that use the id). What this does not cover: an event delivered to a sink
// whose completion is lost is delivered again (with the same id); a lost claim, retry or kill
// only gives a delivery more attempts.
//
// # Backups and upgrades
//
// Backup copies the database while a serve runs on it, from this process or another, through
// SQLite's online backup API: one consistent snapshot, written beside its destination and
// renamed into place once integrity_check passes. PendingMigrations says what Open would apply
// to a database's schema without applying it; Migrate applies it.
//
// # Storage format
//
// Times are stored as UTC text of one fixed width (2006-01-02T15:04:05.000000000Z), so text
// order is time order; zero times are NULL where a column may be empty. Job records are
// stored as the JSON json.Marshal gives for api.Job and returned decoded from exactly those
// bytes. Methods that take a limit treat a limit of zero or less as "no limit".
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Synchronous settings Config.Synchronous accepts.
const (
	SynchronousFull   = "full"
	SynchronousNormal = "normal"
)

// Defaults of Config.
const (
	DefaultBusyTimeout  = 5 * time.Second
	DefaultReadConns    = 4
	DefaultMinFreeBytes = 64 << 20
)

// ErrSchemaTooNew is returned by Open for a database written by a newer scribehook: its schema
// has migrations this binary does not know, and writing to it could corrupt them.
var ErrSchemaTooNew = sqlcore.ErrSchemaTooNew

// Options is Config's former name.
//
// Deprecated: use Config; Options goes in the next release.
type Options = Config

// Config configures Open; zero fields take the defaults.
type Config struct {
	// Path is the database file, created when missing. In-memory databases (":memory:",
	// mode=memory) are not supported: the writer and reader pools must share one database.
	Path string
	// Synchronous is "full" (default) or "normal"; see the package documentation.
	Synchronous string
	// BusyTimeout is how long a statement waits for a lock held by another process before it
	// fails with "database is locked" (default 5 s).
	BusyTimeout time.Duration
	// ReadConns is the size of the read pool (default 4).
	ReadConns int
	// MinFreeBytes is the free space the database's file system must keep for Ping to report
	// the store ready (default 64 MiB; negative: not checked). A full file system makes every
	// write fail, so a load balancer should stop sending deliveries before that.
	MinFreeBytes int64
	// Logger receives migration and setup messages; nil discards them.
	Logger logrus.FieldLogger
	// Now is the clock of the times the store stamps itself (a row processed, a delivery
	// delivered); nil is time.Now. Tests on a fake clock set it to prune what they made.
	Now func() time.Time

	fsys fileSystem // the operating system's answers; tests replace them
	// jobsFirst makes Search take its jobs-first plan for every query (tests: both plans give
	// the same hits).
	jobsFirst bool
}

// Store is the SQLite store.Store. Every method is safe for concurrent use.
type Store struct {
	// The contract's methods but Ingest, Ping and Close, shared with the PostgreSQL store:
	// reads on the read pool r, writes through the writer connection.
	*core
	w    *sql.DB // the writer pool: one connection
	r    *sql.DB // query_only connections
	log  *logrus.Entry
	path string
	// sync is Config.Synchronous, the setting of durable transactions.
	sync    string
	minFree int64
	fsys    fileSystem

	// wsem holds the writer connection (see writer.go). Only its holder uses the fields
	// below: the connection taken from w, the statements prepared on it, and its current
	// synchronous setting ("" when unknown).
	wsem      chan struct{}
	closed    atomic.Bool // set by Close: the writer is not opened again
	wconn     *sql.Conn
	stmts     [numStmts]*sql.Stmt
	stmtSQL   *[numStmts]string // stmtSQLFTS or stmtSQLPlain
	syncLevel string

	// beforeCommit, when set (tests), runs inside every write transaction just before COMMIT,
	// on the writer connection.
	beforeCommit func(op string, q sqlcore.Querier)

	closeOnce sync.Once
	closeErr  error
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Sessions = (*Store)(nil)
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Open opens (creating if needed) the database at opts.Path, applies pending migrations and
// returns the store.
func Open(ctx context.Context, opts Config) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w, err := sql.Open("sqlite3", writerDSN(opts))
	if err != nil {
		return nil, fmt.Errorf("open sqlite writer: %w", err)
	}
	// One connection that never expires: it is the single writer, and database/sql queues
	// every write for it instead of letting SQLite reject concurrent writers.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, log: logx.Entry(opts.Logger), path: opts.Path, sync: opts.Synchronous,
		minFree: opts.MinFreeBytes, fsys: opts.fsys, wsem: make(chan struct{}, 1), stmtSQL: &stmtSQLPlain}
	if err := s.setup(ctx, opts); err != nil {
		_ = s.Close()
		if !errors.Is(err, ErrSchemaTooNew) {
			err = explainOpen(opts.Path, opts.fsys, err, s.log)
		}
		return nil, err
	}
	return s, nil
}

func (s *Store) setup(ctx context.Context, opts Config) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("open sqlite %s: %w", opts.Path, err)
	}
	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		// Some file systems (network mounts) cannot hold a WAL; the store still works, with
		// readers and the writer blocking each other.
		s.log.WithField("journal_mode", mode).Warn("sqlite: WAL mode unavailable")
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	fts, err := hasFTS5(ctx, s.w)
	if err != nil {
		return err
	}
	d := dialectPlain
	s.stmtSQL = &stmtSQLPlain
	if fts {
		if err := s.ensureFTS(ctx); err != nil {
			return err
		}
		d, s.stmtSQL = dialectFTS, &stmtSQLFTS
		if opts.jobsFirst {
			search := *d.Search
			search.JobsFirstAbove = 0
			d.Search = &search
		}
	}
	if err := s.acquire(ctx); err != nil {
		return fmt.Errorf("open sqlite %s: %w", opts.Path, err)
	}
	s.release()
	r, err := sql.Open("sqlite3", readerDSN(opts))
	if err != nil {
		return fmt.Errorf("open sqlite readers: %w", err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	r.SetMaxIdleConns(opts.ReadConns)
	s.r = r
	s.core = sqlcore.NewCore(r, d, writes{s})
	s.core.SetClock(opts.Now)
	if err := r.PingContext(ctx); err != nil {
		return fmt.Errorf("open sqlite readers: %w", err)
	}
	s.log.WithFields(logrus.Fields{
		"path": opts.Path, "synchronous": opts.Synchronous, "read_conns": opts.ReadConns,
	}).Debug("sqlite: store open")
	return nil
}

func (o Config) withDefaults() (Config, error) {
	if o.Path == "" {
		return o, errors.New("sqlite: path is required")
	}
	if isMemory(o.Path) {
		return o, fmt.Errorf("sqlite: in-memory database %q is not supported, use a file", o.Path)
	}
	switch s := strings.ToLower(o.Synchronous); s {
	case "":
		o.Synchronous = SynchronousFull
	case SynchronousFull, SynchronousNormal:
		o.Synchronous = s
	default:
		return o, fmt.Errorf("sqlite: synchronous must be full or normal (got %q)", o.Synchronous)
	}
	if o.BusyTimeout < 0 {
		return o, fmt.Errorf("sqlite: busy timeout must not be negative (got %s)", o.BusyTimeout)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.ReadConns <= 0 {
		o.ReadConns = DefaultReadConns
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = DefaultMinFreeBytes
	}
	o.fsys = o.fsys.withDefaults()
	o.Logger = logx.OrDiscard(o.Logger)
	return o, nil
}

func isMemory(p string) bool {
	return p == ":memory:" || strings.HasPrefix(p, "file::memory:") || strings.Contains(p, "mode=memory")
}

// fileURI turns a path into an SQLite URI filename: the driver passes "file:" names to SQLite
// whole, so characters such as '?', '#' and '%' in the path must be escaped.
func fileURI(p string) string {
	return "file:" + (&url.URL{Path: p}).EscapedPath()
}

func writerDSN(o Config) string {
	v := url.Values{}
	v.Set("_journal_mode", "WAL")
	// Takes effect in a new database only (before its first table): freed pages are then given
	// back by Prune. An older database keeps its mode until Vacuum.
	v.Set("_auto_vacuum", "incremental")
	v.Set("_busy_timeout", strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10))
	v.Set("_synchronous", strings.ToUpper(o.Synchronous))
	v.Set("_txlock", "immediate")
	v.Set("_foreign_keys", "1")
	return fileURI(o.Path) + "?" + v.Encode()
}

func readerDSN(o Config) string {
	v := url.Values{}
	v.Set("_busy_timeout", strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10))
	v.Set("_query_only", "1")
	v.Set("_foreign_keys", "1")
	return fileURI(o.Path) + "?" + v.Encode()
}

// Ping checks that both pools answer a query, that the database file can be written, and
// that its file system has at least Config.MinFreeBytes free: a store that answers queries
// but cannot store a delivery is not ready.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping sqlite readers: %w", err)
	}
	if err := s.withWriter(ctx, func(c *sql.Conn) error { return c.PingContext(ctx) }); err != nil {
		return fmt.Errorf("ping sqlite writer: %w", err)
	}
	return s.checkDisk()
}

// Close closes both pools; the last connection to close checkpoints the WAL into the file.
// Later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		// Keeps the query planner's statistics current, as SQLite advises before closing;
		// bounded, so a lock held by another process (or a write that hangs) cannot stall
		// shutdown.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if s.acquire(ctx) == nil {
			if _, err := s.wconn.ExecContext(ctx, `PRAGMA optimize`); err != nil && !isReadOnly(err) {
				s.log.WithError(err).Debug("sqlite: optimize on close")
			}
			s.dropWriter()
			s.closed.Store(true)
			s.release()
		}
		s.closed.Store(true)
		cancel()
		errs = append(errs, s.w.Close())
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("close sqlite: %w", err)
		}
	})
	return s.closeErr
}

func isReadOnly(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrReadonly
}
