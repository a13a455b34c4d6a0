package sqlcore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Statuses of sink_deliveries rows (the third is "delivered").
const (
	sinkQueued = "queued"
	sinkDead   = "dead"
)

// SinkEvent is one event of a batch of deliveries, stored once for all of them: its id and
// JSON as stored, and the JSON as the dialect's argument (Dialect.JSON).
type SinkEvent struct {
	ID   string
	Body []byte
	Arg  any
	// Inbox is the inbox row whose located message is the event's data, left out of Body
	// (store.SinkDelivery.DataFrom); 0 when Body holds it.
	Inbox int64
}

// SinkRow is one sink delivery ready to insert, its strings as stored; Event indexes the
// batch's events.
type SinkRow struct {
	Sink, OrderKey string
	Event          int
	Next, Created  time.Time
	// TraceParent and TraceState are stored NULL when empty.
	TraceParent, TraceState string
}

// EnqueueSinkDeliveries queues events outside an inbox row, all of them or none. What it
// queues is not derived from an inbox row (nothing would queue it again), so it commits
// durably.
func (c *Core) EnqueueSinkDeliveries(ctx context.Context, ds []store.SinkDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	return c.inTx(ctx, "enqueue sink deliveries", Durable, func() string { return "enqueue sink deliveries" },
		func(t Tx) error { return c.enqueue(ctx, t, ds) })
}

// enqueue checks the deliveries, encodes each distinct event once, and has the dialect insert
// the events and the deliveries referring to them in t. Only Sink, EventID (default Event.ID),
// Event, OrderKey, NextAttempt (default CreatedAt) and CreatedAt (default now) are read: a new
// row starts queued with no attempts. An event id stands for one event: the Event of its first
// delivery in ds is the one stored (and only when the id is not stored yet), and every sink it
// goes to gets that one.
func (c *Core) enqueue(ctx context.Context, t Tx, ds []store.SinkDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	// Rounded up to PostgreSQL's microsecond: a time taken "now" and stored must not come back
	// earlier than an instant read before the call.
	now := ceilMicro(c.now())
	rows := make([]SinkRow, len(ds))
	var events []SinkEvent
	index := make(map[string]int, 1)
	for i := range ds {
		d, r := &ds[i], &rows[i]
		eventID := cmp.Or(d.EventID, d.Event.ID)
		if d.Sink == "" {
			return fmt.Errorf("enqueue sink delivery %d: empty sink", i)
		}
		if eventID == "" {
			return fmt.Errorf("enqueue sink delivery %d for %s: empty event id", i, d.Sink)
		}
		eventID = c.d.text(eventID)
		e, ok := index[eventID]
		if !ok {
			ev := &d.Event
			if d.DataFrom != 0 {
				// The data stays where it is stored already: the message in its inbox row.
				head := *ev
				head.Data, ev = nil, &head
			}
			// json.Marshal's bytes (HTML escaped), without its copies of a large result.
			b, err := api.EncodeEvent(ev, true)
			if err != nil {
				return fmt.Errorf("enqueue sink delivery %d for %s: encode event: %w", i, d.Sink, err)
			}
			e = len(events)
			index[eventID] = e
			events = append(events, SinkEvent{ID: eventID, Body: b, Arg: c.d.JSON(b), Inbox: d.DataFrom})
		}
		r.Sink, r.OrderKey, r.Event = c.d.text(d.Sink), c.d.text(d.OrderKey), e
		r.Created, r.Next = d.CreatedAt, d.NextAttempt
		r.TraceParent, r.TraceState = c.d.text(d.TraceParent), c.d.text(d.TraceState)
		if r.Created.IsZero() {
			r.Created = now
		}
		if r.Next.IsZero() {
			r.Next = r.Created
		}
	}
	return c.w.InsertSinkRows(ctx, t, events, rows)
}

