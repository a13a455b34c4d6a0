package sqlcore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The conditions of the rows each kind may delete: the statements that delete them and the
// dry run's counts share them, so that a dry run counts what a run deletes. Each takes the
// cutoff (now minus the kind's duration) as its last argument.
const (
	condInbox         = `status = 'done' AND processed_at < ?`
	condInboxFailed   = `status = 'failed' AND received_at < ?`
	condSinkDelivered = `status = 'delivered' AND delivered_at < ?`
	condDeadLetters   = `status = 'dead' AND failed_at < ?`
	condQuarantine    = `received_at < ?`
	// keepLast keeps a session's last message (see store.RetentionPolicy.Live).
	keepLast = `l.seq < (SELECT max(m.seq) FROM live_messages m WHERE m.session_id = l.session_id)`
)

// liveCond is the condition on a live_messages row aliased l of category ?, received before
// the cutoff ?, of an ended session.
func liveCond(d Dialect) string {
	return `l.category = ? AND l.received_at < ? AND ` + keepLast + `
		AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = l.session_id AND ` + d.FinalJob + `)`
}

// jobsCond is the condition on a jobs row aliased j: final, completed before the cutoff ?.
func jobsCond(d Dialect) string {
	return d.FinalJob + ` AND j.completed_at < ?`
}

// idKind is a kind kept in a table with an id primary key, deleted by id in batches.
type idKind struct {
	kind  store.PruneKind
	st    Stmt
	table string
	cond  string
	keep  func(p store.RetentionPolicy) time.Duration
}

var (
	inboxKinds = []idKind{
		{store.PruneInbox, StPruneInbox, "inbox", condInbox, func(p store.RetentionPolicy) time.Duration { return p.Inbox }},
		{store.PruneInboxFailed, StPruneInboxFailed, "inbox", condInboxFailed, func(p store.RetentionPolicy) time.Duration { return p.DeadLetters }},
	}
	laterKinds = []idKind{
		{store.PruneSinkDelivered, StPruneSinkDelivered, "sink_deliveries", condSinkDelivered, func(p store.RetentionPolicy) time.Duration { return p.SinkDelivered }},
		{store.PruneDeadLetters, StPruneDeadLetters, "sink_deliveries", condDeadLetters, func(p store.RetentionPolicy) time.Duration { return p.DeadLetters }},
		{store.PruneQuarantine, StPruneQuarantine, "quarantine", condQuarantine, func(p store.RetentionPolicy) time.Duration { return p.Quarantine }},
	}
)

// pruneStatements adds the pruner's statements to q. A batch is chosen by a subquery with a
// LIMIT, which both databases accept inside DELETE … WHERE … IN, and which the indexes of
// migration 0006 serve, so a batch reads about as many rows as it deletes.
func pruneStatements(d Dialect, q *[NumStmts]string) {
	for _, k := range slices.Concat(inboxKinds, laterKinds) {
		q[k.st] = `DELETE FROM ` + k.table + ` WHERE id IN (SELECT id FROM ` + k.table + ` WHERE ` + k.cond + ` LIMIT ?)`
	}
	q[StPruneLive] = `DELETE FROM live_messages WHERE (session_id, seq) IN (
		SELECT l.session_id, l.seq FROM live_messages l WHERE ` + liveCond(d) + ` LIMIT ?)`
	q[StPruneJobsPick] = `SELECT j.id FROM jobs j WHERE ` + jobsCond(d) + ` ORDER BY j.completed_at LIMIT ?`
	q[StPruneJob] = `DELETE FROM jobs WHERE id IN (SELECT j.id FROM jobs j WHERE j.id = ? AND ` + jobsCond(d) + `)`
	q[StPruneJobArtifacts] = `DELETE FROM artifacts WHERE job_id = ?`
	q[StPruneJobLive] = `DELETE FROM live_messages WHERE session_id = ?`
}

