package sqlcore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/store"
)

// Reader is the read side of the contract, the same on both databases: a store embeds it and
// gets its read methods. Each query is rebound once, here.
type Reader struct {
	db *sql.DB
	d  Dialect
	q  [numReads]string
}

type readID int

const (
	readPending readID = iota
	readPendingByKey
	readPendingKeys
	readDueKeys
	readFailedCount
	readInboxRow
	readBacklog
	readQuarantined
	readJob
	readLive
	readArtifacts
	readSinkDepth
	readSinkQueues
	readToken
	readSinkStatus
	readSessionRevoked
	readSpeakers
	numReads
)

// NewReader reads through db, which may be a pool of read-only connections.
func NewReader(db *sql.DB, d Dialect) *Reader {
	r := &Reader{db: db, d: d}
	// processed_at IS NULL holds for every pending row (only marking a row done sets it): it
	// lets SQLite read pending rows in id order from its one index of statuses, (status,
	// processed_at) and the rowid after them, and changes nothing for PostgreSQL.
	for id, q := range [numReads]string{
		readPending: `SELECT ` + InboxColumns + ` FROM inbox
		WHERE status = 'pending' AND processed_at IS NULL AND id > ? ORDER BY id LIMIT ?`,
		readPendingByKey: `SELECT ` + InboxColumns + ` FROM inbox
		WHERE status = 'pending' AND partition_key = ? AND id <= ? ORDER BY id LIMIT ?`,
		readPendingKeys: `SELECT ` + keyColumns + ` FROM inbox
		WHERE status = 'pending' AND processed_at IS NULL AND id > ? ORDER BY id LIMIT ?`,
		// By the partial index inbox_due, which holds only rows waiting for a retry.
		readDueKeys: `SELECT ` + keyColumns + ` FROM inbox` + d.DueIndex + `
		WHERE status = 'pending' AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?
		ORDER BY next_attempt_at, id LIMIT ?`,
		// A failed row is never processed (only Apply sets processed_at, and it marks the row
		// done): saying so lets SQLite count them in its index of statuses.
		readFailedCount: `SELECT count(*) FROM inbox WHERE status = 'failed' AND processed_at IS NULL`,
		readInboxRow:    `SELECT ` + InboxColumns + ` FROM inbox WHERE id = ?`,
		readBacklog:     `SELECT count(*) FROM inbox WHERE status = 'pending' AND processed_at IS NULL`,
		readQuarantined: `SELECT ` + QuarantineColumns + ` FROM quarantine ORDER BY id DESC LIMIT ?`,
		readJob:         `SELECT record, local FROM jobs WHERE id = ?`,
		readLive: `SELECT ` + LiveColumns + ` FROM ` + LiveFrom + `
		WHERE l.session_id = ? AND l.seq > ? ORDER BY l.seq LIMIT ?`,
		readArtifacts:  `SELECT ` + ArtifactColumns + ` FROM artifacts WHERE job_id = ? ORDER BY name`,
		readSinkDepth:  `SELECT count(*) FROM sink_deliveries WHERE sink = ? AND status = 'queued'`,
		readSinkQueues: `SELECT sink, count(*) FROM sink_deliveries WHERE status = 'queued' GROUP BY sink ORDER BY sink`,
		readToken:      `SELECT ` + TokenColumns + ` FROM tokens WHERE hash = ?`,
		readSinkStatus: `SELECT status FROM sink_deliveries WHERE id = ?`,
		readSessionRevoked: `SELECT EXISTS (SELECT 1 FROM session_revocations WHERE id_hash = ?)
		OR EXISTS (SELECT 1 FROM session_cutoff WHERE revoked_before >= ?)`,
		readSpeakers: `SELECT names, revision, updated_at FROM speakers WHERE job_id = ?`,
	} {
		r.q[id] = d.Rebind(q)
	}
	return r
}

// PendingReads are the texts of the reads of pending rows by status (PendingInbox,
// PendingInboxKeys, InboxBacklog), for a dialect's checks of their plans.
func (r *Reader) PendingReads() []string {
	return []string{r.q[readPending], r.q[readPendingKeys], r.q[readBacklog]}
}

// FailureReads are the texts of DueInboxKeys's and CountFailedInbox's reads, for a dialect's
// checks of their plans.
func (r *Reader) FailureReads() []string {
	return []string{r.q[readDueKeys], r.q[readFailedCount]}
}

// PendingInbox lists pending rows with id > afterID in id order, at most limit (no limit
// when limit <= 0). With several replicas ids are not committed in id order: a row may appear
// below a cursor that already passed it, which is why the pipeline also sweeps from 0.
func (r *Reader) PendingInbox(ctx context.Context, afterID int64, limit int) ([]store.InboxRow, error) {
	out, err := Query(ctx, r.db, r.scanInbox, r.q[readPending], afterID, r.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("pending inbox: %w", err)
	}
	return out, nil
}

