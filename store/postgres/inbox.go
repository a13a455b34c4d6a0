package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Ingest stores the deliveries in one transaction. Each table gets one multi-row INSERT … ON CONFLICT (dedupe_key) DO NOTHING RETURNING, then
// one look-up of the keys that were not inserted. Ids are reserved first, in batch
// order, and the rows inserted in dedupe key order: an insert that meets a key another
// transaction has inserted but not committed waits for it, and with every batch taking its
// keys in the same order no two batches ever wait for each other in a cycle.
func (w writes) Ingest(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error) {
	var inbox, quarantine []pending
	for i := range ds {
		if ds[i].Quarantine != "" {
			quarantine = append(quarantine, pending{idx: i, key: QuarantineKey(ds[i].Route, ds[i].Body)})
		} else {
			inbox = append(inbox, pending{idx: i, key: text(ds[i].DedupeKey)})
		}
	}
	tx, err := w.s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ingest: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	out := make([]store.IngestResult, len(ds))
	if err := ingestTable(ctx, tx, inboxTable, ds, inbox, out); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if err := ingestTable(ctx, tx, quarantineTable, ds, quarantine, out); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ingest: commit: %w", err)
	}
	return out, nil
}

// pending is one delivery of a batch on its way to a table.
type pending struct {
	idx int    // in the batch
	key string // dedupe key as stored
	id  int64  // reserved id
}

// tableSpec describes how deliveries go into one of the two tables.
type tableSpec struct {
	name, sequence string
	quarantined    bool
	// own gives the table's own text columns, those between route and headers in insert.
	own []func(d *store.Delivery) string
	// insert inserts rows (ids reserved, in key order) from one array per column (id,
	// dedupe_key, route, own…, headers, body, received_at) with ON CONFLICT (dedupe_key) DO
	// NOTHING and returns the rows it inserted.
	insert string
}

// The inserts pass one array per column to unnest, so each table has one statement text
// whatever the batch size: pgx prepares it once per connection instead of once per size.
// unnest yields the rows in array order, which is the order they are inserted in.
var (
	inboxTable = tableSpec{name: "inbox", sequence: "inbox_id_seq",
		own: []func(d *store.Delivery) string{
			func(d *store.Delivery) string { return string(d.Kind) },
			func(d *store.Delivery) string { return d.Event },
			func(d *store.Delivery) string { return d.JobID },
			func(d *store.Delivery) string { return string(d.MessageType) },
			func(d *store.Delivery) string { return string(d.Category) },
			func(d *store.Delivery) string { return d.PartitionKey },
		},
		insert: `INSERT INTO inbox (id, dedupe_key, route, kind, event, job_id, message_type,
			category, partition_key, headers, body, received_at, message_at, payload_at, payload_len)
		SELECT id, dedupe_key, route, kind, event, job_id, message_type, category, partition_key,
			headers::jsonb, body, received_at, message_at, payload_at, payload_len
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::bytea[], $12::timestamptz[], $13::timestamptz[],
			$14::integer[], $15::integer[])
			AS u (id, dedupe_key, route, kind, event, job_id, message_type, category, partition_key, headers,
				body, received_at, message_at, payload_at, payload_len)
		ON CONFLICT (dedupe_key) DO NOTHING
		RETURNING dedupe_key, id`}

	quarantineTable = tableSpec{name: "quarantine", sequence: "quarantine_id_seq", quarantined: true,
		own: []func(d *store.Delivery) string{func(d *store.Delivery) string { return d.Quarantine }},
		insert: `INSERT INTO quarantine (id, dedupe_key, route, reason, headers, body, received_at)
		SELECT id, dedupe_key, route, reason, headers::jsonb, body, received_at
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::timestamptz[])
			AS u (id, dedupe_key, route, reason, headers, body, received_at)
		ON CONFLICT (dedupe_key) DO NOTHING
		RETURNING dedupe_key, id`}
)

