package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/scribehook/scribehook/store"
)

// Stmt names a statement of the write core. A dialect's Tx runs it by name, so SQLite can run
// the statement it prepared once on its writer connection and PostgreSQL the text, which pgx
// prepares once per connection. A dialect may number statements of its own from NumStmts.
type Stmt int

// The statements of the write core; the comment lists the arguments.
const (
	StInboxDone       Stmt = iota // processed_at, id: marks a row done unless it is
	StInboxDoneMany               // processed_at, ids (IDList) → id: StInboxDone for several rows (optional)
	StInboxStatus                 // id: reads a row's status to change it
	StInboxFailed                 // last_error, status, next_attempt_at, failed_at, id
	StInboxReplay                 // next_attempt_at, id: a failed row back to pending
	StQuarantineRow               // dedupe_key, route, reason, headers, body, received_at
	StJobLock                     // key: serialises the Applies of one job (optional)
	StJobGet                      // id
	StJobReplace                  // the eight job columns (jobArgs)
	StJobCreate                   // the same, keeping an existing record
	StLiveAppend                  // session_id, type, category, created_at, received_at, inbox_id, payload → seq
	StLiveAppendRows              // inbox ids (IDList), in applying order: their located messages, by reference
	StArtifactPut                 // job_id, name, format, language, path, size, created_at
	StTokenCreate                 // hash, job_id, kind, created_at, revoked_at
	StTokenJob                    // hash → job_id, to bind it
	StTokenBind                   // job_id, hash
	StTokenRevoke                 // revoked_at, hash
	StSinkClaim                   // lease_until, sink, now, ordered, limit → SinkColumns
	StSinkComplete                // delivered_at, id
	StSinkRetry                   // next_attempt_at, last_error, id
	StSinkKill                    // failed_at, last_error, id
	StSinkReplay                  // next_attempt_at, id
	StSinkRelease                 // no arguments
	StSinkRequeue                 // next_attempt_at, id: a delivered or dead delivery queued again (ReplaySink)
	StSinkStatePut                // name, disabled, reason, since
	StSessionRevoke               // id_hash, expires_at
	StSessionsCutoff              // revoked_before
	StReconcileList               // job_id, kind, created_at, due_at: lists a job unless listed
	StReconcileUpdate             // due_at, checks, overdue_at, checked_at, status, last_error, job_id
	StReconcileFinish             // job_id
	StJobExists                   // id → 1: a job has a record, without reading it
	StSpeakersGet                 // job_id → names, revision, updated_at
	StSpeakersPut                 // job_id, names, revision, updated_at
	// The pruner's statements (prune.go).
	StPruneInbox         // cutoff, limit
	StPruneInboxFailed   // cutoff, limit
	StPruneLive          // category, cutoff, session_id, seq: one message picked by liveCandidates
	StPruneJobsPick      // cutoff, limit → id
	StPruneJob           // id, cutoff
	StPruneJobArtifacts  // job_id
	StPruneJobLive       // session_id
	StPruneJobSpeakers   // job_id
	StPruneJobSeq        // session_id: the session's counter, where it has one (optional)
	StPruneSinkDelivered // cutoff, limit, bytes → event
	StPruneDeadLetters   // cutoff, limit, bytes → event
	StPruneEventsLock    // ids (IDList): locks events before StPruneEvents checks them (optional)
	StPruneEvents        // events.id, or ids (IDList) where Dialect.IDs is set
	StPruneQuarantine    // cutoff, limit
	StPruneTokens        // cutoff, limit
	StPruneSessions      // cutoff, limit
	// The search index's statements (search.go).
	StSearchIndex        // utterances (searchRows JSON): inserts those whose (job_id, ref) is new
	StSearchMaxID        // → the largest sid, before StSearchIndex (optional: with StSearchFTSAdd)
	StSearchFTSAdd       // sid: indexes the rows above it (optional: a separate text index)
	StSearchStale        // no arguments: the separate text index misses writes (optional)
	StSearchFTSPruneJob  // job_id: unindexes a job's rows (optional)
	StSearchPruneJob     // job_id
	StSearchFTSPruneLive // category, cutoff, session_id, seq: unindexes a message's rows (optional)
	StSearchPruneLive    // category, cutoff, session_id, seq: the rows of a message StPruneLive deletes
	NumStmts
)

