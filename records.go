package scribehook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Records is what the kit stored, for application code to read: job records, live messages,
// artifacts, quarantined deliveries, the deliveries that failed for good, which it can replay,
// the sinks' queues and their dead letters, which it can queue again. The store's write side (ingesting deliveries, applying them, claiming sink
// deliveries, binding tokens, pruning) stays the kit's own: nothing here changes what a
// delivery did. A *Records is a store.JobReader, so WaitJob reads through it. Its methods are
// safe for concurrent use and read the store as it is at the call (the read API's view).
type Records struct {
	k *Kit
}

// Records is the kit's read-only view of its store.
func (k *Kit) Records() *Records { return &Records{k: k} }

var _ store.JobReader = (*Records)(nil)

// GetJob reads one job (or live session) by id: the service's record as the last delivery
// applied left it, with what the kit knows beyond it (store.Local). An unknown id is
// store.ErrNotFound.
func (r *Records) GetJob(ctx context.Context, id string) (store.JobRecord, error) {
	return r.k.store.GetJob(ctx, id)
}

// ListJobs lists job records newest first, filtered and paged as the read API's GET /v1/jobs
// does (q's status, kind, dates, custom_metadata subset, offset and limit; no limit is
// api.DefaultListLimit).
func (r *Records) ListJobs(ctx context.Context, q api.ListQuery) (store.JobPage, error) {
	return r.k.store.ListJobs(ctx, q)
}

// Search finds the utterances of every job and live session that hold every term of q.Text
// (words, "exact phrases", prefix* terms: store.ParseSearch), filtered by q.List as ListJobs
// filters jobs and paged with its offset and limit, as GET /v1/search does: the newest job
// first, then its utterances in time order, each with its text and the same text marked for
// HTML. A query that does not parse is store.ErrBadQuery; a store that cannot search (SQLite
// in a program built without -tags sqlite_fts5) store.ErrSearchUnavailable.
func (r *Records) Search(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	s, ok := r.k.store.(store.Searcher)
	if !ok {
		return store.SearchPage{}, fmt.Errorf("search: %T does not implement store.Searcher: %w", r.k.store, store.ErrSearchUnavailable)
	}
	return s.Search(ctx, q)
}

// LiveMessages lists a live session's stored messages with Seq > afterSeq, in order, at most
// limit (zero or less: all of them).
func (r *Records) LiveMessages(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]store.LiveMessage, error) {
	return r.k.store.LiveMessages(ctx, sessionID, afterSeq, limit)
}

// Artifacts lists the files the kit made for a job (its subtitles), by name.
func (r *Records) Artifacts(ctx context.Context, jobID string) ([]store.Artifact, error) {
	return r.k.store.Artifacts(ctx, jobID)
}

// Quarantined lists the deliveries that authenticated but could not be used (a body that
// could not be classified, a callback after its job's final one), newest first, at most limit
// (zero or less: all of them).
func (r *Records) Quarantined(ctx context.Context, limit int) ([]store.QuarantineRow, error) {
	return r.k.store.Quarantined(ctx, limit)
}

// FailedInbox lists the deliveries whose apply failed for good (after every retry, or at once
// when no retry could change it: a body that does not decode), newest first, as GET
// /v1/inbox/failed does: every criterion f sets holds, limit zero or less is no limit. The rows
// come without their bodies and headers; InboxRow reads one whole.
func (r *Records) FailedInbox(ctx context.Context, f store.InboxFilter, limit int) ([]store.InboxRow, error) {
	return r.k.store.FailedInbox(ctx, f, limit)
}

// InboxRow reads one stored delivery (an inbox row) with its body and headers, whatever its
// status; an unknown id is store.ErrNotFound.
func (r *Records) InboxRow(ctx context.Context, id int64) (store.InboxRow, error) {
	return r.k.store.InboxRow(ctx, id)
}

// ReplayInbox moves the failed deliveries f selects back to pending, due now on the kit's
// clock, their attempts reset, and tells the kit's pipeline, which applies each once (a
// delivery applied meanwhile is left out: exactly once holds); it returns the rows it moved.
// An empty filter replays nothing unless f.All says every failed delivery:
// store.ErrEmptyFilter. Fix what made them fail first, or they fail again after their retries.
func (r *Records) ReplayInbox(ctx context.Context, f store.InboxFilter) ([]store.InboxKey, error) {
	moved, err := r.k.store.ReplayInbox(ctx, f, r.k.now())
	if len(moved) > 0 {
		// Even after an error: what moved is pending, and is applied.
		r.k.pipeline.Replayed(moved)
	}
	return moved, err
}

// DeadLetters lists the deliveries that failed their last attempt, newest first, as GET
// /v1/deadletters does: sink "" is every sink, a zero since is all of them, limit zero or less
// is no limit.
func (r *Records) DeadLetters(ctx context.Context, sink string, since time.Time, limit int) ([]store.SinkDelivery, error) {
	return r.k.store.DeadLetters(ctx, sink, since, limit)
}

// ReplayDeadLetter queues a dead letter again, due now on the kit's clock, attempts reset, and
// wakes the kit's sinks: the same event (same ID) is delivered again. An id that is not a dead
// letter (unknown, or already replayed) is store.ErrNotFound.
func (r *Records) ReplayDeadLetter(ctx context.Context, id int64) error {
	if err := r.k.store.ReplayDeadLetter(ctx, id, r.k.now()); err != nil {
		return err
	}
	r.k.dispatch.Wake("")
	return nil
}

// ReplayDeadLetters queues again every dead letter DeadLetters(ctx, sink, since, 0) lists, as
// ReplayDeadLetter does, and reports how many it queued; one replayed meanwhile by someone
// else is left out. At least one of sink and since is required, so that an empty filter
// replays nothing by accident.
func (r *Records) ReplayDeadLetters(ctx context.Context, sink string, since time.Time) (int, error) {
	if sink == "" && since.IsZero() {
		return 0, errors.New("replay dead letters: give a sink, a time, or both")
	}
	rows, err := r.k.store.DeadLetters(ctx, sink, since, 0)
	if err != nil {
		return 0, fmt.Errorf("list dead letters: %w", err)
	}
	now, n := r.k.now(), 0
	for _, d := range rows {
		switch err := r.k.store.ReplayDeadLetter(ctx, d.ID, now); {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return n, fmt.Errorf("replay dead letter %d: %w", d.ID, err)
		default:
			n++
		}
	}
	if n > 0 {
		r.k.dispatch.Wake("")
	}
	return n, nil
}

// SinkDepth counts a sink's (or an event handler's) queued deliveries: neither delivered nor
// dead.
func (r *Records) SinkDepth(ctx context.Context, sink string) (int64, error) {
	return r.k.store.SinkDepth(ctx, sink)
}

// SinkStatuses is Kit.SinkStatuses: every sink and handler with its queue and recorded state,
// the queues nothing delivers marked Orphaned.
func (r *Records) SinkStatuses(ctx context.Context) ([]SinkStatus, error) {
	return r.k.SinkStatuses(ctx)
}
