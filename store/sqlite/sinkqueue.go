package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Statuses of sink_deliveries rows (the third is "delivered").
const (
	sinkQueued = "queued"
	sinkDead   = "dead"
)

// EnqueueSinkDeliveries queues events for sinks inside Apply's transaction.
func (t *tx) EnqueueSinkDeliveries(ctx context.Context, ds []store.SinkDelivery) error {
	return enqueueSinkDeliveries(t.w.ctx, t.w.stmt(stSinkEnqueue), ds, time.Now())
}

// EnqueueSinkDeliveries queues events outside an inbox row, all of them or none. What it
// queues is not derived from an inbox row (nothing would queue it again), so it commits
// durably.
func (s *Store) EnqueueSinkDeliveries(ctx context.Context, ds []store.SinkDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	w, err := s.begin(ctx, "enqueue sink deliveries", durable)
	if err != nil {
		return fmt.Errorf("enqueue sink deliveries: begin: %w", err)
	}
	defer w.rollback()
	if err := enqueueSinkDeliveries(w.ctx, w.stmt(stSinkEnqueue), ds, time.Now()); err != nil {
		return err
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("enqueue sink deliveries: commit: %w", err)
	}
	return nil
}

// enqueueSinkDeliveries inserts the rows with st (stSinkEnqueue), ignoring a (sink, event id)
// pair already stored whatever its status: a replayed inbox row must not deliver an event
// twice. Only Sink, EventID (default Event.ID), Event, OrderKey, NextAttempt (default
// CreatedAt) and CreatedAt (default now) are read: a new row starts queued with no attempts.
// An event queued for several sinks (the same event in consecutive deliveries) is encoded once.
func enqueueSinkDeliveries(ctx context.Context, st *sql.Stmt, ds []store.SinkDelivery, now time.Time) error {
	var (
		prev *api.Event
		ev   string
	)
	for i := range ds {
		d := &ds[i]
		eventID := cmp.Or(d.EventID, d.Event.ID)
		if d.Sink == "" {
			return fmt.Errorf("enqueue sink delivery %d: empty sink", i)
		}
		if eventID == "" {
			return fmt.Errorf("enqueue sink delivery %d for %s: empty event id", i, d.Sink)
		}
		if prev == nil || !sameEvent(prev, &d.Event) {
			b, err := json.Marshal(d.Event)
			if err != nil {
				return fmt.Errorf("enqueue sink delivery %d for %s: encode event: %w", i, d.Sink, err)
			}
			prev, ev = &d.Event, string(b)
		}
		created := d.CreatedAt
		if created.IsZero() {
			created = now
		}
		next := d.NextAttempt
		if next.IsZero() {
			next = created
		}
		if _, err := st.ExecContext(ctx, d.Sink, eventID, ev, d.OrderKey, formatTime(next),
			formatTime(created)); err != nil {
			return fmt.Errorf("enqueue sink delivery %d for %s: %w", i, d.Sink, err)
		}
	}
	return nil
}

// sameEvent reports whether a and b encode to the same JSON: equal fields, with the raw JSON
// members compared byte for byte (far cheaper than encoding, which validates them).
func sameEvent(a, b *api.Event) bool {
	return a.ID == b.ID && a.Type == b.Type && a.CreatedAt.Equal(b.CreatedAt.Time) &&
		a.CreatedAt.Location() == b.CreatedAt.Location() && a.JobID == b.JobID && a.Kind == b.Kind &&
		a.Category == b.Category && bytes.Equal(a.CustomMetadata, b.CustomMetadata) &&
		(a.CustomMetadata == nil) == (b.CustomMetadata == nil) &&
		bytes.Equal(a.Data, b.Data) && (a.Data == nil) == (b.Data == nil)
}

