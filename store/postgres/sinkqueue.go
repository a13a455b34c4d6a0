package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
	return enqueueSinkDeliveries(ctx, t.q, ds, time.Now())
}

// EnqueueSinkDeliveries queues events outside an inbox row, all of them or none.
func (s *Store) EnqueueSinkDeliveries(ctx context.Context, ds []store.SinkDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("enqueue sink deliveries: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := enqueueSinkDeliveries(ctx, tx, ds, time.Now()); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("enqueue sink deliveries: commit: %w", err)
	}
	return nil
}

// ceilMicro rounds t up to PostgreSQL's microsecond: a time taken "now" and stored must not
// come back earlier than an instant read before the call.
func ceilMicro(t time.Time) time.Time {
	if c := t.Truncate(time.Microsecond); !c.Equal(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// sinkRow is one delivery ready to insert.
type sinkRow struct {
	sink, eventID, orderKey string
	event                   []byte
	next, created           time.Time
	id                      int64
}

// enqueueSinkDeliveries inserts the rows, ignoring a (sink, event id) pair already stored
// whatever its status: a replayed inbox row must not deliver an event twice. Only Sink,
// EventID (default Event.ID), Event, OrderKey, NextAttempt (default CreatedAt) and CreatedAt
// (default now) are read: a new row starts queued with no attempts.
//
// Ids, which order the deliveries of a key, are reserved in the caller's order, and the rows
// inserted in (sink, event id) order, for the reason Ingest gives: two transactions queueing
// the same events never wait for each other in a cycle.
func enqueueSinkDeliveries(ctx context.Context, q sqlcore.Querier, ds []store.SinkDelivery, now time.Time) error {
	if len(ds) == 0 {
		return nil
	}
	now = ceilMicro(now)
	seen := make(map[[2]string]bool, len(ds))
	var rows []*sinkRow
	for i := range ds {
		d := &ds[i]
		eventID := cmp.Or(d.EventID, d.Event.ID)
		if d.Sink == "" {
			return fmt.Errorf("enqueue sink delivery %d: empty sink", i)
		}
		if eventID == "" {
			return fmt.Errorf("enqueue sink delivery %d for %s: empty event id", i, d.Sink)
		}
		ev, err := json.Marshal(d.Event)
		if err != nil {
			return fmt.Errorf("enqueue sink delivery %d for %s: encode event: %w", i, d.Sink, err)
		}
		r := &sinkRow{sink: text(d.Sink), eventID: text(eventID), orderKey: text(d.OrderKey), event: ev,
			created: d.CreatedAt, next: d.NextAttempt}
		if r.created.IsZero() {
			r.created = now
		}
		if r.next.IsZero() {
			r.next = r.created
		}
		// The first of a pair in the batch is the one queued, as a later batch would find it.
		if k := [2]string{r.sink, r.eventID}; !seen[k] {
			seen[k] = true
			rows = append(rows, r)
		}
	}
	reserved, err := reserveIDs(ctx, q, "sink_deliveries_id_seq", len(rows))
	if err != nil {
		return fmt.Errorf("enqueue sink deliveries: %w", err)
	}
	for i, r := range rows {
		r.id = reserved[i]
	}
	slices.SortFunc(rows, func(a, b *sinkRow) int {
		return cmp.Or(strings.Compare(a.sink, b.sink), strings.Compare(a.eventID, b.eventID))
	})
	n := len(rows)
	var (
		ids                      = make([]int64, n)
		sinks, events, orderKeys = make([]string, n), make([]string, n), make([]string, n)
		bodies                   = make([][]byte, n)
		next, created            = make([]time.Time, n), make([]time.Time, n)
	)
	for i, r := range rows {
		ids[i], sinks[i], events[i], orderKeys[i], bodies[i], next[i], created[i] =
			r.id, r.sink, r.eventID, r.orderKey, r.event, r.next, r.created
	}
	// One array per column, as in Ingest: one statement text whatever the batch size.
	if _, err := q.ExecContext(ctx, `INSERT INTO sink_deliveries (id, sink, event_id, event, order_key,
			next_attempt_at, created_at)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::text[],
			$6::timestamptz[], $7::timestamptz[])
		ON CONFLICT (sink, event_id) DO NOTHING`,
		ids, sinks, events, bodies, orderKeys, next, created); err != nil {
		return fmt.Errorf("enqueue sink deliveries: %w", err)
	}
	return nil
}

// ClaimSinkDeliveries leases up to limit due deliveries of the sink (no limit when
// limit <= 0). Due means queued, next_attempt_at <= now and no lease, or a lease that ended
// before now (its holder died or overran). "Oldest first" is (next_attempt_at, id).
//
// The candidates are selected FOR UPDATE SKIP LOCKED and leased in the same statement: a
// claimer on another replica skips the rows this one is leasing instead of waiting for them,
// and when it reaches a row leased meanwhile, PostgreSQL checks the row's new version against
// the conditions again, which the new lease fails. Two claimers never get the same delivery.
//
// For an ordered sink a delivery is eligible only when no earlier (smaller id) delivery with
// the same order key is still queued, whether due, leased or waiting for a retry: a key's
// deliveries go one at a time, in order, and a dead letter no longer holds its successors back.
// A claim never changes whether a row is queued, so two claimers agree on the heads. An empty
// order key means "no key": such deliveries are never held back.
func (s *Store) ClaimSinkDeliveries(ctx context.Context, sink string, ordered bool, now time.Time,
	lease time.Duration, limit int) ([]store.SinkDelivery, error) {
	if lease <= 0 {
		return nil, fmt.Errorf("claim sink deliveries of %s: lease must be positive (got %s)", sink, lease)
	}
	rows, err := s.db.QueryContext(ctx, `UPDATE sink_deliveries SET lease_until = $1
		WHERE id IN (
			SELECT d.id FROM sink_deliveries d
			WHERE d.sink = $2 AND d.status = 'queued' AND d.next_attempt_at <= $3
				AND (d.lease_until IS NULL OR d.lease_until < $3)
				AND (NOT $4 OR d.order_key = '' OR NOT EXISTS (
					SELECT 1 FROM sink_deliveries e
					WHERE e.sink = d.sink AND e.order_key = d.order_key AND e.status = 'queued'
						AND e.id < d.id))
			ORDER BY d.next_attempt_at, d.id
			LIMIT $5
			FOR UPDATE SKIP LOCKED)
		RETURNING `+sqlcore.SinkColumns,
		now.Add(lease), text(sink), now, ordered, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("claim sink deliveries of %s: %w", sink, err)
	}
	out, err := sqlcore.Collect(rows, sqlcore.ScanSinkDelivery)
	if err != nil {
		return nil, fmt.Errorf("claim sink deliveries of %s: %w", sink, err)
	}
	// RETURNING gives rows in no promised order.
	slices.SortFunc(out, func(a, b store.SinkDelivery) int {
		return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// CompleteSinkDelivery marks the delivery delivered, whatever its status: the event did reach
// the sink, even when the attempt overran its lease and another attempt meanwhile dead-lettered
// it. Completing it again is a no-op; an unknown id is store.ErrNotFound.
func (s *Store) CompleteSinkDelivery(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sink_deliveries SET status = 'delivered',
		delivered_at = coalesce(delivered_at, $1), lease_until = NULL, failed_at = NULL WHERE id = $2`,
		time.Now(), id)
	if err != nil {
		return fmt.Errorf("complete sink delivery %d: %w", id, err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		return fmt.Errorf("complete sink delivery %d: %w", id, err)
	}
	return nil
}

// RetrySinkDelivery counts a failed attempt of a queued delivery and releases its lease. A
// delivery that is not queued (delivered or dead meanwhile) is left alone and reported with
// store.ErrNotFound, as is an unknown id.
func (s *Store) RetrySinkDelivery(ctx context.Context, id int64, next time.Time, errMsg string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sink_deliveries SET attempts = attempts + 1,
		next_attempt_at = $1, last_error = $2, lease_until = NULL WHERE id = $3 AND status = 'queued'`,
		next, text(errMsg), id)
	if err != nil {
		return fmt.Errorf("retry sink delivery %d: %w", id, err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		return fmt.Errorf("retry sink delivery %d: %w", id, s.whyNot(ctx, id, sinkQueued, err))
	}
	return nil
}

// KillSinkDelivery counts the last failed attempt of a queued delivery and makes it a dead
// letter. A delivery that is not queued, or unknown, is store.ErrNotFound.
func (s *Store) KillSinkDelivery(ctx context.Context, id int64, errMsg string, at time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sink_deliveries SET status = 'dead', attempts = attempts + 1,
		failed_at = $1, last_error = $2, lease_until = NULL WHERE id = $3 AND status = 'queued'`,
		at, text(errMsg), id)
	if err != nil {
		return fmt.Errorf("kill sink delivery %d: %w", id, err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		return fmt.Errorf("kill sink delivery %d: %w", id, s.whyNot(ctx, id, sinkQueued, err))
	}
	return nil
}

// ReplayDeadLetter queues a dead letter again, due at now, with no attempts and no lease; its
// last error stays for the record. Only dead letters replay: a queued or delivered delivery,
// like an unknown id, is store.ErrNotFound.
func (s *Store) ReplayDeadLetter(ctx context.Context, id int64, now time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sink_deliveries SET status = 'queued', attempts = 0,
		next_attempt_at = $1, lease_until = NULL, failed_at = NULL WHERE id = $2 AND status = 'dead'`,
		now, id)
	if err != nil {
		return fmt.Errorf("replay dead letter %d: %w", id, err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		return fmt.Errorf("replay dead letter %d: %w", id, s.whyNot(ctx, id, sinkDead, err))
	}
	return nil
}

// ReleaseSinkLeases does nothing and returns 0: several replicas share a PostgreSQL store, so
// a lease found at startup may be another replica's, held for a delivery in progress;
// releasing it would deliver the event twice at once. A dead replica's leases simply expire.
func (s *Store) ReleaseSinkLeases(context.Context) (int64, error) { return 0, nil }

// whyNot explains an UPDATE that matched no row although it may exist: the row's actual status
// makes "not found" readable ("it is delivered, not queued"). err is kept for errors.Is.
func (s *Store) whyNot(ctx context.Context, id int64, want string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var status string
	if qerr := s.db.QueryRowContext(ctx, `SELECT status FROM sink_deliveries WHERE id = $1`, id).Scan(&status); qerr != nil {
		return err
	}
	return fmt.Errorf("it is %s, not %s: %w", status, want, err)
}