func ceilMicro(t time.Time) time.Time {
	if c := t.Truncate(time.Microsecond); !c.Equal(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// ClaimSinkDeliveries leases up to limit due deliveries of the sink (no limit when
// limit <= 0), in one statement, so two claimers never get the same row: SQLite runs one
// writer at a time, and PostgreSQL selects the candidates FOR UPDATE SKIP LOCKED (a claimer
// on another replica skips the rows this one is leasing, and a row leased meanwhile fails the
// conditions when checked again). Due means queued, next_attempt_at <= now and no lease, or a
// lease that ended before now (its holder died or overran). "Oldest first" is
// (next_attempt_at, id): the delivery due the longest goes first, and deliveries due at the
// same instant go in queue order.
//
// For an ordered sink a delivery is eligible only when no earlier delivery with the same order
// key is still queued: a key's deliveries go one at a time, in order, and a dead letter no
// longer holds its successors back. An empty order key means "no key": such deliveries are
// never held back.
func (c *Core) ClaimSinkDeliveries(ctx context.Context, sink string, ordered bool, now time.Time,
	lease time.Duration, limit int) ([]store.SinkDelivery, error) {
	return c.CompleteAndClaimSinkDeliveries(ctx, nil, sink, ordered, now, lease, limit)
}

// claimIn runs the claim of ClaimSinkDeliveries in t, oldest first.
func (c *Core) claimIn(ctx context.Context, t Tx, sink string, ordered bool, now time.Time, lease time.Duration,
	limit int) ([]store.SinkDelivery, error) {
	if lease <= 0 {
		return nil, fmt.Errorf("claim sink deliveries of %s: lease must be positive (got %s)", sink, lease)
	}
	rows, err := t.Query(ctx, StSinkClaim, c.d.Time(now.Add(lease)), c.d.text(sink), c.d.Time(now), ordered, c.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("claim sink deliveries of %s: %w", sink, err)
	}
	out, err := Collect(rows, ScanSinkDelivery)
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
// it. Completing it again is a no-op; an unknown id is store.ErrNotFound. Derived, like the
// claim: a completion lost in a power cut means the event is delivered again, under its id.
func (c *Core) CompleteSinkDelivery(ctx context.Context, id int64) error {
	if err := c.updateSinkDelivery(ctx, "complete sink delivery", Derived, StSinkComplete, c.d.Time(c.now()), id); err != nil {
		return fmt.Errorf("complete sink delivery %d: %w", id, err)
	}
	return nil
}

// RetrySinkDelivery counts a failed attempt of a queued delivery and releases its lease. A
// delivery that is not queued (delivered or dead meanwhile) is left alone and reported with
// store.ErrNotFound, as is an unknown id.
func (c *Core) RetrySinkDelivery(ctx context.Context, id int64, next time.Time, errMsg string) error {
	if err := c.updateSinkDelivery(ctx, "retry sink delivery", Derived, StSinkRetry, c.d.Time(next), c.d.text(errMsg), id); err != nil {
		return fmt.Errorf("retry sink delivery %d: %w", id, c.whyNot(ctx, id, sinkQueued, err))
	}
	return nil
}

// KillSinkDelivery counts the last failed attempt of a queued delivery and makes it a dead
// letter. A delivery that is not queued, or unknown, is store.ErrNotFound.
func (c *Core) KillSinkDelivery(ctx context.Context, id int64, errMsg string, at time.Time) error {
	if err := c.updateSinkDelivery(ctx, "kill sink delivery", Derived, StSinkKill, c.d.Time(at), c.d.text(errMsg), id); err != nil {
		return fmt.Errorf("kill sink delivery %d: %w", id, c.whyNot(ctx, id, sinkQueued, err))
	}
	return nil
}

// ReplayDeadLetter queues a dead letter again, due at now, with no attempts and no lease; its
// last error stays for the record. Only dead letters replay: a queued or delivered delivery,
// like an unknown id, is store.ErrNotFound. A replay is an operator's decision that nothing
// derives again, so it commits durably.
func (c *Core) ReplayDeadLetter(ctx context.Context, id int64, now time.Time) error {
	if err := c.updateSinkDelivery(ctx, "replay dead letter", Durable, StSinkReplay, c.d.Time(now), id); err != nil {
		return fmt.Errorf("replay dead letter %d: %w", id, c.whyNot(ctx, id, sinkDead, err))
	}
	return nil
}

// updateSinkDelivery runs the UPDATE st of one delivery in a transaction of its own (the
// queue's derived state is derived again by delivering again: at least once, same event id).
// store.ErrNotFound when it changed no row; the transaction has ended when it returns.
func (c *Core) updateSinkDelivery(ctx context.Context, op string, kind TxKind, st Stmt, args ...any) error {
	return c.inTx(ctx, op, kind|OneStatement, nil, func(t Tx) error {
		res, err := t.Exec(ctx, st, args...)
		if err != nil {
			return err
		}
		return OneRow(res)
	})
}

// ReleaseSinkLeases clears the lease of every queued delivery and reports how many it
// released, on a store one process owns alone (Dialect.ReleasesLeases: serve on SQLite, at
// startup): the leases it finds were taken by an earlier process, killed before it settled
// them, and would otherwise hold those deliveries back until they end. On a store replicas
// share it does nothing and returns 0: a lease found at startup may be another replica's, held
// for a delivery in progress, and releasing it would deliver the event twice at once.
func (c *Core) ReleaseSinkLeases(ctx context.Context) (int64, error) {
	if !c.d.ReleasesLeases {
		return 0, nil
	}
	n, err := c.execOne(ctx, "release sink leases", StSinkRelease)
	if err != nil {
		return 0, fmt.Errorf("release sink leases: %w", err)
	}
	return n, nil
}

// whyNot explains an UPDATE that matched no row although it may exist: the row's actual status
// makes "not found" readable ("it is delivered, not queued"). err is kept for errors.Is.
func (c *Core) whyNot(ctx context.Context, id int64, want string, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var status string
	if qerr := c.db.QueryRowContext(ctx, c.q[readSinkStatus], id).Scan(&status); qerr != nil {
		return err
	}
	return fmt.Errorf("it is %s, not %s: %w", status, want, err)
}