// Prune deletes what p has kept long enough at now (see store.RetentionPolicy), kind by kind,
// each batch in a transaction of its own: on SQLite a batch holds the only write lock for the
// few milliseconds its deletes take, and ingest queues behind it no longer than that. Pruning
// is Derived: a batch lost in a power cut is deleted again by the next run. The live messages
// go before the jobs, so that the messages a job takes with it are only the ones its
// categories keep. With dryRun it counts, on the read side, what a run would delete.
func (c *Core) Prune(ctx context.Context, p store.RetentionPolicy, now time.Time, dryRun bool) (store.PruneReport, error) {
	r := pruneRun{c: c, p: p, now: now, dry: dryRun, batch: p.BatchSize,
		rep: store.PruneReport{DryRun: dryRun, Rows: map[store.PruneKind]int64{}}}
	if r.batch <= 0 {
		r.batch = store.DefaultPruneBatch
	}
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return r.idKinds(ctx, inboxKinds) },
		r.live,
		r.jobs,
		func(ctx context.Context) error { return r.idKinds(ctx, laterKinds) },
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return r.rep, fmt.Errorf("prune: %w", err)
		}
	}
	return r.rep, nil
}

// pruneRun is one call of Prune.
type pruneRun struct {
	c     *Core
	p     store.RetentionPolicy
	now   time.Time
	dry   bool
	batch int
	rep   store.PruneReport
}

func (r *pruneRun) add(kind store.PruneKind, n int64) {
	if n > 0 {
		r.rep.Rows[kind] += n
	}
}

// cutoff is the argument of the instant before which a row kept for keep goes.
func (r *pruneRun) cutoff(keep time.Duration) any { return r.c.d.Time(r.now.Add(-keep)) }

func (r *pruneRun) idKinds(ctx context.Context, kinds []idKind) error {
	for _, k := range kinds {
		keep := k.keep(r.p)
		if keep <= 0 {
			continue
		}
		var n int64
		var err error
		if r.dry {
			n, err = r.count(ctx, k.table, k.cond, r.cutoff(keep))
		} else {
			n, err = r.batches(ctx, k.kind, k.st, r.cutoff(keep))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k.kind, err)
		}
		r.add(k.kind, n)
	}
	return nil
}

