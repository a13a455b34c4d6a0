package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

const reconcileColumns = `job_id, kind, created_at, due_at, checks, overdue_at, checked_at, status, last_error`

// listReconcile lists rec's job for reconciliation in t, due at its creation, unless listed.
func (c *Core) listReconcile(ctx context.Context, t Tx, rec store.JobRecord) error {
	created := rec.Job.CreatedAt.UTC().Truncate(time.Millisecond)
	if _, err := t.Exec(ctx, StReconcileList, c.d.text(rec.Job.ID), c.d.text(string(rec.Job.Kind)),
		c.d.Time(created), c.d.Time(created)); err != nil {
		return fmt.Errorf("list job %s for reconciliation: %w", rec.Job.ID, err)
	}
	return nil
}

// UpdateReconcile records a check of e.JobID. The check's outcome is what the service said,
// which the next check would learn again: it commits as derived.
func (c *Core) UpdateReconcile(ctx context.Context, e store.ReconcileEntry) error {
	name := func() string { return "update reconcile " + e.JobID }
	return c.inTx(ctx, "update reconcile", Derived|OneStatement, name, func(t Tx) error {
		if _, err := t.Exec(ctx, StReconcileUpdate, c.d.Time(e.DueAt.UTC()), e.Checks, c.optTime(e.OverdueAt),
			c.optTime(e.CheckedAt), c.d.text(e.Status), c.d.text(e.LastError), c.d.text(e.JobID)); err != nil {
			return fmt.Errorf("%s: %w", name(), err)
		}
		return nil
	})
}

// FinishReconcile takes jobID off the list.
func (c *Core) FinishReconcile(ctx context.Context, jobID string) error {
	name := func() string { return "finish reconcile " + jobID }
	return c.inTx(ctx, "finish reconcile", Derived|OneStatement, name, func(t Tx) error {
		if _, err := t.Exec(ctx, StReconcileFinish, c.d.text(jobID)); err != nil {
			return fmt.Errorf("%s: %w", name(), err)
		}
		return nil
	})
}

func (c *Core) optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return c.d.Time(t.UTC())
}

// DueReconciles lists the entries due at now, soonest first.
func (r *Reader) DueReconciles(ctx context.Context, now time.Time, limit int) ([]store.ReconcileEntry, error) {
	out, err := Query(ctx, r.db, scanReconcile, r.d.Rebind(`SELECT `+reconcileColumns+` FROM reconcile
		WHERE due_at <= ? ORDER BY due_at, job_id LIMIT ?`), r.d.Time(now.UTC()), r.d.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("due reconciles: %w", err)
	}
	return out, nil
}

// ReconcileEntry reads jobID's entry.
func (r *Reader) ReconcileEntry(ctx context.Context, jobID string) (store.ReconcileEntry, error) {
	out, err := Query(ctx, r.db, scanReconcile, r.d.Rebind(`SELECT `+reconcileColumns+` FROM reconcile
		WHERE job_id = ?`), r.d.text(jobID))
	switch {
	case err != nil:
		return store.ReconcileEntry{}, fmt.Errorf("reconcile entry %s: %w", jobID, err)
	case len(out) == 0:
		return store.ReconcileEntry{}, fmt.Errorf("reconcile entry %s: %w", jobID, store.ErrNotFound)
	}
	return out[0], nil
}

// ReconcileAhead counts the entries of kind listed before created.
func (r *Reader) ReconcileAhead(ctx context.Context, kind api.JobKind, created time.Time) (int64, error) {
	var n int64
	err := r.db.QueryRowContext(ctx, r.d.Rebind(`SELECT count(*) FROM reconcile WHERE kind = ? AND created_at < ?`),
		r.d.text(string(kind)), r.d.Time(created.UTC())).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reconcile queue position: %w", err)
	}
	return n, nil
}

func scanReconcile(sc Scanner) (store.ReconcileEntry, error) {
	var (
		e                              store.ReconcileEntry
		kind                           string
		created, due, overdue, checked Time
	)
	err := sc.Scan(&e.JobID, &kind, &created, &due, &e.Checks, &overdue, &checked, &e.Status, &e.LastError)
	if err != nil {
		return e, errors.Join(errors.New("scan reconcile entry"), err)
	}
	e.Kind, e.CreatedAt, e.DueAt, e.OverdueAt, e.CheckedAt = api.JobKind(kind), created.T, due.T, overdue.T, checked.T
	return e, nil
}
