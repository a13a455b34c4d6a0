package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/mattn/go-sqlite3"

	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// The statements of the writer: the write core's (sqlcore.Stmt), with this dialect's own
// after them, every one prepared once on the writer connection (go-sqlite3 would otherwise
// prepare each statement again on every call).
const (
	stInboxInsert = sqlcore.NumStmts + iota
	stInboxFind
	stQuarantineInsert
	stQuarantineFind
	stEventInsert
	stEventFind
	stSinkEnqueue
	numStmts
)

// dialect is how SQLite differs from PostgreSQL in the shared code. Times are fixed-width UTC
// text; a write transaction holds the database's only write lock from its BEGIN IMMEDIATE, so
// nothing is locked row by row; the writer's transactions are serial, so two messages of a
// session never read the same max(seq), and the primary key (session_id, seq) makes max(seq)
// one seek.
var dialect = sqlcore.Dialect{
	Time:  func(t time.Time) any { return formatTime(t) },
	Limit: func(n int) any { return limitArg(n) },
	// The bytes are bound as TEXT through a string that views them: the driver hands a bound
	// text to SQLite, which copies it (SQLITE_TRANSIENT), within the statement's call, and no
	// caller changes its bytes during that call. A string(b) would copy a 2-hour result's
	// record and event once more (1.7 MB each).
	JSON: func(b []byte) any { return unsafe.String(unsafe.SliceData(b), len(b)) },
	// mattn/go-sqlite3 copies each BLOB out of SQLite with C.GoBytes.
	OwnedBytes: true,
	SQL: map[sqlcore.Stmt]string{
		sqlcore.StLiveAppend: `INSERT INTO live_messages (session_id, seq, type, category,
		created_at, received_at, inbox_id, payload)
		VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM live_messages WHERE session_id = ?1),
		?2, ?3, ?4, ?5, ?6, ?7) RETURNING seq`,
		// SQLite computes an INSERT's SELECT whole before inserting when it reads the table
		// inserted into, so max(seq) is each session's last before the statement, and
		// row_number() numbers the session's rows after it in the order of the ids (j.key).
		sqlcore.StLiveAppendRows: `INSERT INTO live_messages (session_id, seq, type, category,
		created_at, received_at, inbox_id)
		SELECT i.job_id, coalesce((SELECT max(m.seq) FROM live_messages m WHERE m.session_id = i.job_id), 0)
			+ row_number() OVER (PARTITION BY i.job_id ORDER BY j.key),
			i.message_type, i.category, i.message_at, i.received_at, i.id
		FROM json_each(?) j JOIN inbox i ON i.id = j.value
		WHERE i.payload_len IS NOT NULL
		ORDER BY j.key`,
		sqlcore.StSearchIndex: searchIndexSQL,
	},
	ReleasesLeases: true,
	FinalJob:       `json_extract(j.local, '$.final') <> ''`,
	// The search statements that depend on FTS5 are added by withSearch.
	DueIndex: ` INDEXED BY inbox_due`,
}

// statementsOf gives the writer's statements for d (dialectFTS or dialectPlain).
func statementsOf(d sqlcore.Dialect) [numStmts]string {
	var q [numStmts]string
	core := sqlcore.Statements(d)
	copy(q[:], core[:])
	q[stInboxInsert] = `INSERT INTO inbox (dedupe_key, route, kind, event, job_id,
		message_type, category, partition_key, headers, body, received_at, message_at, payload_at,
		payload_len)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (dedupe_key) DO NOTHING`
	q[stInboxFind] = `SELECT id FROM inbox WHERE dedupe_key = ?`
	q[stQuarantineInsert] = `INSERT INTO quarantine (dedupe_key, route, reason, headers,
		body, received_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`
	q[stQuarantineFind] = `SELECT id FROM quarantine WHERE dedupe_key = ?`
	q[stEventInsert] = `INSERT INTO events (event_id, body, inbox_id) VALUES (?, ?, ?)
		ON CONFLICT (event_id) DO NOTHING`
	q[stEventFind] = `SELECT id FROM events WHERE event_id = ?`
	q[stSinkEnqueue] = `INSERT INTO sink_deliveries (sink, event, order_key, next_attempt_at,
		created_at, traceparent, tracestate) VALUES (?, ?, ?, ?, ?, nullif(?, ''), nullif(?, ''))
		ON CONFLICT (event, sink) DO NOTHING`
	return q
}