const jobInsert = `INSERT INTO jobs (id, kind, status, created_at, completed_at, custom_metadata,
	record, local) VALUES (?, ?, ?, ?, ?, ?, ?, ?) `

// Statements gives the SQL text of every statement of the write core for d, placeholders
// rebound; a dialect prepares or runs them by their Stmt.
func Statements(d Dialect) [NumStmts]string {
	q := [NumStmts]string{
		StInboxDone: `UPDATE inbox SET status = 'done', processed_at = ?,
		attempts = attempts + 1 WHERE id = ? AND status != 'done'`,
		StInboxStatus: `SELECT status FROM inbox WHERE id = ?` + d.ForUpdate,
		StInboxFailed: `UPDATE inbox SET attempts = attempts + 1, last_error = ?,
		status = ?, next_attempt_at = ?, failed_at = ? WHERE id = ?`,
		StInboxReplay: `UPDATE inbox SET status = 'pending', attempts = 0, next_attempt_at = ?,
		failed_at = NULL WHERE id = ? AND status = 'failed'`,
		StQuarantineRow: `INSERT INTO quarantine (dedupe_key, route, reason, headers, body,
		received_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
		StJobGet: `SELECT record, local FROM jobs WHERE id = ?`,
		StJobReplace: jobInsert + `ON CONFLICT (id) DO UPDATE SET kind = excluded.kind,
		status = excluded.status, created_at = excluded.created_at,
		completed_at = excluded.completed_at, custom_metadata = excluded.custom_metadata,
		record = excluded.record, local = excluded.local`,
		StJobCreate: jobInsert + `ON CONFLICT (id) DO NOTHING`,
		StArtifactPut: `INSERT INTO artifacts (job_id, name, format, language, path, size,
		created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (job_id, name) DO UPDATE SET format = excluded.format, language = excluded.language,
		path = excluded.path, size = excluded.size, created_at = excluded.created_at`,
		StTokenCreate: `INSERT INTO tokens (hash, job_id, kind, created_at, revoked_at)
		VALUES (?, ?, ?, ?, ?)`,
		StTokenJob:    `SELECT job_id FROM tokens WHERE hash = ?` + d.ForUpdate,
		StTokenBind:   `UPDATE tokens SET job_id = ? WHERE hash = ?`,
		StTokenRevoke: `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE hash = ?`,
		// For an ordered sink a delivery is eligible only when no earlier (smaller id) delivery
		// with the same order key is still queued, whether due, leased or waiting for a retry.
		// A claim never changes whether a row is queued, so two claimers agree on the heads.
		StSinkClaim: `UPDATE sink_deliveries SET lease_until = ?1
		WHERE id IN (
			SELECT d.id FROM sink_deliveries d
			WHERE d.sink = ?2 AND d.status = 'queued' AND d.next_attempt_at <= ?3
				AND (d.lease_until IS NULL OR d.lease_until < ?3)
				AND (NOT ?4 OR d.order_key = '' OR NOT EXISTS (
					SELECT 1 FROM sink_deliveries e
					WHERE e.sink = d.sink AND e.order_key = d.order_key AND e.status = 'queued'
						AND e.id < d.id))
			ORDER BY d.next_attempt_at, d.id
			LIMIT ?5` + d.SkipLocked + `)
		RETURNING ` + SinkColumns,
		StSinkComplete: `UPDATE sink_deliveries SET status = 'delivered',
		delivered_at = coalesce(delivered_at, ?), lease_until = NULL, failed_at = NULL WHERE id = ?`,
		StSinkRetry: `UPDATE sink_deliveries SET attempts = attempts + 1,
		next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE id = ? AND status = 'queued'`,
		StSinkKill: `UPDATE sink_deliveries SET status = 'dead', attempts = attempts + 1,
		failed_at = ?, last_error = ?, lease_until = NULL WHERE id = ? AND status = 'queued'`,
		StSinkReplay: `UPDATE sink_deliveries SET status = 'queued', attempts = 0,
		next_attempt_at = ?, lease_until = NULL, failed_at = NULL WHERE id = ? AND status = 'dead'`,
		StSinkRelease: `UPDATE sink_deliveries SET lease_until = NULL
		WHERE status = 'queued' AND lease_until IS NOT NULL`,
		StSinkRequeue: `UPDATE sink_deliveries SET status = 'queued', attempts = 0,
		next_attempt_at = ?, lease_until = NULL, failed_at = NULL, delivered_at = NULL
		WHERE id = ? AND status != 'queued'`,
		StSinkStatePut: `INSERT INTO sink_state (name, disabled, reason, since) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET disabled = excluded.disabled, reason = excluded.reason,
		since = excluded.since`,
		StSessionRevoke: `INSERT INTO session_revocations (id_hash, expires_at) VALUES (?, ?)
		ON CONFLICT (id_hash) DO NOTHING`,
		// The cutoff only moves forward: replicas' clocks may disagree, and a revoke-all made on
		// one that is behind must not let through sessions an earlier one refused.
		StSessionsCutoff: `INSERT INTO session_cutoff (id, revoked_before) VALUES (1, ?)
		ON CONFLICT (id) DO UPDATE SET revoked_before = excluded.revoked_before
		WHERE excluded.revoked_before > session_cutoff.revoked_before`,
		StReconcileList: `INSERT INTO reconcile (job_id, kind, created_at, due_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (job_id) DO NOTHING`,
		StReconcileUpdate: `UPDATE reconcile SET due_at = ?, checks = ?, overdue_at = ?, checked_at = ?,
		status = ?, last_error = ? WHERE job_id = ?`,
		StReconcileFinish: `DELETE FROM reconcile WHERE job_id = ?`,
		StJobExists:       `SELECT 1 FROM jobs WHERE id = ?`,
		StSpeakersGet:     `SELECT names, revision, updated_at FROM speakers WHERE job_id = ?`,
		StSpeakersPut: `INSERT INTO speakers (job_id, names, revision, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (job_id) DO UPDATE SET names = excluded.names, revision = excluded.revision,
		updated_at = excluded.updated_at`,
	}
	if d.IDs != "" {
		q[StInboxDoneMany] = `UPDATE inbox SET status = 'done', processed_at = ?,
		attempts = attempts + 1 WHERE id IN (` + d.IDs + `) AND status != 'done' RETURNING id`
	}
	pruneStatements(d, &q)
	searchStatements(d, &q)
	for st, text := range d.SQL {
		q[st] = text
	}
	for st := range q {
		q[st] = d.Rebind(q[st])
	}
	return q
}

// TxKind says what a write transaction records, so that each database commits it as it
// should.
type TxKind uint8

const (
	// Durable transactions record something that exists nowhere else (a delivery before its
	// 2xx, a token, a job the submitter created): SQLite commits them with its configured
	// synchronous setting.
	Durable TxKind = 0
	// Derived transactions record what is derived from inbox rows already durable, and derived
	// again if a power cut loses it: SQLite commits them with synchronous=NORMAL.
	Derived TxKind = 1 << iota
	// OneStatement transactions run a single statement: PostgreSQL runs it on the pool, where it
	// commits on its own, without a BEGIN and a COMMIT of its own.
	OneStatement
)

// Tx is one write transaction as a dialect runs it: on SQLite the held writer connection,
// between BEGIN IMMEDIATE and COMMIT; on PostgreSQL a *sql.Tx (or the pool, for a
// OneStatement transaction). The core's flows are written against it once. Several flows may
// share one Tx before its Commit (Apply's row is one of them), so nothing here assumes a
// transaction holds one inbox row.
type Tx interface {
	Exec(ctx context.Context, st Stmt, args ...any) (sql.Result, error)
	Query(ctx context.Context, st Stmt, args ...any) (*sql.Rows, error)
	QueryRow(ctx context.Context, st Stmt, args ...any) *sql.Row
	Commit() error
	// Rollback ends the transaction unless it has ended; after Commit it does nothing.
	Rollback()
}

// Writes is what a database does its own way on the write side.
type Writes interface {
	// Ingest stores checked deliveries (at least one; each classified one has a dedupe key) in
	// one transaction, as Core.Ingest promises.
	Ingest(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error)
	// Begin starts a write transaction of kind; op names it (SQLite's tests watch commits by
	// name).
	Begin(ctx context.Context, op string, kind TxKind) (Tx, error)
	// InsertSinkRows stores in t each of events (distinct ids) whose id is not stored yet, then
	// queues rows referring to them, ignoring a (sink, event id) pair already stored whatever
	// its status, and the second of a pair in rows.
	InsertSinkRows(ctx context.Context, t Tx, events []SinkEvent, rows []SinkRow) error
}

// errNothingToCommit, returned by the function of inTx, ends the transaction without a commit
// and without an error: it changed nothing that needs one.
var errNothingToCommit = errors.New("nothing to commit")

// inTx runs fn in a write transaction of kind, which op names (Writes.Begin), and commits it
// when fn returns nil. fn's error rolls the transaction back and comes back as it is, named by
// fn (errNothingToCommit: nil). A failure to begin or to commit is named by name (nil: no
// name), which is called only then, so that a transaction that succeeds formats nothing.
func (c *Core) inTx(ctx context.Context, op string, kind TxKind, name func() string, fn func(t Tx) error) error {
	t, err := c.w.Begin(ctx, op, kind)
	if err != nil {
		return txError(name, "begin", err)
	}
	defer t.Rollback()
	if err := fn(t); err != nil {
		if err == errNothingToCommit {
			return nil
		}
		return err
	}
	if err := t.Commit(); err != nil {
		return txError(name, "commit", err)
	}
	return nil
}

// txError is a failure of inTx to begin or commit (step): "name: step: err".
func txError(name func() string, step string, err error) error {
	if name == nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	return fmt.Errorf("%s: %s: %w", name(), step, err)
}

// Core is the store contract written once over a Dialect and its Writes: every method of
// store.Store but Ping and Close, which a store adds. A store embeds it.
type Core struct {
	*Reader
	d        Dialect
	w        Writes
	lockJobs bool // the dialect locks a job before store.Tx.Job reads it
	// now stamps what the store times itself (processed_at, delivered_at, revoked_at).
	now func() time.Time
}

// NewCore reads through db (which may be a pool of read-only connections) and writes through
// w.
func NewCore(db *sql.DB, d Dialect, w Writes) *Core {
	return &Core{Reader: NewReader(db, d), d: d, w: w, lockJobs: d.SQL[StJobLock] != "", now: time.Now}
}

// SetClock replaces time.Now for the times the store stamps itself (when a row was processed,
// delivered, revoked), so that a test running on a fake clock can prune what it made. Call it
// before the store is used.
func (c *Core) SetClock(now func() time.Time) {
	if now != nil {
		c.now = now
	}
}

// Ingest stores the deliveries in one transaction: classified ones in the inbox, quarantined
// ones in the quarantine table (their dedupe key is QuarantineKey). A dedupe key seen before,
// in an earlier batch, earlier in this one, or in a batch another process is committing at the
// same moment, reports Duplicate with the first row's id. How the rows are inserted is the
// dialect's (Writes.Ingest).
func (c *Core) Ingest(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	if err := CheckDeliveries(ds); err != nil {
		return nil, err
	}
	return c.w.Ingest(ctx, ds)
}

// CheckDeliveries refuses a batch in which a delivery for the inbox (not quarantined) has no
// dedupe key: nothing could tell its resending from a new delivery.
func CheckDeliveries(ds []store.Delivery) error {
	for i := range ds {
		if ds[i].Quarantine == "" && ds[i].DedupeKey == "" {
			return fmt.Errorf("ingest: delivery %d: empty dedupe key", i)
		}
	}
	return nil
}

// Apply runs fn and marks the inbox row done in one Derived transaction. The row is marked
// done first, by an UPDATE that skips a done row: one statement instead of a read of its status
// and a write, it takes the row's lock where rows are locked (another replica applying the same
// row waits, then finds it done), and fn's error still rolls the mark back. A failed row may be
// applied (a replay).
func (c *Core) Apply(ctx context.Context, inboxID int64, fn func(ctx context.Context, tx store.Tx) error) error {
	return c.inTx(ctx, "apply", Derived, func() string { return fmt.Sprintf("apply inbox row %d", inboxID) },
		func(t Tx) error { return c.applyIn(ctx, t, inboxID, fn) })
}

// applyIn applies one row inside t, which the caller commits.
func (c *Core) applyIn(ctx context.Context, t Tx, inboxID int64, fn func(ctx context.Context, tx store.Tx) error) error {
	res, err := t.Exec(ctx, StInboxDone, c.d.Time(c.now()), inboxID)
	if err != nil {
		return fmt.Errorf("apply inbox row %d: mark done: %w", inboxID, err)
	}
	if err := OneRow(res); err != nil {
		// Done already, or no such row.
		var status string
		if err := t.QueryRow(ctx, StInboxStatus, inboxID).Scan(&status); err != nil {
			return fmt.Errorf("apply inbox row %d: %w", inboxID, NotFound(err))
		}
		return fmt.Errorf("apply inbox row %d: %w", inboxID, store.ErrAlreadyApplied)
	}
	return fn(ctx, &applyTx{c: c, t: t})
}

// MarkInboxFailed counts a failed attempt and keeps its error: the row stays pending, due again
// at retryAt, or with a zero retryAt is marked failed, stamped with the store's clock. A row
// already done is left alone and reported with store.ErrAlreadyApplied. Derived: a lost
// attempt only means one more retry.
func (c *Core) MarkInboxFailed(ctx context.Context, inboxID int64, errMsg string, retryAt time.Time) error {
	name := func() string { return fmt.Sprintf("mark inbox row %d failed", inboxID) }
	final := retryAt.IsZero()
	return c.inTx(ctx, "mark inbox failed", Derived, name, func(t Tx) error {
		var status string
		if err := t.QueryRow(ctx, StInboxStatus, inboxID).Scan(&status); err != nil {
			return fmt.Errorf("%s: %w", name(), NotFound(err))
		}
		if store.InboxStatus(status) == store.InboxDone {
			return fmt.Errorf("%s: %w", name(), store.ErrAlreadyApplied)
		}
		// A failed row keeps no due time, a pending one no failure time.
		var failedAt any
		if final {
			status, failedAt = string(store.InboxFailed), c.d.Time(c.now())
		}
		if _, err := t.Exec(ctx, StInboxFailed, c.d.text(errMsg), status, c.d.NullTime(retryAt), failedAt, inboxID); err != nil {
			return fmt.Errorf("%s: %w", name(), err)
		}
		return nil
	})
}

// applyTx is the store.Tx given to Apply's function: the core's statements in Apply's
// transaction.
type applyTx struct {
	c *Core
	t Tx
}

// Job reads a record for a read-modify-write (the handlers load, update and put it back).
// Where two Applies of one job can run at once (several replicas), the later PutJob would
// overwrite the earlier one's update with a record computed before it; the dialect's StJobLock
// then locks the job id until the transaction ends, and the read, a statement of its own,
// follows the lock. Applies of one job then run one after the other, whether or not its row
// exists yet, which also keeps the sink deliveries they queue in commit order.
func (a *applyTx) Job(ctx context.Context, id string) (store.JobRecord, error) {
	key := a.c.d.text(id)
	if a.c.lockJobs {
		if _, err := a.t.Exec(ctx, StJobLock, JobLockKey(key)); err != nil {
			return store.JobRecord{}, fmt.Errorf("job %s: lock: %w", id, err)
		}
	}
	rec, err := ScanJob(a.t.QueryRow(ctx, StJobGet, key))
	if err != nil {
		return store.JobRecord{}, fmt.Errorf("job %s: %w", id, NotFound(err))
	}
	return rec, nil
}

// JobLockKey is the advisory lock of one job id (the id as stored).
func JobLockKey(id string) int64 { return LockKey("job", id) }

// LockKey is the PostgreSQL advisory lock of key among the locks of one kind: a hash of both.
// Its text must not change: replicas of two versions, during a rolling update, must lock the
// same key.
func LockKey(kind, key string) int64 {
	h := fnv.New64a()
	h.Write([]byte("scribehook/store/postgres "))
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return int64(h.Sum64())
}

func (a *applyTx) PutJob(ctx context.Context, rec store.JobRecord) error {
	_, err := a.c.writeJob(ctx, a.t, StJobReplace, rec)
	return err
}

// AppendLiveMessage numbers the message inside the statement that inserts it (the dialect's
// StLiveAppend), so numbers follow commit order without gaps.
func (a *applyTx) AppendLiveMessage(ctx context.Context, m store.LiveMessage) (int64, error) {
	if m.SessionID == "" {
		return 0, errors.New("append live message: empty session id")
	}
	d := a.c.d
	var seq int64
	if err := a.t.QueryRow(ctx, StLiveAppend, d.text(m.SessionID), d.text(string(m.Type)), d.text(string(m.Category)),
		d.NullTime(m.CreatedAt), d.NullTime(m.ReceivedAt), m.InboxID, d.JSON(m.Payload)).Scan(&seq); err != nil {
		return 0, fmt.Errorf("append live message to %s: %w", m.SessionID, err)
	}
	return seq, nil
}

// AppendReceivedMessages appends the messages of the inbox rows of ids, in one statement (the
// dialect's StLiveAppendRows): each message is its row's span, read from the row's own columns
// and stored by reference, numbered after its session's last in the order of ids. A row whose
// message was not located at receipt fails the whole call (nothing would store its message).
func (a *applyTx) AppendReceivedMessages(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	res, err := a.t.Exec(ctx, StLiveAppendRows, IDList(ids))
	if err != nil {
		return fmt.Errorf("append %d live messages: %w", len(ids), err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("append %d live messages: %w", len(ids), err)
	} else if n != int64(len(ids)) {
		return fmt.Errorf("append %d live messages: %d of their inbox rows hold a located message", len(ids), n)
	}
	return nil
}

// PutArtifact stores an artifact, replacing the job's artifact of the same name.
func (a *applyTx) PutArtifact(ctx context.Context, art store.Artifact) error {
	if art.JobID == "" || art.Name == "" {
		return errors.New("put artifact: job id and name are required")
	}
	d := a.c.d
	if _, err := a.t.Exec(ctx, StArtifactPut, d.text(art.JobID), d.text(art.Name), d.text(art.Format),
		d.text(art.Language), d.text(art.Path), art.Size, d.NullTime(art.CreatedAt)); err != nil {
		return fmt.Errorf("put artifact %s of %s: %w", art.Name, art.JobID, err)
	}
	return nil
}

// EnqueueSinkDeliveries queues events for sinks inside Apply's transaction.
func (a *applyTx) EnqueueSinkDeliveries(ctx context.Context, ds []store.SinkDelivery) error {
	return a.c.enqueue(ctx, a.t, ds)
}

func (a *applyTx) Quarantine(ctx context.Context, row store.InboxRow, reason string) error {
	d := a.c.d
	h, err := EncodeHeaders(row.Headers, d.Text)
	if err != nil {
		return err
	}
	if _, err := a.t.Exec(ctx, StQuarantineRow, d.text(store.AfterFinalKey(row)), d.text(row.Route), d.text(reason),
		h, Blob(row.Body), d.NullTime(row.ReceivedAt)); err != nil {
		return fmt.Errorf("quarantine inbox row %d: %w", row.ID, err)
	}
	return nil
}

// DialectTx is the dialect's Tx under a store.Tx that Apply gave, nil for another: tests reach
// the transaction's connection through it.
func DialectTx(tx store.Tx) Tx {
	if a, ok := tx.(*applyTx); ok {
		return a.t
	}
	return nil
}
