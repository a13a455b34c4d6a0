package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// Ingest stores the deliveries in one transaction: classified ones in the inbox, quarantined
// ones in the quarantine table. A dedupe key seen before, in an earlier batch or earlier in
// this one, reports Duplicate with the first row's id.
func (s *Store) Ingest(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	for i := range ds {
		if ds[i].Quarantine == "" && ds[i].DedupeKey == "" {
			return nil, fmt.Errorf("ingest: delivery %d: empty dedupe key", i)
		}
	}
	w, err := s.begin(ctx, "ingest", durable)
	if err != nil {
		return nil, fmt.Errorf("ingest: begin: %w", err)
	}
	defer w.rollback()
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
	if err := w.commit(); err != nil {
		return nil, fmt.Errorf("ingest: commit: %w", err)
	}
	return out, nil
}

func ingestInbox(ctx context.Context, w *wtx, d *store.Delivery) (store.IngestResult, error) {
	headers, err := sqlcore.EncodeHeaders(d.Headers, nil)
	if err != nil {
		return store.IngestResult{}, err
	}
	var id int64
	err = w.stmt(stInboxInsert).QueryRowContext(w.ctx, d.DedupeKey, d.Route, string(d.Kind), d.Event, d.JobID,
		string(d.MessageType), string(d.Category), d.PartitionKey, headers, sqlcore.Blob(d.Body),
		nullTime(d.ReceivedAt)).Scan(&id)
	switch {
	case err == nil:
		return store.IngestResult{ID: id}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.IngestResult{}, fmt.Errorf("insert inbox row: %w", err)
	}
	// No row returned: the key exists, committed earlier or inserted earlier in this batch.
	if err := w.stmt(stInboxFind).QueryRowContext(w.ctx, d.DedupeKey).Scan(&id); err != nil {
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
	err = w.stmt(stQuarantineInsert).QueryRowContext(w.ctx, key, d.Route, d.Quarantine, headers, sqlcore.Blob(d.Body),
		nullTime(d.ReceivedAt)).Scan(&id)
	switch {
	case err == nil:
		return store.IngestResult{ID: id, Quarantined: true}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.IngestResult{}, fmt.Errorf("insert quarantine row: %w", err)
	}
	if err := w.stmt(stQuarantineFind).QueryRowContext(w.ctx, key).Scan(&id); err != nil {
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

// Apply runs fn and marks the inbox row done in one IMMEDIATE transaction, committed as a
// derived transaction (see "Durability" in the package documentation). fn must write through
// tx only (see the package documentation) and should be quick: the writer is held, and
// ingestion waits, while it runs. A failed row may be applied (a replay).
//
// The row is marked done first, by an UPDATE that skips a done row: one statement instead of
// a read of its status and a write, and fn's error still rolls the mark back.
func (s *Store) Apply(ctx context.Context, inboxID int64, fn func(ctx context.Context, tx store.Tx) error) error {
	w, err := s.begin(ctx, "apply", derived)
	if err != nil {
		return fmt.Errorf("apply inbox row %d: begin: %w", inboxID, err)
	}
	defer w.rollback()
	res, err := w.stmt(stInboxDone).ExecContext(w.ctx, formatTime(time.Now()), inboxID)
	if err != nil {
		return fmt.Errorf("apply inbox row %d: mark done: %w", inboxID, err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		// Done already, or no such row.
		var status string
		if err := w.stmt(stInboxStatus).QueryRowContext(w.ctx, inboxID).Scan(&status); err != nil {
			return fmt.Errorf("apply inbox row %d: %w", inboxID, sqlcore.NotFound(err))
		}
		return fmt.Errorf("apply inbox row %d: %w", inboxID, store.ErrAlreadyApplied)
	}
	if err := fn(ctx, &tx{w: w}); err != nil {
		return err
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("apply inbox row %d: commit: %w", inboxID, err)
	}
	return nil
}

// MarkInboxFailed counts a failed attempt and keeps its error; final marks the row failed. A
// row already done is left alone and reported with store.ErrAlreadyApplied. Derived: a lost
// attempt only means one more retry.
func (s *Store) MarkInboxFailed(ctx context.Context, inboxID int64, errMsg string, final bool) error {
	w, err := s.begin(ctx, "mark inbox failed", derived)
	if err != nil {
		return fmt.Errorf("mark inbox row %d failed: begin: %w", inboxID, err)
	}
	defer w.rollback()
	var status string
	if err := w.stmt(stInboxStatus).QueryRowContext(w.ctx, inboxID).Scan(&status); err != nil {
		return fmt.Errorf("mark inbox row %d failed: %w", inboxID, sqlcore.NotFound(err))
	}
	if store.InboxStatus(status) == store.InboxDone {
		return fmt.Errorf("mark inbox row %d failed: %w", inboxID, store.ErrAlreadyApplied)
	}
	if final {
		status = string(store.InboxFailed)
	}
	if _, err := w.stmt(stInboxFailed).ExecContext(w.ctx, errMsg, status, inboxID); err != nil {
		return fmt.Errorf("mark inbox row %d failed: %w", inboxID, err)
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("mark inbox row %d failed: commit: %w", inboxID, err)
	}
	return nil
}
