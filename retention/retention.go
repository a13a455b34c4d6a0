// Package retention keeps a long-running serve from filling its disk: a Pruner deletes, every
// interval, what the store has kept long enough (store.Retention.Prune, under a
// store.RetentionPolicy built from the configuration's retention section by PolicyOf), counts
// what went in Prometheus metrics, and removes the subtitle files of the jobs it prunes.
//
// What is still at work is never deleted, whatever the durations: inbox rows not yet processed,
// sink deliveries not yet delivered, jobs not final, messages of live sessions not ended (see
// store.RetentionPolicy). Each batch is a short transaction of its own, so ingest waits behind
// the pruner for milliseconds at most; on SQLite the pages freed are given back to the file
// system by incremental vacuum.
package retention

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/metricreg"
	"github.com/scribehook/scribehook/store"
)

// DefaultFirstRun is how long after Start the first run comes: serve's startup (the backlog
// of pending rows) goes first.
const DefaultFirstRun = time.Minute

// SessionGrace is how long the revocation of a dashboard session is kept after the session
// expired: its cookie is refused on its expiry alone by then, on a replica whose clock is no
// more than this behind.
const SessionGrace = time.Hour

// PolicyOf is the policy of the configuration's retention section, with callback tokens
// deleted once tokenTTL (receiver.token_ttl) has passed since they were minted, and the
// revocations of dashboard sessions SessionGrace after the sessions expired; the files of
// pruned jobs' artifacts are removed with RemoveFiles.
func PolicyOf(r configs.RetentionConfig, tokenTTL time.Duration) store.RetentionPolicy {
	live := map[api.MessageCategory]time.Duration{}
	for c, k := range r.Live.ByCategory() {
		if k > 0 {
			live[c] = time.Duration(k)
		}
	}
	return store.RetentionPolicy{
		Inbox: time.Duration(r.Inbox), Live: live, Jobs: time.Duration(r.Jobs),
		SinkDelivered: time.Duration(r.SinkDelivered), DeadLetters: time.Duration(r.DeadLetters),
		Quarantine: time.Duration(r.Quarantine), Tokens: tokenTTL, Sessions: SessionGrace, BatchSize: r.BatchSize, RemoveArtifacts: RemoveFiles,
	}
}

// Durations gives, per kind of PruneReport, how long the configuration keeps it (for a report
// that shows what is kept for ever too); tokens are kept for tokenTTL. It reads the policy
// PolicyOf gives the store, so it shows what Prune does.
func Durations(r configs.RetentionConfig, tokenTTL time.Duration) map[store.PruneKind]configs.Keep {
	p := PolicyOf(r, tokenTTL)
	out := map[store.PruneKind]configs.Keep{}
	for _, k := range store.PruneKinds() {
		out[k] = configs.Keep(p.Keep(k))
	}
	return out
}

// RemoveFiles removes the artifacts' files, and then each job's directory (<dir>/<job_id>, as
// the pipeline lays them out) if nothing else is left in it. A file already gone is not an
// error: a run stopped half-way removes the rest next time. But a file whose artifacts
// directory (<dir>) is not there either is: the stored paths are relative to serve's working
// directory, and from anywhere else every file would look gone while its row went, the file
// left on disk for ever. The error keeps the batch's jobs for a run from the right place.
func RemoveFiles(_ context.Context, arts []store.Artifact) error {
	var errs []error
	dirs := map[string]bool{}
	missing := map[string]bool{}
	for _, a := range arts {
		if a.Path == "" {
			continue
		}
		dir := filepath.Dir(a.Path)
		if err := os.Remove(a.Path); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			root := dir
			if filepath.Base(dir) == a.JobID {
				root = filepath.Dir(dir)
			}
			if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
				if !missing[root] {
					missing[root] = true
					errs = append(errs, fmt.Errorf("artifacts directory %s not found: files are removed by paths relative to serve's working directory, run from there", root))
				}
				continue
			}
		}
		if filepath.Base(dir) == a.JobID {
			dirs[dir] = true
		}
	}
	for dir := range dirs {
		_ = os.Remove(dir) // fails, and is left, when something else is in it
	}
	return errors.Join(errs...)
}

// Config configures a Pruner.
type Config struct {
	// Store is the store to prune: only its Retention role (a store.Store has it).
	Store  store.Retention
	Policy store.RetentionPolicy
	// Interval is the time between two runs; 0: Start runs nothing (Prune still prunes).
	Interval time.Duration
	// FirstRun is the time from Start to the first run (default DefaultFirstRun).
	FirstRun time.Duration
	// Now is the clock the durations are measured on (default time.Now).
	Now func() time.Time
	// Metrics registers the pruner's metrics; nil registers none.
	Metrics prometheus.Registerer
	// Logger receives a line per run; nil discards it.
	Logger logrus.FieldLogger
}

