package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// durability says how a write transaction commits; see "Durability" in the package
// documentation.
type durability uint8

const (
	// durable transactions commit with Options.Synchronous: they record something that exists
	// nowhere else (a delivery before its 2xx, a token, a job the submitter created).
	durable durability = iota
	// derived transactions commit with synchronous=NORMAL: their content is derived from inbox
	// rows that are already durable, and is derived again if a power cut loses it.
	derived
)

// Statements of the writer's hot paths, prepared once on the writer connection (go-sqlite3
// would otherwise prepare each statement again on every call).
type stmtID int

const (
	stInboxInsert stmtID = iota
	stInboxFind
	stQuarantineInsert
	stQuarantineFind
	stInboxStatus
	stInboxDone
	stInboxFailed
	stLiveAppend
	stJobGet
	stJobReplace
	stJobCreate
	stSinkEnqueue
	stSinkClaim
	stSinkComplete
	stSinkRetry
	stSinkKill
	numStmts
)

const jobInsert = `INSERT INTO jobs (id, kind, status, created_at, completed_at, custom_metadata,
	record, local) VALUES (?, ?, ?, ?, ?, ?, ?, ?) `

var stmtSQL = [numStmts]string{
	stInboxInsert: `INSERT INTO inbox (dedupe_key, route, kind, event, job_id,
		message_type, category, partition_key, headers, body, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
	stInboxFind: `SELECT id FROM inbox WHERE dedupe_key = ?`,
	stQuarantineInsert: `INSERT INTO quarantine (dedupe_key, route, reason, headers,
		body, received_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
	stQuarantineFind: `SELECT id FROM quarantine WHERE dedupe_key = ?`,
	stInboxStatus:    `SELECT status FROM inbox WHERE id = ?`,
	stInboxDone: `UPDATE inbox SET status = 'done', processed_at = ?,
		attempts = attempts + 1 WHERE id = ? AND status != 'done'`,
	stInboxFailed: `UPDATE inbox SET attempts = attempts + 1, last_error = ?,
		status = ? WHERE id = ?`,
	// The writer's transactions are serial, so two messages of a session never read the same
	// max(seq); the primary key (session_id, seq) makes max(seq) one seek.
	stLiveAppend: `INSERT INTO live_messages (session_id, seq, type, category,
		created_at, received_at, inbox_id, payload)
		VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM live_messages WHERE session_id = ?1),
		?2, ?3, ?4, ?5, ?6, ?7) RETURNING seq`,
	stJobGet: `SELECT record, local FROM jobs WHERE id = ?`,
	stJobReplace: jobInsert + `ON CONFLICT (id) DO UPDATE SET kind = excluded.kind,
		status = excluded.status, created_at = excluded.created_at,
		completed_at = excluded.completed_at, custom_metadata = excluded.custom_metadata,
		record = excluded.record, local = excluded.local`,
	stJobCreate: jobInsert + `ON CONFLICT (id) DO NOTHING`,
	stSinkEnqueue: `INSERT INTO sink_deliveries (sink, event_id, event, order_key,
		next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (sink, event_id) DO NOTHING`,
	stSinkClaim: `UPDATE sink_deliveries SET lease_until = ?1
		WHERE id IN (
			SELECT d.id FROM sink_deliveries d
			WHERE d.sink = ?2 AND d.status = 'queued' AND d.next_attempt_at <= ?3
				AND (d.lease_until IS NULL OR d.lease_until < ?3)
				AND (NOT ?4 OR d.order_key = '' OR NOT EXISTS (
					SELECT 1 FROM sink_deliveries e
					WHERE e.sink = d.sink AND e.order_key = d.order_key AND e.status = 'queued'
						AND e.id < d.id))
			ORDER BY d.next_attempt_at, d.id
			LIMIT ?5)
		RETURNING ` + sqlcore.SinkColumns,
	stSinkComplete: `UPDATE sink_deliveries SET status = 'delivered',
		delivered_at = coalesce(delivered_at, ?), lease_until = NULL, failed_at = NULL WHERE id = ?`,
	stSinkRetry: `UPDATE sink_deliveries SET attempts = attempts + 1,
		next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE id = ? AND status = 'queued'`,
	stSinkKill: `UPDATE sink_deliveries SET status = 'dead', attempts = attempts + 1,
		failed_at = ?, last_error = ?, lease_until = NULL WHERE id = ? AND status = 'queued'`,
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
	for id, query := range stmtSQL {
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

// begin takes the writer connection, sets synchronous for d, and begins the transaction. op
// names the transaction for the commit hook of the tests. The caller must end it with commit
// or rollback (rollback after commit is a no-op).
func (s *Store) begin(ctx context.Context, op string, d durability) (*wtx, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	w := &wtx{s: s, user: ctx, ctx: context.WithoutCancel(ctx), conn: s.wconn, op: op}
	if err := s.setSynchronous(w.ctx, d); err != nil {
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

// setSynchronous sets PRAGMA synchronous on the writer connection for a transaction of d,
// outside any transaction (SQLite refuses to change it inside one), and only when it changes.
func (s *Store) setSynchronous(ctx context.Context, d durability) error {
	want := s.sync
	if d == derived {
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

// stmt is the prepared statement id, on the writer connection.
func (w *wtx) stmt(id stmtID) *sql.Stmt { return w.s.stmts[id] }

func (w *wtx) commit() error {
	if w.done {
		return errors.New("transaction already ended")
	}
	if err := w.user.Err(); err != nil {
		w.rollback()
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

func (w *wtx) rollback() {
	if w.done {
		return
	}
	w.done = true
	w.s.settle(w.ctx)
	w.s.release()
}