func (r *pruneRun) live(ctx context.Context) error {
	for _, cat := range api.Categories {
		keep := r.p.Live[cat]
		if keep <= 0 {
			continue
		}
		kind := store.LiveKind(cat)
		var n int64
		var err error
		if r.dry {
			n, err = r.count(ctx, "live_messages l", liveCond(r.c.d), string(cat), r.cutoff(keep))
		} else {
			n, err = r.batches(ctx, kind, StPruneLive, string(cat), r.cutoff(keep))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		r.add(kind, n)
	}
	return nil
}

// batches runs the DELETE st with args and the batch size until a batch deletes fewer rows
// than that, and returns how many it deleted.
func (r *pruneRun) batches(ctx context.Context, kind store.PruneKind, st Stmt, args ...any) (int64, error) {
	args = append(slices.Clip(args), r.c.d.Limit(r.batch))
	var total int64
	for {
		n, err := r.c.execOne(ctx, "prune "+string(kind), st, args...)
		total += n
		if err != nil || n < int64(r.batch) {
			return total, err
		}
	}
}

// execOne runs st in a Derived transaction of its own and reports the rows it changed.
func (c *Core) execOne(ctx context.Context, op string, st Stmt, args ...any) (int64, error) {
	t, err := c.w.Begin(ctx, op, Derived|OneStatement)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer t.Rollback()
	res, err := t.Exec(ctx, st, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if err := t.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return n, nil
}

// count counts the rows of from that pass cond, on the read side.
func (r *pruneRun) count(ctx context.Context, from, cond string, args ...any) (int64, error) {
	var n int64
	err := r.c.db.QueryRowContext(ctx, r.c.d.Rebind(`SELECT count(*) FROM `+from+` WHERE `+cond), args...).Scan(&n)
	return n, err
}

// jobs deletes final jobs completed before the cutoff, a batch at a time: their ids are
// picked, the files of their artifacts removed (RemoveArtifacts), then in one transaction each
// record goes, checked again, with its artifacts and the messages left of its session. Files
// go before rows: a run stopped between the two finds the rows again and removes nothing twice
// that matters.
func (r *pruneRun) jobs(ctx context.Context) error {
	if r.p.Jobs <= 0 {
		return nil
	}
	cut := r.cutoff(r.p.Jobs)
	if r.dry {
		return r.countJobs(ctx, cut)
	}
	for {
		ids, err := r.pickJobs(ctx, cut)
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := r.removeFiles(ctx, ids); err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		deleted, err := r.deleteJobs(ctx, ids, cut)
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		if len(ids) < r.batch || deleted == 0 {
			return nil
		}
	}
}

func (r *pruneRun) pickJobs(ctx context.Context, cut any) ([]string, error) {
	t, err := r.c.w.Begin(ctx, "prune jobs", Derived|OneStatement)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer t.Rollback()
	rows, err := t.Query(ctx, StPruneJobsPick, cut, r.c.d.Limit(r.batch))
	if err != nil {
		return nil, err
	}
	ids, err := Collect(rows, func(s Scanner) (string, error) {
		var id string
		return id, s.Scan(&id)
	})
	if err != nil {
		return nil, err
	}
	return ids, t.Commit()
}

func (r *pruneRun) removeFiles(ctx context.Context, ids []string) error {
	if r.p.RemoveArtifacts == nil {
		return nil
	}
	var arts []store.Artifact
	for _, id := range ids {
		a, err := r.c.Artifacts(ctx, id)
		if err != nil {
			return err
		}
		arts = append(arts, a...)
	}
	if len(arts) == 0 {
		return nil
	}
	if err := r.p.RemoveArtifacts(ctx, arts); err != nil {
		return fmt.Errorf("remove artifacts: %w", err)
	}
	return nil
}

// deleteJobs deletes the records of ids that are still to go, with what belongs to them, and
// reports how many records it deleted.
func (r *pruneRun) deleteJobs(ctx context.Context, ids []string, cut any) (int64, error) {
	t, err := r.c.w.Begin(ctx, "prune jobs", Derived)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer t.Rollback()
	var n [3]int64 // jobs, artifacts, messages
	for _, id := range ids {
		res, err := t.Exec(ctx, StPruneJob, id, cut)
		if err != nil {
			return 0, fmt.Errorf("job %s: %w", id, err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			continue
		}
		n[0]++
		for i, st := range []Stmt{StPruneJobArtifacts, StPruneJobLive} {
			res, err := t.Exec(ctx, st, id)
			if err != nil {
				return 0, fmt.Errorf("job %s: %w", id, err)
			}
			k, _ := res.RowsAffected()
			n[i+1] += k
		}
		if r.c.d.SQL[StPruneJobSeq] != "" {
			if _, err := t.Exec(ctx, StPruneJobSeq, id); err != nil {
				return 0, fmt.Errorf("job %s: %w", id, err)
			}
		}
	}
	if err := t.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	r.add(store.PruneJobs, n[0])
	r.add(store.PruneArtifacts, n[1])
	r.add(store.PruneSessionRest, n[2])
	return n[0], nil
}

// countJobs counts, for a dry run, the jobs that would go, their artifacts, and the messages
// of their sessions that the categories' own durations would not already have deleted.
func (r *pruneRun) countJobs(ctx context.Context, cut any) error {
	pruned := `(SELECT j.id FROM jobs j WHERE ` + jobsCond(r.c.d) + `)`
	n, err := r.count(ctx, "jobs j", jobsCond(r.c.d), cut)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	r.add(store.PruneJobs, n)
	if n, err = r.count(ctx, "artifacts a", `a.job_id IN `+pruned, cut); err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	r.add(store.PruneArtifacts, n)
	args := []any{cut}
	var terms []string
	for _, cat := range api.Categories {
		if keep := r.p.Live[cat]; keep > 0 {
			terms = append(terms, `(l.category = ? AND l.received_at < ?)`)
			args = append(args, string(cat), r.cutoff(keep))
		}
	}
	cond := `l.session_id IN ` + pruned
	if len(terms) > 0 {
		cond += ` AND NOT coalesce(` + keepLast + ` AND (` + strings.Join(terms, " OR ") + `), FALSE)`
	}
	if n, err = r.count(ctx, "live_messages l", cond, args...); err != nil {
		return fmt.Errorf("live messages: %w", err)
	}
	r.add(store.PruneSessionRest, n)
	return nil
}