// The writer connection.
//
// The store takes the writer pool's only connection once (a *sql.Conn) and keeps it, with its
// prepared statements, for its whole life; wsem (a channel of one) serialises the
// transactions on it, waiting like database/sql's pool but in arrival order. Transactions are
// run with BEGIN IMMEDIATE and COMMIT on that connection rather than through a *sql.Tx: a
// *sql.Tx starts a goroutine for itself and another for every query it runs (to watch its
// context), and on this path those goroutines cost more CPU than SQLite's own work. Statements
// run with a context that cannot be cancelled for the same reason (go-sqlite3 starts a
// goroutine per Exec otherwise); the caller's context is checked when the transaction begins
// and before it commits.

var errClosed = errors.New("sqlite store is closed")

// acquire takes the writer connection, opening it and preparing its statements if needed.
func (s *Store) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.closed.Load() {
		<-s.wsem
		return errClosed
	}
	if s.wconn != nil {
		return nil
	}
	if err := s.openWriter(ctx); err != nil {
		<-s.wsem
		return err
	}
	return nil
}

func (s *Store) release() { <-s.wsem }

// openWriter takes the writer pool's connection and prepares the statements on it. Called with
// wsem held.
func (s *Store) openWriter(ctx context.Context) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	for id, query := range s.stmtSQL {
		if query == "" {
			continue // a statement of the core SQLite does without (StJobLock)
		}
		st, err := conn.PrepareContext(ctx, query)
		if err != nil {
			s.wconn = conn
			s.dropWriter()
			return fmt.Errorf("prepare statement %d: %w", id, err)
		}
		s.stmts[id] = st
	}
	s.wconn, s.syncLevel = conn, ""
	return nil
}

// dropWriter closes the writer connection and its statements; the next transaction opens it
// again. Called with wsem held.
func (s *Store) dropWriter() {
	for i, st := range s.stmts {
		if st != nil {
			_ = st.Close()
			s.stmts[i] = nil
		}
	}
	if s.wconn != nil {
		_ = s.wconn.Close()
		s.wconn = nil
	}
}

// withWriter runs fn on the writer connection outside any transaction (pings, pragmas).
func (s *Store) withWriter(ctx context.Context, fn func(c *sql.Conn) error) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	return fn(s.wconn)
}

// wtx is one IMMEDIATE transaction on the writer connection, which it holds from begin to
// commit or rollback, so that its synchronous setting cannot change under it.
type wtx struct {
	s    *Store
	user context.Context // the caller's: checked at begin and before commit
	ctx  context.Context // user without its cancellation: the statements'
	conn *sql.Conn
	op   string
	done bool
}

// begin takes the writer connection, sets synchronous for the kind of transaction (see
// "Durability" in the package documentation), and begins the transaction: every kind, even a
// sqlcore.OneStatement one, is one IMMEDIATE transaction on the held connection. op names the
// transaction for the commit hook of the tests. The caller must end it with Commit or Rollback
// (Rollback after Commit is a no-op).
func (s *Store) begin(ctx context.Context, op string, kind sqlcore.TxKind) (*wtx, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	w := &wtx{s: s, user: ctx, ctx: context.WithoutCancel(ctx), conn: s.wconn, op: op}
	if err := s.setSynchronous(w.ctx, kind&sqlcore.Derived != 0); err != nil {
		s.settle(w.ctx)
		s.release()
		return nil, err
	}
	if _, err := w.conn.ExecContext(w.ctx, "BEGIN IMMEDIATE"); err != nil {
		s.settle(w.ctx)
		s.release()
		return nil, err
	}
	return w, nil
}

// setSynchronous sets PRAGMA synchronous on the writer connection for a durable or a derived
// transaction, outside any transaction (SQLite refuses to change it inside one), and only when
// it changes.
func (s *Store) setSynchronous(ctx context.Context, derived bool) error {
	want := s.sync
	if derived {
		want = SynchronousNormal
	}
	if want == s.syncLevel {
		return nil
	}
	s.syncLevel = ""
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA synchronous = "+want); err != nil {
		return fmt.Errorf("set synchronous %s: %w", want, err)
	}
	s.syncLevel = want
	return nil
}

