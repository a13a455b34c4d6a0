// Package reconcile asks the service about the jobs and live sessions a kit created whose end
// it has not heard of, and applies what their lost callbacks would have brought.
//
// Results come by callback; when one never comes (the kit was down longer than the service
// retries, a proxy dropped it, a bug on either side), the job would stay queued for ever. The
// store lists every job the kit creates (store.ReconcileList); a Reconciler looks at the list
// every Config.Every and, for each entry due, asks the service once:
//
//   - a pre-recorded job the service has finished is applied as if its callback had come:
//     the callback's body is made from the service's record and committed to the inbox under
//     the callback's own dedupe key (store.JobDedupeKey), so whichever of the two comes second
//     is a duplicate there;
//   - a live session the service has finished (and, once, every session after its end was
//     applied) is compared with its record's result.messages: the messages of the session's
//     callback categories that are not stored are committed to the inbox in the record's order,
//     each under the dedupe key its callback would have had (store.LiveDedupeKey). A stored
//     message and one of the record are the same when their JSON is (Identity: the same
//     members and values, whatever their order, white space or number spelling);
//   - a job the service has not finished is asked again later: the wait doubles from
//     Config.After up to Config.MaxWait, and is at least its audio's duration times
//     Config.AudioFactor and its queue position times Config.QueueStep.
//
// The rows are applied by the pipeline like callbacks (route store.RouteReconcile), once, and
// the last of them emits job.reconciled in the same transaction. job.overdue is emitted when a
// job's end is known at the service and not applied locally, or the service cannot be asked.
package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/metricreg"
	"github.com/scribehook/scribehook/store"
)

// Defaults of Config.
const (
	DefaultAfter       = 2 * time.Minute
	DefaultEvery       = 30 * time.Second
	DefaultMaxWait     = 30 * time.Minute
	DefaultGiveUp      = 72 * time.Hour
	DefaultAudioFactor = 0.5
	DefaultQueueStep   = 10 * time.Second
	DefaultBatch       = 100
	// DefaultCatchUpWindow is how far back the first catch-up lists the service's jobs.
	DefaultCatchUpWindow = 24 * time.Hour
)

// Service is what the reconciler asks of the service: a job's or session's record (GET
// /v2/pre-recorded/{id}, GET /v2/live/{id}).
type Service interface {
	GetJob(ctx context.Context, id string, kind api.JobKind) (api.Job, error)
}

// Store is what the reconciler needs of the store: the list it works, the local records and
// messages it compares with the service's. A store.Store is one.
type Store interface {
	store.ReconcileList
	GetJob(ctx context.Context, id string) (store.JobRecord, error)
	LiveMessages(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]store.LiveMessage, error)
}

// Config holds a Reconciler's dependencies and settings; zero values take the defaults.
type Config struct {
	Store   Store
	Service Service
	// Ingest commits deliveries to the inbox in one transaction and has them applied (the kit
	// commits and notifies its pipeline; a process without a pipeline commits, and the running
	// kit's sweep applies them).
	Ingest func(ctx context.Context, ds []store.Delivery) ([]store.IngestResult, error)
	// Emit queues an operational event for the sinks (job.overdue, with api.OverdueData), with
	// an id derived from key, so that the same occurrence emitted twice is one event
	// (handlers.OperationalEvent and Pipeline.Emit do it); nil emits none.
	Emit func(ctx context.Context, typ, key, jobID string, kind api.JobKind, data any) error
	// After is the shortest wait after a job's creation (or a session's end) before the
	// service is asked about it.
	After time.Duration
	// Every is how often Run looks at the list.
	Every time.Duration
	// MaxWait caps the wait between two questions about one job.
	MaxWait time.Duration
	// GiveUp is how long after its creation a job the service never finishes is asked about;
	// it is then taken off the list (logged and counted).
	GiveUp time.Duration
	// AudioFactor: a job is not asked about again before its audio's duration times this has
	// passed since it was last seen unfinished (the service's processing time per second).
	AudioFactor float64
	// QueueStep: a queued job waits at least this per job of the kit's ahead of it.
	QueueStep time.Duration
	// Batch bounds the entries one pass takes.
	Batch int
	// Lister, with CatchUpWindow, makes each Run pass also catch up with the jobs created
	// elsewhere (CatchUp); nil: no catch-up.
	Lister Lister
	// CatchUpWindow is how far back the first catch-up lists (default DefaultCatchUpWindow).
	CatchUpWindow time.Duration
	Now           func() time.Time
	Logger        logrus.FieldLogger
	Metrics       prometheus.Registerer
}

