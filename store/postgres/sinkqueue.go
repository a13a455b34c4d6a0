package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// InsertSinkRows stores the events whose ids are not stored yet in one statement, finds the
// others in a second, then inserts the rows referring to them in a third, ignoring a
// (sink, event) pair already stored whatever its status, and the second of a pair in rows (the
// first is the one queued, as a later batch would find it).
//
// Events are inserted in event id order, and the rows in (event id, sink) order, for the reason
// Ingest gives: two transactions queueing the same events never wait for each other in a cycle.
// An event another transaction has inserted but not committed makes the insert wait for it;
// the look-up that follows, a statement of its own, then sees it, and locks it against the
// pruner (there is no foreign key, whose check would cost a query per row). Ids of the rows, which order
// the deliveries of a key, are reserved in the caller's order. One array per column, as in
// Ingest: one statement text whatever the batch size.
func (w writes) InsertSinkRows(ctx context.Context, t sqlcore.Tx, events []sqlcore.SinkEvent, all []sqlcore.SinkRow) error {
	q := t.(*pgTx).q
	ids, err := eventIDs(ctx, q, events)
	if err != nil {
		return fmt.Errorf("enqueue sink deliveries: %w", err)
	}
	type pair struct {
		sink  string
		event int64
	}
	seen := make(map[pair]bool, len(all))
	rows := make([]*sqlcore.SinkRow, 0, len(all))
	for i := range all {
		if k := (pair{all[i].Sink, ids[all[i].Event]}); !seen[k] {
			seen[k] = true
			rows = append(rows, &all[i])
		}
	}
	reserved, err := reserveIDs(ctx, q, "sink_deliveries_id_seq", len(rows))
	if err != nil {
		return fmt.Errorf("enqueue sink deliveries: %w", err)
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(events[rows[a].Event].ID, events[rows[b].Event].ID),
			strings.Compare(rows[a].Sink, rows[b].Sink))
	})
	n := len(rows)
	var (
		rowIDs, refs     = make([]int64, n), make([]int64, n)
		sinks, orderKeys = make([]string, n), make([]string, n)
		next, created    = make([]time.Time, n), make([]time.Time, n)
		parents, states  = make([]string, n), make([]string, n)
	)
	for i, j := range order {
		r := rows[j]
		rowIDs[i], refs[i], sinks[i], orderKeys[i], next[i], created[i], parents[i], states[i] =
			reserved[j], ids[r.Event], r.Sink, r.OrderKey, r.Next, r.Created, r.TraceParent, r.TraceState
	}
	// The trace context is NULL when empty (tracing off), as on SQLite.
	if _, err := q.ExecContext(ctx, `INSERT INTO sink_deliveries (id, sink, event, order_key,
			next_attempt_at, created_at, traceparent, tracestate)
		SELECT id, sink, event, order_key, next_attempt_at, created_at, nullif(tp, ''), nullif(ts, '')
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[],
			$5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[])
			AS u (id, sink, event, order_key, next_attempt_at, created_at, tp, ts)
		ON CONFLICT (event, sink) DO NOTHING`,
		rowIDs, sinks, refs, orderKeys, next, created, parents, states); err != nil {
		return fmt.Errorf("enqueue sink deliveries: %w", err)
	}
	return nil
}

// eventIDs stores the events whose ids are not stored yet and returns the row id of each.
func eventIDs(ctx context.Context, q sqlcore.Querier, events []sqlcore.SinkEvent) ([]int64, error) {
	byID := make([]*sqlcore.SinkEvent, len(events))
	for i := range events {
		byID[i] = &events[i]
	}
	slices.SortFunc(byID, func(a, b *sqlcore.SinkEvent) int { return strings.Compare(a.ID, b.ID) })
	keys, bodies, inbox := make([]string, len(byID)), make([][]byte, len(byID)), make([]*int64, len(byID))
	for i, e := range byID {
		keys[i], bodies[i] = e.ID, e.Body
		if e.Inbox != 0 {
			inbox[i] = &e.Inbox // else NULL: the event's data is in its body
		}
	}
	found := make(map[string]int64, len(events))
	rows, err := q.QueryContext(ctx, `INSERT INTO events (event_id, body, inbox_id)
		SELECT * FROM unnest($1::text[], $2::bytea[], $3::bigint[])
		ON CONFLICT (event_id) DO NOTHING
		RETURNING event_id, id`, keys, bodies, inbox)
	if err != nil {
		return nil, fmt.Errorf("insert events: %w", err)
	}
	if err := scanKeyIDs(rows, found); err != nil {
		return nil, fmt.Errorf("insert events: %w", err)
	}
	if len(found) < len(keys) {
		var missing []string
		for _, k := range keys {
			if _, ok := found[k]; !ok {
				missing = append(missing, k)
			}
		}
		// Locked until the transaction ends: the pruner, which locks an event FOR UPDATE before
		// it checks that no delivery refers to it, waits for this one's deliveries and then
		// sees them; or it deleted the event first, and the look-up does not find it.
		rows, err := q.QueryContext(ctx, `SELECT event_id, id FROM events WHERE event_id = ANY($1)
			ORDER BY event_id FOR KEY SHARE`, missing)
		if err != nil {
			return nil, fmt.Errorf("find events: %w", err)
		}
		if err := scanKeyIDs(rows, found); err != nil {
			return nil, fmt.Errorf("find events: %w", err)
		}
	}
	ids := make([]int64, len(events))
	for i := range events {
		id, ok := found[events[i].ID]
		if !ok {
			// Deleted by the pruner between the insert and the look-up: queued again, it is
			// stored again.
			return nil, fmt.Errorf("event %s was deleted while it was queued", events[i].ID)
		}
		ids[i] = id
	}
	return ids, nil
}
