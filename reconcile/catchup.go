package reconcile

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Lister lists the service's jobs of kind created after a time, newest first, every page
// (GET /v2/pre-recorded, GET /v2/live with after_date): the catch-up of jobs created elsewhere.
type Lister interface {
	ListJobs(ctx context.Context, kind api.JobKind, createdAfter time.Time) iter.Seq2[api.Job, error]
}

// catchUp is the state of the catch-up of one kind: where the next listing starts.
type catchUp struct {
	since time.Time
}

// CatchUp lists the service's jobs and sessions created since the last one it saw (at first,
// Config.CatchUpWindow ago) and commits, for each one finished there that the store does not
// have, what its callbacks would have brought: for the jobs created elsewhere (static routes,
// account webhooks), whose callbacks may never have come. It returns what it committed. The
// listing starts again at the oldest job it saw unfinished, so that a job finishing later is
// not passed over; the position is kept in memory, and a restart lists the window again
// (what was committed then is a duplicate now).
func (r *Reconciler) CatchUp(ctx context.Context, dryRun bool) ([]Outcome, error) {
	if r.cfg.Lister == nil {
		return nil, errors.New("reconcile: catch-up needs a Lister")
	}
	r.pass.Lock()
	defer r.pass.Unlock()
	now := r.cfg.Now().UTC()
	var out []Outcome
	for _, kind := range []api.JobKind{api.KindPreRecorded, api.KindLive} {
		cu := r.catchUps[kind]
		if cu == nil {
			cu = &catchUp{since: now.Add(-r.cfg.CatchUpWindow)}
			r.catchUps[kind] = cu
		}
		next, o, err := r.catchUpKind(ctx, kind, cu.since, now, dryRun)
		out = append(out, o...)
		if err != nil {
			return out, err
		}
		if !dryRun {
			cu.since = next
		}
	}
	return out, nil
}

// catchUpKind lists kind's jobs created after since and returns where the next listing starts.
func (r *Reconciler) catchUpKind(ctx context.Context, kind api.JobKind, since, now time.Time, dry bool) (time.Time, []Outcome, error) {
	next := since
	var oldestOpen time.Time
	var out []Outcome
	for job, err := range r.cfg.Lister.ListJobs(ctx, kind, since) {
		if err != nil {
			return since, out, fmt.Errorf("reconcile: list the service's %s jobs: %w", kind, err)
		}
		created := job.CreatedAt.Time
		if created.After(next) {
			next = created
		}
		if !job.Status.Final() {
			if oldestOpen.IsZero() || created.Before(oldestOpen) {
				oldestOpen = created
			}
			continue
		}
		if _, err := r.cfg.Store.GetJob(ctx, job.ID); err == nil {
			continue // known here: its own callbacks, or the reconciliation list, see to it
		} else if !errors.Is(err, store.ErrNotFound) {
			return since, out, fmt.Errorf("reconcile: read job %s: %w", job.ID, err)
		}
		o := Outcome{JobID: job.ID, Kind: kind, Status: job.Status, Action: ActionApplied}
		var ds []store.Delivery
		if kind == api.KindLive {
			ds, err = r.missingMessages(ctx, &job, now)
		} else {
			ds, err = jobDeliveries(&job, now)
		}
		if err == nil && len(ds) > 0 && !dry {
			mark := store.ReconciledMark(len(ds), now)
			for i := range ds {
				ds[i].Headers[store.HeaderReconciled] = mark
			}
			_, err = r.cfg.Ingest(ctx, ds)
		}
		switch {
		case err != nil:
			o.Action, o.Error = ActionError, err.Error()
		case len(ds) == 0:
			o.Action = ActionVerified
		default:
			o.Deliveries = len(ds)
			if !dry {
				r.m.reconciled.WithLabelValues(string(kind)).Inc()
			}
		}
		out = append(out, o)
	}
	if !oldestOpen.IsZero() {
		next = oldestOpen.Add(-time.Millisecond)
	}
	return next, out, nil
}