// insertRows runs tbl's insert for rows.
func insertRows(ctx context.Context, tx *sql.Tx, tbl tableSpec, ds []store.Delivery, rows []*pending) (*sql.Rows, error) {
	n := len(rows)
	var (
		ids          = make([]int64, n)
		keys, routes = make([]string, n), make([]string, n)
		own          = make([][]string, len(tbl.own))
		headers      = make([]*string, n)
		bodies       = make([][]byte, n)
		received     = make([]*time.Time, n)
	)
	for c := range own {
		own[c] = make([]string, n)
	}
	for i, p := range rows {
		d := &ds[p.idx]
		h, err := sqlcore.EncodeHeaders(d.Headers, text)
		if err != nil {
			return nil, fmt.Errorf("delivery %d: %w", p.idx, err)
		}
		ids[i], keys[i], routes[i] = p.id, p.key, text(d.Route)
		for c, col := range tbl.own {
			own[c][i] = text(col(d))
		}
		headers[i], bodies[i], received[i] = nullString(h), sqlcore.Blob(d.Body), timePtr(d.ReceivedAt)
	}
	args := []any{ids, keys, routes}
	for _, col := range own {
		args = append(args, col)
	}
	args = append(args, headers, bodies, received)
	if !tbl.quarantined {
		// Where the receiver located a live message in the body (store.Delivery.Message).
		at, off, length := make([]*time.Time, n), make([]*int64, n), make([]*int64, n)
		for i, p := range rows {
			d := &ds[p.idx]
			at[i] = timePtr(d.MessageAt)
			if _, ok := d.Message.Of(d.Body); ok {
				o, l := int64(d.Message.Off), int64(d.Message.Len)
				off[i], length[i] = &o, &l
			}
		}
		args = append(args, at, off, length)
	}
	return tx.QueryContext(ctx, tbl.insert, args...)
}

func ingestTable(ctx context.Context, tx *sql.Tx, tbl tableSpec, ds []store.Delivery, ps []pending, out []store.IngestResult) error {
	if len(ps) == 0 {
		return nil
	}
	// The first delivery of each key is the one inserted; later ones in the batch are its
	// duplicates.
	first := make(map[string]int, len(ps)) // key → index in ps
	var fresh []*pending
	for i := range ps {
		if _, seen := first[ps[i].key]; !seen {
			first[ps[i].key] = i
			fresh = append(fresh, &ps[i])
		}
	}
	ids, err := reserveIDs(ctx, tx, tbl.sequence, len(fresh))
	if err != nil {
		return fmt.Errorf("%s: %w", tbl.name, err)
	}
	for i, p := range fresh {
		p.id = ids[i]
	}
	byKey := slices.Clone(fresh)
	slices.SortFunc(byKey, func(a, b *pending) int { return cmp.Compare(a.key, b.key) })

	inserted := make(map[string]int64, len(fresh))
	rows, err := insertRows(ctx, tx, tbl, ds, byKey)
	if err != nil {
		return fmt.Errorf("insert %s rows: %w", tbl.name, err)
	}
	if err := scanKeyIDs(rows, inserted); err != nil {
		return fmt.Errorf("insert %s rows: %w", tbl.name, err)
	}

	// No row returned for a key: it was committed before, possibly by another replica a moment
	// ago (the insert waited for that transaction, and this statement sees its commit).
	var missing []string
	for _, p := range fresh {
		if _, ok := inserted[p.key]; !ok {
			missing = append(missing, p.key)
		}
	}
	existing := make(map[string]int64, len(missing))
	if len(missing) > 0 {
		rows, err := tx.QueryContext(ctx, `SELECT dedupe_key, id FROM `+tbl.name+` WHERE dedupe_key = ANY($1)`, missing)
		if err != nil {
			return fmt.Errorf("find duplicate %s rows: %w", tbl.name, err)
		}
		if err := scanKeyIDs(rows, existing); err != nil {
			return fmt.Errorf("find duplicate %s rows: %w", tbl.name, err)
		}
	}

	for i, p := range ps {
		r := store.IngestResult{Quarantined: tbl.quarantined}
		if id, ok := inserted[p.key]; ok {
			r.ID, r.Duplicate = id, first[p.key] != i
		} else if id, ok := existing[p.key]; ok {
			r.ID, r.Duplicate = id, true
		} else {
			return fmt.Errorf("%s: delivery %d: key neither inserted nor found", tbl.name, p.idx)
		}
		out[p.idx] = r
	}
	return nil
}

func scanKeyIDs(rows *sql.Rows, into map[string]int64) error {
	defer rows.Close()
	for rows.Next() {
		var (
			key string
			id  int64
		)
		if err := rows.Scan(&key, &id); err != nil {
			return err
		}
		into[key] = id
	}
	return rows.Err()
}

// QuarantineKey is the dedupe key of a quarantined delivery, shared with the SQLite store so
// that both dedupe a resent body alike.
func QuarantineKey(route string, body []byte) string {
	return sqlcore.QuarantineKey(route, body)
}