// ClaimSinkDeliveries leases up to limit due deliveries of the sink (no limit when
// limit <= 0) in one IMMEDIATE transaction, so two claimers never get the same row. Due means
// queued, next_attempt_at <= now and no lease, or a lease that ended before now (its holder
// died or overran). "Oldest first" is (next_attempt_at, id): the delivery due the longest goes
// first, and deliveries due at the same instant go in queue order.
//
// For an ordered sink a delivery is eligible only when no earlier (smaller id) delivery with
// the same order key is still queued, whether due, leased or waiting for a retry: a key's
// deliveries go one at a time, in order, and a dead letter no longer holds its successors back.
// An empty order key means "no key": such deliveries are never held back.
func (s *Store) ClaimSinkDeliveries(ctx context.Context, sink string, ordered bool, now time.Time,
	lease time.Duration, limit int) ([]store.SinkDelivery, error) {
	if lease <= 0 {
		return nil, fmt.Errorf("claim sink deliveries of %s: lease must be positive (got %s)", sink, lease)
	}
	w, err := s.begin(ctx, "claim sink deliveries", derived)
	if err != nil {
		return nil, fmt.Errorf("claim sink deliveries of %s: begin: %w", sink, err)
	}
	defer w.rollback()
	rows, err := w.stmt(stSinkClaim).QueryContext(w.ctx,
		formatTime(now.Add(lease)), sink, formatTime(now), ordered, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("claim sink deliveries of %s: %w", sink, err)
	}
	out, err := sqlcore.Collect(rows, sqlcore.ScanSinkDelivery)
	if err != nil {
		return nil, fmt.Errorf("claim sink deliveries of %s: %w", sink, err)
	}
	if err := w.commit(); err != nil {
		return nil, fmt.Errorf("claim sink deliveries of %s: commit: %w", sink, err)
	}
	// RETURNING gives rows in no promised order.
	slices.SortFunc(out, func(a, b store.SinkDelivery) int {
		return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// CompleteSinkDelivery marks the delivery delivered, whatever its status: the event did reach
// the sink, even when the attempt overran its lease and another attempt meanwhile dead-lettered
// it. Completing it again is a no-op; an unknown id is store.ErrNotFound. Derived, like the
// claim: a completion lost in a power cut means the event is delivered again, under its id.
func (s *Store) CompleteSinkDelivery(ctx context.Context, id int64) error {
	if err := s.updateSinkDelivery(ctx, "complete", stSinkComplete, formatTime(time.Now()), id); err != nil {
		return fmt.Errorf("complete sink delivery %d: %w", id, err)
	}
	return nil
}

// RetrySinkDelivery counts a failed attempt of a queued delivery and releases its lease. A
// delivery that is not queued (delivered or dead meanwhile) is left alone and reported with
// store.ErrNotFound, as is an unknown id.
func (s *Store) RetrySinkDelivery(ctx context.Context, id int64, next time.Time, errMsg string) error {
	if err := s.updateSinkDelivery(ctx, "retry", stSinkRetry, formatTime(next), errMsg, id); err != nil {
		return fmt.Errorf("retry sink delivery %d: %w", id, s.whyNot(ctx, id, sinkQueued, err))
	}
	return nil
}

// KillSinkDelivery counts the last failed attempt of a queued delivery and makes it a dead
// letter. A delivery that is not queued, or unknown, is store.ErrNotFound.
func (s *Store) KillSinkDelivery(ctx context.Context, id int64, errMsg string, at time.Time) error {
	if err := s.updateSinkDelivery(ctx, "kill", stSinkKill, formatTime(at), errMsg, id); err != nil {
		return fmt.Errorf("kill sink delivery %d: %w", id, s.whyNot(ctx, id, sinkQueued, err))
	}
	return nil
}

// updateSinkDelivery runs the prepared UPDATE st of one delivery in a derived transaction:
// the queue's state is re-derived by delivering again (at least once, same event id).
// store.ErrNotFound when it changed no row.
func (s *Store) updateSinkDelivery(ctx context.Context, op string, st stmtID, args ...any) error {
	w, err := s.begin(ctx, op+" sink delivery", derived)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer w.rollback()
	res, err := w.stmt(st).ExecContext(w.ctx, args...)
	if err != nil {
		return err
	}
	if err := sqlcore.OneRow(res); err != nil {
		return err
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ReleaseSinkLeases clears the lease of every queued delivery and reports how many it
// released. Only for a process that owns the database alone (serve on SQLite, at startup): the
// leases it finds were taken by an earlier process, killed before it settled them, and would
// otherwise hold those deliveries back until they end.
func (s *Store) ReleaseSinkLeases(ctx context.Context) (int64, error) {
	w, err := s.begin(ctx, "release sink leases", derived)
	if err != nil {
		return 0, fmt.Errorf("release sink leases: begin: %w", err)
	}
	defer w.rollback()
	res, err := w.conn.ExecContext(w.ctx, `UPDATE sink_deliveries SET lease_until = NULL
		WHERE status = 'queued' AND lease_until IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("release sink leases: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("release sink leases: %w", err)
	}
	if err := w.commit(); err != nil {
		return 0, fmt.Errorf("release sink leases: commit: %w", err)
	}
	return n, nil
}

// ReplayDeadLetter queues a dead letter again, due at now, with no attempts and no lease; its
// last error stays for the record. Only dead letters replay: a queued or delivered delivery,
// like an unknown id, is store.ErrNotFound. A replay is an operator's decision that nothing
// derives again, so it commits durably.
func (s *Store) ReplayDeadLetter(ctx context.Context, id int64, now time.Time) error {
	w, err := s.begin(ctx, "replay dead letter", durable)
	if err != nil {
		return fmt.Errorf("replay dead letter %d: begin: %w", id, err)
	}
	defer w.rollback()
	res, err := w.conn.ExecContext(w.ctx, `UPDATE sink_deliveries SET status = 'queued', attempts = 0,
		next_attempt_at = ?, lease_until = NULL, failed_at = NULL WHERE id = ? AND status = 'dead'`,
		formatTime(now), id)
	if err != nil {
		return fmt.Errorf("replay dead letter %d: %w", id, err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		w.rollback()
		return fmt.Errorf("replay dead letter %d: %w", id, s.whyNot(ctx, id, sinkDead, err))
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("replay dead letter %d: commit: %w", id, err)
	}
	return nil
}

// whyNot explains an UPDATE that matched no row although it may exist: the row's actual status
// makes "not found" readable ("it is delivered, not queued"). err is kept for errors.Is.
func (s *Store) whyNot(ctx context.Context, id int64, want string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var status string
	if qerr := s.r.QueryRowContext(ctx, `SELECT status FROM sink_deliveries WHERE id = ?`, id).Scan(&status); qerr != nil {
		return err
	}
	return fmt.Errorf("it is %s, not %s: %w", status, want, err)
}
