package sqlcore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The inbox's failures: rows whose retry is due, rows failed for good, and their replay.

// replayBatch bounds the rows one replay transaction moves, so that replaying a large filter
// never holds SQLite's writer for long.
const replayBatch = 500

// DueInboxKeys lists pending rows due at or before now (a retry that came due, a replayed
// row), by due time then id, at most limit (no limit when limit <= 0).
func (r *Reader) DueInboxKeys(ctx context.Context, now time.Time, limit int) ([]store.InboxKey, error) {
	out, err := Query(ctx, r.db, scanKey, r.q[readDueKeys], r.d.Time(now), r.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("due inbox keys: %w", err)
	}
	return out, nil
}

// CountFailedInbox counts the failed rows.
func (r *Reader) CountFailedInbox(ctx context.Context) (int64, error) {
	var n int64
	if err := r.db.QueryRowContext(ctx, r.q[readFailedCount]).Scan(&n); err != nil {
		return 0, fmt.Errorf("count failed inbox rows: %w", err)
	}
	return n, nil
}

// failedColumns are the columns scanFailed reads: an inbox row without its body and headers.
const failedColumns = `id, dedupe_key, route, kind, event, job_id, message_type, category,
	partition_key, received_at, status, attempts, last_error, next_attempt_at, failed_at`

func scanFailed(sc Scanner) (store.InboxRow, error) {
	var (
		r                        store.InboxRow
		kind, mtype, cat, status string
		received, next, failed   Time
	)
	if err := sc.Scan(&r.ID, &r.DedupeKey, &r.Route, &kind, &r.Event, &r.JobID, &mtype, &cat, &r.PartitionKey,
		&received, &status, &r.Attempts, &r.LastError, &next, &failed); err != nil {
		return store.InboxRow{}, err
	}
	r.Kind, r.MessageType, r.Category = api.CallbackKind(kind), api.MessageType(mtype), api.MessageCategory(cat)
	r.Status = store.InboxStatus(status)
	r.ReceivedAt, r.NextAttempt, r.FailedAt = received.T, next.T, failed.T
	return r, nil
}

// failedWhere is the WHERE clause (with ? placeholders) and arguments of the failed rows f
// selects. A failed row is never processed (only Apply sets processed_at, and it marks the row
// done): saying so lets SQLite read failed rows in id order from its index of statuses.
func (r *Reader) failedWhere(f store.InboxFilter) (string, []any) {
	conds := []string{`status = 'failed'`, `processed_at IS NULL`}
	var args []any
	if len(f.IDs) > 0 {
		conds = append(conds, `id IN (`+marks(len(f.IDs))+`)`)
		for _, id := range f.IDs {
			args = append(args, id)
		}
	}
	if f.JobID != "" {
		conds = append(conds, `job_id = ?`)
		args = append(args, r.d.text(f.JobID))
	}
	if f.Kind != "" {
		conds = append(conds, `kind = ?`)
		args = append(args, r.d.text(string(f.Kind)))
	}
	if !f.Since.IsZero() {
		conds = append(conds, `received_at >= ?`)
		args = append(args, r.d.Time(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, `received_at < ?`)
		args = append(args, r.d.Time(f.Until))
	}
	if f.Error != "" {
		pos := r.d.Position
		if pos == "" {
			pos = "instr"
		}
		conds = append(conds, pos+`(last_error, ?) > 0`)
		args = append(args, r.d.text(f.Error))
	}
	if f.BeforeID > 0 {
		conds = append(conds, `id < ?`)
		args = append(args, f.BeforeID)
	}
	return strings.Join(conds, ` AND `), args
}

// FailedInbox lists the failed rows f selects, newest (highest id) first, at most limit (no
// limit when limit <= 0), without their bodies and headers.
func (r *Reader) FailedInbox(ctx context.Context, f store.InboxFilter, limit int) ([]store.InboxRow, error) {
	where, args := r.failedWhere(f)
	query := r.d.Rebind(`SELECT ` + failedColumns + ` FROM inbox WHERE ` + where + ` ORDER BY id DESC LIMIT ?`)
	out, err := Query(ctx, r.db, scanFailed, query, append(args, r.d.Limit(limit))...)
	if err != nil {
		return nil, fmt.Errorf("failed inbox: %w", err)
	}
	return out, nil
}

// ReplayInbox moves the failed rows f selects back to pending, attempts reset, due at now, and
// returns the rows it moved by id. The rows are found on the read side, then moved by id in
// transactions of up to replayBatch rows, each move only if the row is still failed: a row
// replayed (or pruned) meanwhile is left out, never moved twice. Durable: a replay is an
// operator's decision, recorded nowhere else.
func (c *Core) ReplayInbox(ctx context.Context, f store.InboxFilter, now time.Time) ([]store.InboxKey, error) {
	if f.Empty() && !f.All {
		return nil, fmt.Errorf("replay inbox: %w", store.ErrEmptyFilter)
	}
	where, args := c.failedWhere(f)
	found, err := Query(ctx, c.db, scanKey, c.d.Rebind(`SELECT `+keyColumns+` FROM inbox WHERE `+where+` ORDER BY id`), args...)
	if err != nil {
		return nil, fmt.Errorf("replay inbox: find failed rows: %w", err)
	}
	due := c.d.Time(now)
	var moved []store.InboxKey
	for start := 0; start < len(found); start += replayBatch {
		batch := found[start:min(start+replayBatch, len(found))]
		var done []store.InboxKey
		err := c.inTx(ctx, "replay inbox", Durable, func() string { return fmt.Sprintf("replay %d inbox rows", len(batch)) },
			func(t Tx) error {
				done = done[:0]
				for _, k := range batch {
					res, err := t.Exec(ctx, StInboxReplay, due, k.ID)
					if err != nil {
						return fmt.Errorf("replay inbox row %d: %w", k.ID, err)
					}
					if OneRow(res) == nil {
						k.NextAttempt = now
						done = append(done, k)
					}
				}
				return nil
			})
		if err != nil {
			return moved, fmt.Errorf("replay inbox: %w", err)
		}
		moved = append(moved, done...)
	}
	return moved, nil
}