// PendingInboxByKey lists the pending rows of partitionKey with id <= uptoID in id order, at
// most limit (no limit when limit <= 0).
func (r *Reader) PendingInboxByKey(ctx context.Context, partitionKey string, uptoID int64, limit int) ([]store.InboxRow, error) {
	out, err := Query(ctx, r.db, r.scanInbox, r.q[readPendingByKey], partitionKey, uptoID, r.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("pending inbox of %q: %w", partitionKey, err)
	}
	return out, nil
}

func (r *Reader) scanInbox(sc Scanner) (store.InboxRow, error) {
	return scanInbox(sc, r.d.OwnedBytes)
}

// InboxRow returns one inbox row, store.ErrNotFound when there is none.
func (r *Reader) InboxRow(ctx context.Context, id int64) (store.InboxRow, error) {
	row, err := r.scanInbox(r.db.QueryRowContext(ctx, r.q[readInboxRow], id))
	if err != nil {
		return store.InboxRow{}, fmt.Errorf("inbox row %d: %w", id, NotFound(err))
	}
	return row, nil
}

// InboxBacklog counts pending rows.
func (r *Reader) InboxBacklog(ctx context.Context) (int64, error) {
	var n int64
	if err := r.db.QueryRowContext(ctx, r.q[readBacklog]).Scan(&n); err != nil {
		return 0, fmt.Errorf("inbox backlog: %w", err)
	}
	return n, nil
}

// Quarantined lists quarantined deliveries newest first, at most limit (no limit when
// limit <= 0).
func (r *Reader) Quarantined(ctx context.Context, limit int) ([]store.QuarantineRow, error) {
	out, err := Query(ctx, r.db, ScanQuarantine, r.q[readQuarantined], r.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("quarantined: %w", err)
	}
	return out, nil
}

// GetJob returns a job record, store.ErrNotFound when unknown.
func (r *Reader) GetJob(ctx context.Context, id string) (store.JobRecord, error) {
	return GetJob(ctx, r.db, r.q[readJob], r.d.text(id), id)
}

// GetJob reads the record of id with query, which selects record and local by id (key is the
// id as stored), inside a transaction or not.
func GetJob(ctx context.Context, q Querier, query, key, id string) (store.JobRecord, error) {
	rec, err := ScanJob(q.QueryRowContext(ctx, query, key))
	if err != nil {
		return store.JobRecord{}, fmt.Errorf("job %s: %w", id, NotFound(err))
	}
	return rec, nil
}

// LiveMessages lists a session's messages with Seq > afterSeq in order, at most limit (no
// limit when limit <= 0).
func (r *Reader) LiveMessages(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]store.LiveMessage, error) {
	out, err := Query(ctx, r.db, ScanLiveMessage, r.q[readLive], r.d.text(sessionID), afterSeq, r.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("live messages of %s: %w", sessionID, err)
	}
	return out, nil
}

// Artifacts lists a job's artifacts by name.
func (r *Reader) Artifacts(ctx context.Context, jobID string) ([]store.Artifact, error) {
	out, err := Query(ctx, r.db, ScanArtifact, r.q[readArtifacts], r.d.text(jobID))
	if err != nil {
		return nil, fmt.Errorf("artifacts of %s: %w", jobID, err)
	}
	return out, nil
}

// DeadLetters lists dead letters by failed_at, newest first (ties: newest id first), of one
// sink or of all (sink ""), failed at or after since unless it is zero, at most limit (no limit
// when limit <= 0).
func (r *Reader) DeadLetters(ctx context.Context, sink string, since time.Time, limit int) ([]store.SinkDelivery, error) {
	query := `SELECT ` + SinkColumns + ` FROM sink_deliveries WHERE status = 'dead'`
	var args []any
	if sink != "" {
		query += ` AND sink = ?`
		args = append(args, r.d.text(sink))
	}
	if !since.IsZero() {
		query += ` AND failed_at >= ?`
		args = append(args, r.d.Time(since))
	}
	query += ` ORDER BY failed_at DESC, id DESC LIMIT ?`
	args = append(args, r.d.Limit(limit))
	out, err := Query(ctx, r.db, ScanSinkDelivery, r.d.Rebind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	return out, nil
}

// SinkDepth counts the sink's queued deliveries, leased or not, due or not.
func (r *Reader) SinkDepth(ctx context.Context, sink string) (int64, error) {
	var n int64
	if err := r.db.QueryRowContext(ctx, r.q[readSinkDepth], r.d.text(sink)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sink depth of %s: %w", sink, err)
	}
	return n, nil
}

// SinkQueues counts the queued deliveries of every sink that has some, by sink name.
func (r *Reader) SinkQueues(ctx context.Context) (map[string]int64, error) {
	rows, err := r.db.QueryContext(ctx, r.q[readSinkQueues])
	if err != nil {
		return nil, fmt.Errorf("sink queues: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("sink queues: %w", err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sink queues: %w", err)
	}
	return out, nil
}

// LookupToken finds a token by hash, revoked or not; store.ErrNotFound when unknown.
func (r *Reader) LookupToken(ctx context.Context, hash []byte) (store.Token, error) {
	t, err := ScanToken(r.db.QueryRowContext(ctx, r.q[readToken], hash))
	if err != nil {
		return store.Token{}, fmt.Errorf("lookup token: %w", NotFound(err))
	}
	return t, nil
}
