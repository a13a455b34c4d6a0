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

// InsertSinkRows inserts the rows in one statement, ignoring a (sink, event id) pair already
// stored whatever its status, and the second of a pair in rows (the first is the one queued, as
// a later batch would find it).
//
// Ids, which order the deliveries of a key, are reserved in the caller's order, and the rows
// inserted in (sink, event id) order, for the reason Ingest gives: two transactions queueing
// the same events never wait for each other in a cycle. One array per column, as in Ingest:
// one statement text whatever the batch size.
func (w writes) InsertSinkRows(ctx context.Context, t sqlcore.Tx, all []sqlcore.SinkRow) error {
	seen := make(map[[2]string]bool, len(all))
	rows := make([]*sqlcore.SinkRow, 0, len(all))
	for i := range all {
		if k := [2]string{all[i].Sink, all[i].EventID}; !seen[k] {
			seen[k] = true
			rows = append(rows, &all[i])
		}
	}
	q := t.(*pgTx).q
	reserved, err := reserveIDs(ctx, q, "sink_deliveries_id_seq", len(rows))
	if err != nil {
		return fmt.Errorf("enqueue sink deliveries: %w", err)
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(rows[a].Sink, rows[b].Sink), strings.Compare(rows[a].EventID, rows[b].EventID))
	})
	n := len(rows)
	var (
		ids                      = make([]int64, n)
		sinks, events, orderKeys = make([]string, n), make([]string, n), make([]string, n)
		bodies                   = make([][]byte, n)
		next, created            = make([]time.Time, n), make([]time.Time, n)
	)
	for i, j := range order {
		r := rows[j]
		ids[i], sinks[i], events[i], orderKeys[i], bodies[i], next[i], created[i] =
			reserved[j], r.Sink, r.EventID, r.OrderKey, r.Event, r.Next, r.Created
	}
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