// settle makes sure no transaction is left open on the writer connection after a failure
// (SQLite ends some transactions itself on errors, keeps others open); a connection that
// cannot tell, or is still in a transaction, is dropped and opened again next time.
func (s *Store) settle(ctx context.Context) {
	inTx, err := s.inTransaction()
	if err == nil && inTx {
		_, _ = s.wconn.ExecContext(ctx, "ROLLBACK")
		inTx, err = s.inTransaction()
	}
	if err != nil || inTx {
		s.dropWriter()
	}
}

// inTransaction reports whether the writer connection is inside a transaction; true when the
// driver cannot tell.
func (s *Store) inTransaction() (bool, error) {
	inTx := true
	err := s.wconn.Raw(func(dc any) error {
		if c, ok := dc.(*sqlite3.SQLiteConn); ok {
			inTx = !c.AutoCommit()
		}
		return nil
	})
	return inTx, err
}

// Exec, Query and QueryRow run the prepared statement st with the transaction's context (see
// above), not ctx.
func (w *wtx) Exec(_ context.Context, st sqlcore.Stmt, args ...any) (sql.Result, error) {
	return w.s.stmts[st].ExecContext(w.ctx, args...)
}

func (w *wtx) Query(_ context.Context, st sqlcore.Stmt, args ...any) (*sql.Rows, error) {
	return w.s.stmts[st].QueryContext(w.ctx, args...)
}

func (w *wtx) QueryRow(_ context.Context, st sqlcore.Stmt, args ...any) *sql.Row {
	return w.s.stmts[st].QueryRowContext(w.ctx, args...)
}

func (w *wtx) Commit() error {
	if w.done {
		return errors.New("transaction already ended")
	}
	if err := w.user.Err(); err != nil {
		w.Rollback()
		return err
	}
	if h := w.s.beforeCommit; h != nil {
		h(w.op, w.conn)
	}
	_, err := w.conn.ExecContext(w.ctx, "COMMIT")
	if err != nil {
		w.s.settle(w.ctx)
	}
	w.done = true
	w.s.release()
	return err
}

func (w *wtx) Rollback() {
	if w.done {
		return
	}
	w.done = true
	w.s.settle(w.ctx)
	w.s.release()
}

// writes is the Store's sqlcore.Writes, unexported so that its methods do not join the Store's.
type writes struct{ s *Store }

func (w writes) Begin(ctx context.Context, op string, kind sqlcore.TxKind) (sqlcore.Tx, error) {
	return w.s.begin(ctx, op, kind)
}

// InsertSinkRows inserts each event whose id is not stored yet, or finds the stored one's row,
// then the rows one by one with the prepared statements: a (sink, event) pair already stored,
// or earlier in rows, is ignored.
func (w writes) InsertSinkRows(ctx context.Context, t sqlcore.Tx, events []sqlcore.SinkEvent, rows []sqlcore.SinkRow) error {
	ids := make([]int64, len(events))
	for i := range events {
		// An Exec, whose result carries the new row's id, costs less than a query's rows.
		e := &events[i]
		var inbox any // NULL: the event's data is in its body
		if e.Inbox != 0 {
			inbox = e.Inbox
		}
		res, err := t.Exec(ctx, stEventInsert, e.ID, e.Arg, inbox)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		switch {
		case err != nil:
		case n == 1:
			ids[i], err = res.LastInsertId()
		default: // stored before
			err = t.QueryRow(ctx, stEventFind, e.ID).Scan(&ids[i])
		}
		if err != nil {
			return fmt.Errorf("enqueue event %s: %w", e.ID, err)
		}
	}
	for i := range rows {
		r := &rows[i]
		if _, err := t.Exec(ctx, stSinkEnqueue, r.Sink, ids[r.Event], r.OrderKey, formatTime(r.Next),
			formatTime(r.Created), r.TraceParent, r.TraceState); err != nil {
			return fmt.Errorf("enqueue sink delivery %d for %s: %w", i, r.Sink, err)
		}
	}
	return nil
}