// Pruner runs store.Retention.Prune now and then. Its methods are safe for concurrent use; two
// runs never overlap.
type Pruner struct {
	cfg     Config
	rows    *prometheus.CounterVec
	bytes   prometheus.Counter
	failed  prometheus.Counter
	lastRun prometheus.Gauge

	run     sync.Mutex // one run at a time
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}
}

// New builds a pruner; it runs nothing until Start.
func New(cfg Config) (*Pruner, error) {
	if cfg.Store == nil {
		return nil, errors.New("retention: a store is required")
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("retention: interval must not be negative (got %s)", cfg.Interval)
	}
	if cfg.FirstRun <= 0 {
		cfg.FirstRun = DefaultFirstRun
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = logx.OrDiscard(cfg.Logger)
	p := &Pruner{
		cfg:     cfg,
		rows:    metricreg.CounterVec("scribehook_pruned_rows_total", "Rows the retention pruner deleted, by kind.", "kind"),
		bytes:   metricreg.Counter("scribehook_pruned_reclaimed_bytes_total", "Bytes the database gave back to the file system after pruning (SQLite)."),
		failed:  metricreg.Counter("scribehook_prune_failures_total", "Pruner runs that stopped on an error (the next run takes up the rest)."),
		lastRun: metricreg.Gauge("scribehook_prune_last_success_timestamp_seconds", "When the last pruner run that completed ended, Unix time."),
	}
	for _, kind := range store.PruneKinds() {
		p.rows.WithLabelValues(string(kind)) // every kind is listed, 0 until some go
	}
	if cfg.Metrics != nil {
		if err := metricreg.Register(cfg.Metrics, p.rows, p.bytes, p.failed, p.lastRun); err != nil {
			return nil, fmt.Errorf("retention: register metrics: %w", err)
		}
	}
	return p, nil
}

// Prune runs once, now: with dryRun it only reports what would go. A run that deletes counts
// what it deleted, even when it stops on an error part-way.
func (p *Pruner) Prune(ctx context.Context, dryRun bool) (store.PruneReport, error) {
	p.run.Lock()
	defer p.run.Unlock()
	started := time.Now()
	rep, err := p.cfg.Store.Prune(ctx, p.cfg.Policy, p.cfg.Now(), dryRun)
	if dryRun {
		return rep, err
	}
	for kind, n := range rep.Rows {
		p.rows.WithLabelValues(string(kind)).Add(float64(n))
	}
	p.bytes.Add(float64(rep.ReclaimedBytes))
	fields := logrus.Fields{"rows": rep.Total(), "reclaimed_bytes": rep.ReclaimedBytes, "took": time.Since(started).Round(time.Millisecond)}
	for kind, n := range rep.Rows {
		fields["pruned_"+string(kind)] = n
	}
	log := p.cfg.Logger.WithFields(fields)
	if err != nil {
		p.failed.Inc()
		log.WithError(err).Warn("retention: prune stopped")
		return rep, err
	}
	p.lastRun.SetToCurrentTime()
	if rep.Total() > 0 {
		log.Info("retention: pruned")
	} else {
		log.Debug("retention: nothing to prune")
	}
	return rep, nil
}

// Start runs Prune every Interval, the first time FirstRun from now, until ctx ends or Stop.
// Errors are logged and counted; the next run takes up the rest. With no interval it does
// nothing.
func (p *Pruner) Start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Interval == 0 || p.cancel != nil {
		return
	}
	if v, ok := p.cfg.Store.(interface {
		IncrementalVacuum(ctx context.Context) (bool, error)
	}); ok {
		if incremental, err := v.IncrementalVacuum(ctx); err == nil && !incremental {
			p.cfg.Logger.Warn("retention: this SQLite database was created before retention: pruned pages are reused, not given back to the file system; run scribehook prune --vacuum once with serve stopped (docs/operations.md, Retention)")
		}
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.stopped = make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTimer(p.cfg.FirstRun)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, _ = p.Prune(ctx, false)
			t.Reset(p.cfg.Interval)
		}
	}()
}

// Stop ends the runs Start began and waits for the one in progress, which stops at its next
// batch; the store can be closed then.
func (p *Pruner) Stop() {
	p.mu.Lock()
	cancel, stopped := p.cancel, p.stopped
	p.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-stopped
}
