package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// RouteReconcile is the Route of the deliveries the reconciler fetched from the service in
// place of lost callbacks (a pre-recorded job's result, a session's missing messages): they are
// applied as the callbacks would have been, once, under the same dedupe keys.
const RouteReconcile = "reconcile"

// SourceReconcile is Local.Source of a job whose end the reconciler applied.
const SourceReconcile = "reconcile"

// HeaderReconciled, in the Headers of each delivery of one reconciliation, holds how many
// deliveries it fetched and which check it was (ReconciledMark): applying such a row emits
// job.reconciled, one event per check.
const HeaderReconciled = "x-scribehook-reconciled"

// ReconciledMark is the HeaderReconciled value of the n deliveries fetched by the check at.
func ReconciledMark(n int, at time.Time) string {
	return strconv.Itoa(n) + ";check=" + strconv.FormatInt(at.UnixNano(), 10)
}

// ParseReconciledMark reads a HeaderReconciled value: the count and the check's name.
func ParseReconciledMark(v string) (n int, check string, ok bool) {
	count, check, found := strings.Cut(v, ";check=")
	n, err := strconv.Atoi(count)
	if !found || err != nil || n <= 0 || check == "" {
		return 0, "", false
	}
	return n, check, true
}

// ReconcileEntry is a job or live session the kit created and has not yet seen the end of: the
// reconciler (package reconcile) asks the service about it when it is due, in case its final
// callback never comes. CreateJob lists every job it creates; the reconciler takes an entry
// off the list once the job's end is applied locally.
type ReconcileEntry struct {
	JobID string
	Kind  api.JobKind
	// CreatedAt is when the job was listed (its creation at the service, as submitted).
	CreatedAt time.Time
	// DueAt is when the reconciler looks at the job next.
	DueAt time.Time
	// Checks counts the times the service was asked about the job.
	Checks int
	// OverdueAt is when the job was found overdue (job.overdue was queued); zero before.
	OverdueAt time.Time
	// CheckedAt, Status and LastError are the last check: when, the status the service gave,
	// and why it could not be asked.
	CheckedAt time.Time
	Status    string
	LastError string
}

// ReconcileList is the list of jobs waiting for their end, as the reconciler works it.
type ReconcileList interface {
	// DueReconciles lists the entries due at now (DueAt ≤ now), soonest first, at most limit
	// (no limit when limit <= 0).
	DueReconciles(ctx context.Context, now time.Time, limit int) ([]ReconcileEntry, error)
	// ReconcileEntry reads one entry; ErrNotFound when the job is not listed.
	ReconcileEntry(ctx context.Context, jobID string) (ReconcileEntry, error)
	// UpdateReconcile records a check of e.JobID: its DueAt, Checks, OverdueAt, CheckedAt, Status
	// and LastError. An entry no longer listed stays unlisted (no error).
	UpdateReconcile(ctx context.Context, e ReconcileEntry) error
	// FinishReconcile takes jobID off the list; a job not listed is no error.
	FinishReconcile(ctx context.Context, jobID string) error
	// ReconcileAhead counts the entries of kind listed before created: the jobs ahead of one
	// in the service's queue, as far as this kit knows.
	ReconcileAhead(ctx context.Context, kind api.JobKind, created time.Time) (int64, error)
}
