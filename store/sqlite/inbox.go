package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Ingest inserts the deliveries one by one on prepared statements, in one durable
// transaction: the writer is one connection, so a batch never meets another's uncommitted keys,
// and a key inserted earlier in the batch is found like a committed one.
func (ws writes) Ingest(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error) {
	return ws.s.IngestTaking(ctx, func() []store.Delivery { return ds })
}

// IngestTaking is Ingest of the deliveries take returns once the transaction has begun, that
// is once this process's writer is free (store.Batcher's group commit: what arrives while the
// writer is busy with a group of applies joins the batch instead of waiting for the next). take
// is called once, with the writer held; it may return no delivery, and then nothing is written.
func (s *Store) IngestTaking(ctx context.Context, take func() []store.Delivery) ([]store.IngestResult, error) {
	w, err := s.begin(ctx, "ingest", sqlcore.Durable)
	if err != nil {
		return nil, fmt.Errorf("ingest: begin: %w", err)
	}
	defer w.Rollback()
	ds := take()
	if len(ds) == 0 {
		return nil, nil
	}
	if err := sqlcore.CheckDeliveries(ds); err != nil {
		return nil, err
	}
	out := make([]store.IngestResult, len(ds))
	for i := range ds {
		if ds[i].Quarantine != "" {
			out[i], err = ingestQuarantine(ctx, w, &ds[i])
		} else {
			out[i], err = ingestInbox(ctx, w, &ds[i])
		}
		if err != nil {
			return nil, fmt.Errorf("ingest: delivery %d: %w", i, err)
		}
	}
	if err := w.Commit(); err != nil {
		return nil, fmt.Errorf("ingest: commit: %w", err)
	}
	return out, nil
}

func ingestInbox(ctx context.Context, w *wtx, d *store.Delivery) (store.IngestResult, error) {
	headers, err := sqlcore.EncodeHeaders(d.Headers, nil)
	if err != nil {
		return store.IngestResult{}, err
	}
	var spanOff, spanLen any // NULL: no message located
	if _, ok := d.Message.Of(d.Body); ok {
		spanOff, spanLen = d.Message.Off, d.Message.Len
	}
	var id int64
	res, err := w.Exec(ctx, stInboxInsert, d.DedupeKey, d.Route, string(d.Kind), d.Event, d.JobID,
		string(d.MessageType), string(d.Category), d.PartitionKey, headers, sqlcore.Blob(d.Body),
		dialect.NullTime(d.ReceivedAt), dialect.NullTime(d.MessageAt), spanOff, spanLen)
	if err != nil {
		return store.IngestResult{}, fmt.Errorf("insert inbox row: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return store.IngestResult{}, fmt.Errorf("insert inbox row: %w", err)
	} else if n == 1 {
		if id, err = res.LastInsertId(); err != nil {
			return store.IngestResult{}, fmt.Errorf("insert inbox row: %w", err)
		}
		return store.IngestResult{ID: id}, nil
	}
	// Nothing inserted: the key exists, committed earlier or inserted earlier in this batch.
	if err := w.QueryRow(ctx, stInboxFind, d.DedupeKey).Scan(&id); err != nil {
		return store.IngestResult{}, fmt.Errorf("find duplicate inbox row: %w", err)
	}
	return store.IngestResult{ID: id, Duplicate: true}, nil
}

func ingestQuarantine(ctx context.Context, w *wtx, d *store.Delivery) (store.IngestResult, error) {
	headers, err := sqlcore.EncodeHeaders(d.Headers, nil)
	if err != nil {
		return store.IngestResult{}, err
	}
	key := QuarantineKey(d.Route, d.Body)
	var id int64
	err = w.QueryRow(ctx, stQuarantineInsert, key, d.Route, d.Quarantine, headers, sqlcore.Blob(d.Body),
		dialect.NullTime(d.ReceivedAt)).Scan(&id)
	switch {
	case err == nil:
		return store.IngestResult{ID: id, Quarantined: true}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.IngestResult{}, fmt.Errorf("insert quarantine row: %w", err)
	}
	if err := w.QueryRow(ctx, stQuarantineFind, key).Scan(&id); err != nil {
		return store.IngestResult{}, fmt.Errorf("find duplicate quarantine row: %w", err)
	}
	return store.IngestResult{ID: id, Quarantined: true, Duplicate: true}, nil
}

// QuarantineKey is the dedupe key of a quarantined delivery, shared with the PostgreSQL store
// so that both dedupe a resent body alike.
func QuarantineKey(route string, body []byte) string {
	return sqlcore.QuarantineKey(route, body)
}

// limitArg maps the contract's "zero or less means no limit" to SQLite's LIMIT -1.
func limitArg(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}