// Reconciler works the reconciliation list. Its methods are safe for concurrent use; passes
// run one at a time.
type Reconciler struct {
	cfg  Config
	log  logrus.FieldLogger
	m    metrics
	pass sync.Mutex
	// catchUps is where each kind's next catch-up listing starts (under pass).
	catchUps map[api.JobKind]*catchUp
}

type metrics struct {
	checks     *prometheus.CounterVec
	overdue    *prometheus.CounterVec
	reconciled *prometheus.CounterVec
	gaveUp     prometheus.Counter
}

// New checks cfg and builds a Reconciler.
func New(cfg Config) (*Reconciler, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("reconcile: Store is required")
	case cfg.Service == nil:
		return nil, errors.New("reconcile: Service is required")
	case cfg.Ingest == nil:
		return nil, errors.New("reconcile: Ingest is required")
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"After", &cfg.After, DefaultAfter}, {"Every", &cfg.Every, DefaultEvery}, {"MaxWait", &cfg.MaxWait, DefaultMaxWait},
		{"GiveUp", &cfg.GiveUp, DefaultGiveUp}, {"QueueStep", &cfg.QueueStep, DefaultQueueStep},
		{"CatchUpWindow", &cfg.CatchUpWindow, DefaultCatchUpWindow}} {
		if *d.v < 0 {
			return nil, fmt.Errorf("reconcile: %s must not be negative", d.name)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.AudioFactor < 0 {
		return nil, errors.New("reconcile: AudioFactor must not be negative")
	}
	if cfg.AudioFactor == 0 {
		cfg.AudioFactor = DefaultAudioFactor
	}
	if cfg.MaxWait < cfg.After {
		return nil, fmt.Errorf("reconcile: MaxWait (%s) must be at least After (%s)", cfg.MaxWait, cfg.After)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reconciler{cfg: cfg, log: logx.OrDiscard(cfg.Logger).WithField("component", "reconcile"), catchUps: map[api.JobKind]*catchUp{}}
	r.m = metrics{
		checks: metricreg.CounterVec("scribehook_reconcile_checks_total",
			"Questions to the service about jobs whose end was not applied, by outcome: waiting (not finished there), applied, verified (nothing missing), error.", "outcome"),
		overdue: metricreg.CounterVec("scribehook_jobs_overdue_total",
			"Jobs and sessions found overdue (job.overdue), by kind.", "kind"),
		reconciled: metricreg.CounterVec("scribehook_jobs_reconciled_total",
			"Jobs and sessions whose lost callbacks were fetched from the service and committed, by kind.", "kind"),
		gaveUp: metricreg.Counter("scribehook_reconcile_gave_up_total",
			"Jobs taken off the reconciliation list unfinished after reconcile.give_up."),
	}
	if cfg.Metrics != nil {
		if err := metricreg.Register(cfg.Metrics, r.m.checks, r.m.overdue, r.m.reconciled, r.m.gaveUp); err != nil {
			return nil, fmt.Errorf("reconcile: %w", err)
		}
	}
	return r, nil
}

// Run passes over the list every Config.Every until ctx ends; a pass's error is logged, and
// the next pass tries again.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Every)
	defer t.Stop()
	for {
		if _, err := r.Pass(ctx, false); err != nil && ctx.Err() == nil {
			r.log.WithError(err).Warn("reconciliation pass failed")
		}
		if r.cfg.Lister != nil {
			if out, err := r.CatchUp(ctx, false); err != nil && ctx.Err() == nil {
				r.log.WithError(err).Warn("catch-up failed")
			} else if len(out) > 0 {
				r.log.WithField("jobs", len(out)).Info("caught up with jobs created elsewhere")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Action is what a pass did (or, dry, would do) with one entry.
type Action string

const (
	// ActionDeferred: not due yet (its first deadline was set).
	ActionDeferred Action = "deferred"
	// ActionFinished: its end is applied locally; taken off the list without asking.
	ActionFinished Action = "finished"
	// ActionWaiting: the service has not finished it; asked again later.
	ActionWaiting Action = "waiting"
	// ActionApplied: deliveries fetched in place of lost callbacks were committed.
	ActionApplied Action = "applied"
	// ActionVerified: the service's record holds nothing the store lacks.
	ActionVerified Action = "verified"
	// ActionGaveUp: unfinished after Config.GiveUp; taken off the list.
	ActionGaveUp Action = "gave-up"
	// ActionError: the service or the store could not be asked; tried again later.
	ActionError Action = "error"
)

// Outcome is what a pass did with one entry.
type Outcome struct {
	JobID  string      `json:"job_id"`
	Kind   api.JobKind `json:"kind"`
	Action Action      `json:"action"`
	// Status is the service's status of the job, when it was asked.
	Status api.JobStatus `json:"status,omitempty"`
	// Deliveries counts what was (or would be) committed: 1 for a job's result, the missing
	// messages of a session.
	Deliveries int `json:"deliveries,omitempty"`
	// Overdue is set when the job was found overdue by this pass.
	Overdue bool `json:"overdue,omitempty"`
	// Next is when the entry is due again, for an entry still listed.
	Next  time.Time `json:"next,omitzero"`
	Error string    `json:"error,omitempty"`
}

// Pass looks once at every entry due now (at most Config.Batch) and reports what it did.
// With dryRun it asks the service and reports what it would commit, and changes nothing: no
// delivery, no event, no entry updated.
func (r *Reconciler) Pass(ctx context.Context, dryRun bool) ([]Outcome, error) {
	r.pass.Lock()
	defer r.pass.Unlock()
	now := r.cfg.Now().UTC()
	due, err := r.cfg.Store.DueReconciles(ctx, now, r.cfg.Batch)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	out := make([]Outcome, 0, len(due))
	for _, e := range due {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		o := r.check(ctx, e, now, dryRun)
		out = append(out, o)
		log := r.log.WithFields(logrus.Fields{"job_id": e.JobID, "kind": e.Kind, "action": o.Action})
		switch o.Action {
		case ActionApplied:
			log.WithField("deliveries", o.Deliveries).Info("lost callbacks fetched from the service")
		case ActionGaveUp:
			log.Warn("the service never finished the job; no longer asked about it")
		case ActionError:
			log.WithField("error", o.Error).Warn("reconciliation of a job failed; tried again later")
		default:
			log.Debug("reconciliation checked a job")
		}
	}
	return out, nil
}

// check works one entry.
func (r *Reconciler) check(ctx context.Context, e store.ReconcileEntry, now time.Time, dry bool) Outcome {
	o := Outcome{JobID: e.JobID, Kind: e.Kind}
	rec, err := r.cfg.Store.GetJob(ctx, e.JobID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Pruned, or deleted by hand: nothing is waited for any more.
		o.Action = ActionFinished
		return r.finish(ctx, o, dry)
	case err != nil:
		return r.failed(ctx, e, o, now, fmt.Errorf("read local record: %w", err), dry)
	}
	ended := rec.Local.Final != ""
	if ended && e.Kind != api.KindLive {
		o.Action = ActionFinished
		return r.finish(ctx, o, dry)
	}
	// The first question waits After from the creation (a session's check of its messages,
	// After from its end, for callbacks still on their way).
	if first := r.firstDue(e, rec); e.Checks == 0 && now.Before(first) {
		o.Action, o.Next = ActionDeferred, first
		if !dry {
			e.DueAt = first
			if err := r.cfg.Store.UpdateReconcile(ctx, e); err != nil {
				return r.storeError(o, err)
			}
		}
		return o
	}
	job, err := r.cfg.Service.GetJob(ctx, e.JobID, e.Kind)
	e.Checks++
	e.CheckedAt = now
	if err != nil {
		if !ended {
			o.Overdue = r.overdue(ctx, &e, rec, "", err.Error(), now, dry)
		}
		return r.failed(ctx, e, o, now, fmt.Errorf("ask the service: %w", err), dry)
	}
	o.Status = job.Status
	e.Status, e.LastError = string(job.Status), ""
	if !job.Status.Final() {
		if now.Sub(e.CreatedAt) > r.cfg.GiveUp {
			o.Action = ActionGaveUp
			if !dry {
				r.m.gaveUp.Inc()
			}
			return r.finish(ctx, o, dry)
		}
		r.m.checks.WithLabelValues(string(ActionWaiting)).Inc()
		o.Action = ActionWaiting
		e.DueAt = r.nextDue(ctx, e, &job, now)
		o.Next = e.DueAt
		if !dry {
			if err := r.cfg.Store.UpdateReconcile(ctx, e); err != nil {
				return r.storeError(o, err)
			}
		}
		return o
	}
	var ds []store.Delivery
	if e.Kind == api.KindLive {
		ds, err = r.missingMessages(ctx, &job, now)
	} else {
		ds, err = jobDeliveries(&job, now)
	}
	if err != nil {
		return r.failed(ctx, e, o, now, err, dry)
	}
	if !ended {
		o.Overdue = r.overdue(ctx, &e, rec, job.Status, "", now, dry)
	}
	o.Deliveries = len(ds)
	if len(ds) == 0 {
		o.Action = ActionVerified
		r.m.checks.WithLabelValues(string(ActionVerified)).Inc()
		return r.finish(ctx, o, dry)
	}
	o.Action = ActionApplied
	if dry {
		return o
	}
	// Every row carries the count and the check: the first of them applied emits
	// job.reconciled, whose id the check names, so that the others emit the same event again
	// (one for the sinks). A row that turns out a duplicate (its callback came meanwhile)
	// leaves the event to the others.
	mark := store.ReconciledMark(len(ds), now)
	for i := range ds {
		ds[i].Headers[store.HeaderReconciled] = mark
	}
	res, err := r.cfg.Ingest(ctx, ds)
	if err != nil {
		return r.failed(ctx, e, o, now, fmt.Errorf("commit fetched deliveries: %w", err), dry)
	}
	fresh := 0
	for _, x := range res {
		if !x.Duplicate {
			fresh++
		}
	}
	if fresh == 0 {
		// Every callback came while the service was asked: nothing was lost after all.
		o.Action = ActionVerified
		r.m.checks.WithLabelValues(string(ActionVerified)).Inc()
		return r.finish(ctx, o, false)
	}
	o.Deliveries = fresh
	r.m.checks.WithLabelValues(string(ActionApplied)).Inc()
	r.m.reconciled.WithLabelValues(string(e.Kind)).Inc()
	// Committed: a crash before the entry is finished asks again, and the rows committed again
	// are duplicates.
	return r.finish(ctx, o, false)
}

// firstDue is when the service is first asked about e: After from its creation, or for a
// session that ended, After from its end.
func (r *Reconciler) firstDue(e store.ReconcileEntry, rec store.JobRecord) time.Time {
	if rec.Local.Final != "" && !rec.Local.EndedAt.IsZero() {
		return rec.Local.EndedAt.Add(r.cfg.After)
	}
	if rec.Local.Final != "" {
		return rec.Local.UpdatedAt.Add(r.cfg.After)
	}
	return e.CreatedAt.Add(r.cfg.After)
}

// nextDue is when a job the service has not finished is asked about again: the wait doubles
// with each question from After up to MaxWait, and is at least what its audio and its place in
// the queue need.
func (r *Reconciler) nextDue(ctx context.Context, e store.ReconcileEntry, job *api.Job, now time.Time) time.Time {
	wait := r.cfg.After << min(max(e.Checks-1, 0), 20)
	if wait > r.cfg.MaxWait || wait <= 0 {
		wait = r.cfg.MaxWait
	}
	if job != nil && job.File != nil && job.File.AudioDuration > 0 {
		wait = max(wait, time.Duration(job.File.AudioDuration*r.cfg.AudioFactor*float64(time.Second)))
	}
	if job != nil && job.Status == api.StatusQueued {
		if ahead, err := r.cfg.Store.ReconcileAhead(ctx, e.Kind, e.CreatedAt); err == nil {
			wait = max(wait, time.Duration(ahead)*r.cfg.QueueStep)
		}
	}
	return now.Add(wait)
}

// overdue emits job.overdue for e once (OverdueAt marks it; the event's id is stable, so a
// crash that emits it again sends it once), and reports whether e is overdue.
func (r *Reconciler) overdue(ctx context.Context, e *store.ReconcileEntry, rec store.JobRecord, status api.JobStatus, cause string, now time.Time, dry bool) bool {
	if !e.OverdueAt.IsZero() {
		return true
	}
	if dry {
		return true
	}
	e.OverdueAt = now
	r.m.overdue.WithLabelValues(string(e.Kind)).Inc()
	if r.cfg.Emit == nil {
		return true
	}
	data := api.OverdueData{JobID: e.JobID, Kind: e.Kind, CreatedAt: api.NewTime(e.CreatedAt),
		Deadline: api.NewTime(r.firstDue(*e, rec)), ServiceStatus: status, Error: cause}
	if err := r.cfg.Emit(ctx, api.EventJobOverdue, "overdue:"+e.JobID, e.JobID, e.Kind, data); err != nil {
		// The entry keeps OverdueAt zero, so the next check emits it again.
		e.OverdueAt = time.Time{}
		r.log.WithError(err).WithField("job_id", e.JobID).Warn("queue job.overdue")
	}
	return true
}

// failed records a check that could not be completed, to try again after the back-off.
func (r *Reconciler) failed(ctx context.Context, e store.ReconcileEntry, o Outcome, now time.Time, err error, dry bool) Outcome {
	r.m.checks.WithLabelValues(string(ActionError)).Inc()
	o.Action, o.Error = ActionError, err.Error()
	e.LastError = err.Error()
	if e.Checks == 0 {
		e.Checks = 1
	}
	e.DueAt = r.nextDue(ctx, e, nil, now)
	o.Next = e.DueAt
	if !dry {
		if uerr := r.cfg.Store.UpdateReconcile(ctx, e); uerr != nil {
			o.Error += "; " + uerr.Error()
		}
	}
	return o
}

func (r *Reconciler) finish(ctx context.Context, o Outcome, dry bool) Outcome {
	if dry {
		return o
	}
	if err := r.cfg.Store.FinishReconcile(ctx, o.JobID); err != nil {
		return r.storeError(o, err)
	}
	return o
}

func (r *Reconciler) storeError(o Outcome, err error) Outcome {
	o.Action, o.Error = ActionError, err.Error()
	return o
}

// Identity is what makes two JSON texts of one live message the same message: the SHA-256 of
// the value re-encoded with its object members sorted, no white space, and its numbers as
// float64 prints them. A record that spells a message differently from its callback (member
// order, white space, 1.0 for 1) still matches the stored one.
func Identity(message []byte) (string, error) {
	var v any
	if err := json.Unmarshal(message, &v); err != nil {
		return "", fmt.Errorf("message identity: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("message identity: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
