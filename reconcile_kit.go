package scribehook

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/reconcile"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// Reconcile asks the service once about every job and live session of the kit's whose end is
// due and not applied (docs/operations.md, Reconciliation), and reports what it did with each.
// What the lost callbacks would have brought is committed to the inbox and applied by the
// running kit (this one once started, else the serve that shares the store, within its
// bus.sweep_interval). With reconcile.catch_up it also catches up with the jobs created
// elsewhere (reconcile.Reconciler.CatchUp). With dryRun it asks and reports, and changes nothing. It works whether or
// not reconcile.enabled runs it in the background; it needs the service's API key.
func (k *Kit) Reconcile(ctx context.Context, dryRun bool) ([]reconcile.Outcome, error) {
	if k.reconciler == nil {
		return nil, fmt.Errorf("reconcile: no service client: set %s to the service API key", k.names.apiKey())
	}
	out, err := k.reconciler.Pass(ctx, dryRun)
	if err != nil || !k.cfg.Reconcile.CatchUp {
		return out, err
	}
	caught, err := k.reconciler.CatchUp(ctx, dryRun)
	return append(out, caught...), err
}

// ingestFetched commits what the reconciler fetched in place of lost callbacks, and tells the
// pipeline of each new row as the receiver does.
func (k *Kit) ingestFetched(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error) {
	res, err := k.store.Ingest(ctx, ds)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	running := k.started && !k.stopped
	k.mu.Unlock()
	if running {
		for i, r := range res {
			if !r.Duplicate && !r.Quarantined {
				k.pipeline.Committed(r.ID, ds[i].PartitionKey)
			}
		}
	}
	return res, nil
}

// emit queues an operational event of type typ for the sinks whose filters take it, but those
// named in skip.
func (k *Kit) emit(ctx context.Context, typ, key, jobID string, kind api.JobKind, data any) error {
	return k.emitSkipping(ctx, typ, key, jobID, kind, data)
}

func (k *Kit) emitSkipping(ctx context.Context, typ, key, jobID string, kind api.JobKind, data any, skip ...string) error {
	if k.pipeline == nil {
		return errors.New("emit: no pipeline")
	}
	ev, err := handlers.OperationalEvent(typ, key, jobID, kind, data, k.now())
	if err != nil {
		return err
	}
	return k.pipeline.Emit(ctx, ev, skip...)
}

// sinkStateChanged emits sink.disabled or sink.enabled to every other sink whose filter takes
// it. The event's id names the change (sink, state, since), so the replicas that all see it, or
// a restart that reads it again, emit one event.
func (k *Kit) sinkStateChanged(st store.SinkState) {
	typ := api.EventSinkEnabled
	if st.Disabled {
		typ = api.EventSinkDisabled
	}
	since := st.Since
	if since.IsZero() {
		since = k.now()
	}
	key := fmt.Sprintf("sink:%s:%t:%d", st.Name, st.Disabled, since.UnixNano())
	data := api.SinkStateData{Sink: st.Name, Disabled: st.Disabled, Reason: st.Reason, Since: api.NewTime(since)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.emitSkipping(ctx, typ, key, "", "", data, st.Name); err != nil {
		k.log.WithError(err).WithField("sink", st.Name).Warn("queue " + typ)
	}
}

// serviceLister lists the service's jobs for the catch-up.
type serviceLister struct{ c *submitter.Client }

// catchUpLister is the catch-up's Lister when on is set, else nil (no catch-up).
func catchUpLister(on bool, c *submitter.Client) reconcile.Lister {
	if !on || c == nil {
		return nil
	}
	return serviceLister{c}
}

func (l serviceLister) ListJobs(ctx context.Context, kind api.JobKind, after time.Time) iter.Seq2[api.Job, error] {
	e := submitter.EndpointPreRecorded
	if kind == api.KindLive {
		e = submitter.EndpointLive
	}
	limit := 100
	return l.c.All(ctx, e, api.ListQuery{AfterDate: api.NewTime(after).String(), Limit: &limit})
}
