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
	// A done row holding a live message stored by reference stays as long as the message, and
	// as an event whose data it is (live_messages_inbox, events_inbox: one seek each).
	condInbox = `status = 'done' AND processed_at < ?
		AND NOT EXISTS (SELECT 1 FROM live_messages l WHERE l.inbox_id = inbox.id AND l.payload IS NULL)
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.inbox_id = inbox.id)`
	condInboxFailed   = `status = 'failed' AND received_at < ?`
	condSinkDelivered = `status = 'delivered' AND delivered_at < ?`
	condDeadLetters   = `status = 'dead' AND failed_at < ?`
	condQuarantine    = `received_at < ?`
	// A token stops authenticating token_ttl after it was minted (revoked or not), and its row
	// is of no use from then on.
	condTokens = `created_at < ?`
	// A revoked session's cookie is refused anyway once the session expired.
	condSessions = `expires_at < ?`
	// keepLast keeps a session's last message (see store.RetentionPolicy.Live).
	keepLast = `l.seq < (SELECT max(m.seq) FROM live_messages m WHERE m.session_id = l.session_id)`
)

// liveCond is the condition on a live_messages row aliased l of category ?, received before
// the cutoff ?, of an ended session. keepLast walks nothing: max(seq) of a session is one seek
// in the primary key, and the job one in its own.
func liveCond(d Dialect) string {
	return `l.category = ? AND l.received_at < ? AND ` + keepLast + `
		AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = l.session_id AND ` + d.FinalJob + `)`
}

// jobsCond is the condition on a jobs row aliased j: final, completed before the cutoff ?.
func jobsCond(d Dialect) string {
	return d.FinalJob + ` AND j.completed_at < ?`
}

// PruneBatchBytes bounds what one batch of a kind with large rows deletes (inbox and
// quarantine bodies, sink events, job records), besides the batch size: deleting a row frees
// its overflow pages one by one, and 500 job results of a few MB each held SQLite's writer
// for seconds (200 rows of 4 MiB: 8 s). A batch takes rows while those before them sum to less
// than this, so a row larger than it still goes, alone.
const PruneBatchBytes = 8 << 20

// idKind is a kind kept in a table with an id primary key, deleted by id in batches of at
// most the batch size and about PruneBatchBytes.
type idKind struct {
	kind  store.PruneKind
	st    Stmt
	table string
	cond  string
	order string // what a batch goes in order of: its index's column, so a batch reads its rows only
	size  string // a row's size, read without reading the value
	// events: the rows refer to events (sink deliveries). A batch returns the events its rows
	// referred to, and deletes in its transaction those no row refers to any more.
	events bool
}

// eventSize is the size of a sink delivery's event, the bytes that deleting the delivery may
// free: counted for each delivery that refers to it, so that a batch frees at most about
// PruneBatchBytes even when its deliveries are the last of their events.
const eventSize = `(SELECT octet_length(e.body) FROM events e WHERE e.id = sink_deliveries.event)`

var (
	inboxKinds = []idKind{
		{store.PruneInbox, StPruneInbox, "inbox", condInbox, "processed_at", "octet_length(body)", false},
		{store.PruneInboxFailed, StPruneInboxFailed, "inbox", condInboxFailed, "id", "octet_length(body)", false},
	}
	laterKinds = []idKind{
		{store.PruneSinkDelivered, StPruneSinkDelivered, "sink_deliveries", condSinkDelivered, "delivered_at", eventSize, true},
		{store.PruneDeadLetters, StPruneDeadLetters, "sink_deliveries", condDeadLetters, "failed_at", eventSize, true},
		{store.PruneQuarantine, StPruneQuarantine, "quarantine", condQuarantine, "received_at", "octet_length(body)", false},
	}
)

// pruneStatements adds the pruner's statements to q. A batch is chosen by a subquery with a
// LIMIT, which both databases accept inside DELETE … WHERE … IN, and which the indexes of
// migration 0006 serve, so a batch reads about as many rows as it deletes. For the id kinds,
// the rows of that LIMIT are cut where the sizes before them reach PruneBatchBytes (a running
// sum over the LIMIT's rows only, their sizes read from the row headers).
func pruneStatements(d Dialect, q *[NumStmts]string) {
	for _, k := range slices.Concat(inboxKinds, laterKinds) {
		q[k.st] = `DELETE FROM ` + k.table + ` WHERE id IN (SELECT id FROM (
	SELECT id, sum(sz) OVER (ORDER BY o, id ROWS UNBOUNDED PRECEDING) - sz AS before FROM (
		SELECT id, ` + k.order + ` AS o, ` + k.size + ` AS sz FROM ` + k.table + ` WHERE ` + k.cond + ` ORDER BY ` + k.order + ` LIMIT ?) c) w
	WHERE before < ?)`
		if k.events {
			q[k.st] += ` RETURNING event`
		}
	}
	// The events of a batch of deliveries that no delivery refers to any more. Where rows are
	// locked one by one (PostgreSQL), the events are locked first, in id order, and checked by
	// a statement of their own, which sees what committed meanwhile: a transaction queueing a
	// delivery for one of them holds a key share lock on it (the queue's look-up of an event
	// already stored) until it commits, so the check waits and then sees the delivery, or the
	// look-up waits and then does not find the event (the queueing fails, and is retried); and
	// of two pruners deleting the last two deliveries of an event, the second to lock it sees
	// the first's deletes.
	if d.IDs != "" {
		if d.ForUpdate != "" {
			q[StPruneEventsLock] = `SELECT id FROM events WHERE id IN (` + d.IDs + `) ORDER BY id` + d.ForUpdate
		}
		q[StPruneEvents] = `DELETE FROM events WHERE id IN (` + d.IDs + `)
		AND NOT EXISTS (SELECT 1 FROM sink_deliveries d WHERE d.event = events.id)`
	} else {
		q[StPruneEvents] = `DELETE FROM events WHERE id = ?1
		AND NOT EXISTS (SELECT 1 FROM sink_deliveries d WHERE d.event = ?1)`
	}
	// A live message is deleted by its key, its conditions checked again on that row alone: the
	// candidates are picked on the read side (LiveCandidates), because the last message of every
	// ended session stays as long as its job, for ever by default, and a DELETE that picked them
	// itself would walk all those kept messages again, batch after batch, holding the writer.
	q[StPruneLive] = `DELETE FROM live_messages WHERE (session_id, seq) IN (
		SELECT l.session_id, l.seq FROM live_messages l WHERE ` + liveCond(d) + ` AND l.session_id = ? AND l.seq = ?)`
	q[StPruneTokens] = `DELETE FROM tokens WHERE hash IN (
		SELECT hash FROM tokens WHERE ` + condTokens + ` ORDER BY created_at LIMIT ?)`
	q[StPruneSessions] = `DELETE FROM session_revocations WHERE id_hash IN (
		SELECT id_hash FROM session_revocations WHERE ` + condSessions + ` ORDER BY expires_at LIMIT ?)`
	q[StPruneJobsPick] = `SELECT j.id, octet_length(j.record) FROM jobs j WHERE ` + jobsCond(d) + ` ORDER BY j.completed_at LIMIT ?`
	q[StPruneJob] = `DELETE FROM jobs WHERE id IN (SELECT j.id FROM jobs j WHERE j.id = ? AND ` + jobsCond(d) + `)`
	q[StPruneJobArtifacts] = `DELETE FROM artifacts WHERE job_id = ?`
	q[StPruneJobLive] = `DELETE FROM live_messages WHERE session_id = ?`
	q[StPruneJobSpeakers] = `DELETE FROM speakers WHERE job_id = ?`
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
		r.tokens,
		r.sessions,
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

// kind adds to the report the rows of kind that del deletes, or for a dry run that count
// counts, given the cutoff of the policy's duration for kind (store.RetentionPolicy.Keep); a
// duration of zero or less keeps them for ever.
func (r *pruneRun) kind(kind store.PruneKind, count, del func(cut any) (int64, error)) error {
	keep := r.p.Keep(kind)
	if keep <= 0 {
		return nil
	}
	run := del
	if r.dry {
		run = count
	}
	n, err := run(r.cutoff(keep))
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	r.add(kind, n)
	return nil
}

func (r *pruneRun) idKinds(ctx context.Context, kinds []idKind) error {
	for _, k := range kinds {
		err := r.kind(k.kind, func(cut any) (int64, error) {
			return r.count(ctx, k.table, k.cond, cut)
		}, func(cut any) (int64, error) {
			// A batch the bytes cut short deletes fewer rows than the batch size with more to
			// go: only a batch that deletes nothing ends.
			if k.events {
				return r.eventBatches(ctx, k, cut)
			}
			return r.batches(ctx, k.kind, k.st, 1, cut, r.c.d.Limit(r.batch), int64(PruneBatchBytes))
		})
		if err != nil {
			return err
		}
	}
	if r.dry && slices.ContainsFunc(kinds, func(k idKind) bool { return k.events }) {
		if err := r.countEvents(ctx, kinds); err != nil {
			return fmt.Errorf("%s: %w", store.PruneEvents, err)
		}
	}
	return nil
}

// eventBatches deletes the deliveries of kind k that pass its condition at cut, a batch at a
// time, each in a transaction with the events no delivery refers to any more, until a batch
// deletes nothing. The events are reported as store.PruneEvents.
func (r *pruneRun) eventBatches(ctx context.Context, k idKind, cut any) (int64, error) {
	var total int64
	for {
		var n, events int64
		err := r.c.inTx(ctx, "prune "+string(k.kind), Derived, nil, func(t Tx) error {
			rows, err := t.Query(ctx, k.st, cut, r.c.d.Limit(r.batch), int64(PruneBatchBytes))
			if err != nil {
				return err
			}
			refs, err := Collect(rows, func(s Scanner) (int64, error) {
				var id int64
				return id, s.Scan(&id)
			})
			if err != nil {
				return err
			}
			n = int64(len(refs))
			events, err = r.c.pruneEvents(ctx, t, refs)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		r.add(store.PruneEvents, events)
		if n == 0 {
			return total, nil
		}
	}
}

// pruneEvents deletes, in t, the events of refs (events.id, repeats allowed) that no sink
// delivery refers to, and reports how many it deleted.
func (c *Core) pruneEvents(ctx context.Context, t Tx, refs []int64) (int64, error) {
	slices.Sort(refs)
	refs = slices.Compact(refs)
	if len(refs) == 0 {
		return 0, nil
	}
	if c.d.IDs == "" {
		var n int64
		for _, id := range refs {
			res, err := t.Exec(ctx, StPruneEvents, id)
			if err != nil {
				return n, fmt.Errorf("event %d: %w", id, err)
			}
			k, _ := res.RowsAffected()
			n += k
		}
		return n, nil
	}
	list := IDList(refs)
	if c.d.ForUpdate != "" {
		if _, err := t.Exec(ctx, StPruneEventsLock, list); err != nil {
			return 0, fmt.Errorf("lock events: %w", err)
		}
	}
	res, err := t.Exec(ctx, StPruneEvents, list)
	if err != nil {
		return 0, fmt.Errorf("events: %w", err)
	}
	return res.RowsAffected()
}

// countEvents counts, for a dry run, the events a run deletes with the deliveries of kinds:
// those with a delivery that goes and none that stays.
func (r *pruneRun) countEvents(ctx context.Context, kinds []idKind) error {
	var terms []string
	var args []any
	for _, k := range kinds {
		if keep := r.p.Keep(k.kind); k.events && keep > 0 {
			terms = append(terms, `(`+k.cond+`)`)
			args = append(args, r.cutoff(keep))
		}
	}
	if len(terms) == 0 {
		return nil
	}
	// Unqualified, the columns of goes are those of the nearest sink_deliveries: d outside the
	// subquery, o inside.
	goes := strings.Join(terms, ` OR `)
	var n int64
	err := r.c.db.QueryRowContext(ctx, r.c.d.Rebind(`SELECT count(DISTINCT d.event) FROM sink_deliveries d
		WHERE (`+goes+`) AND NOT EXISTS (SELECT 1 FROM sink_deliveries o WHERE o.event = d.event
			AND NOT coalesce(`+goes+`, FALSE))`), slices.Concat(args, args)...).Scan(&n)
	if err != nil {
		return err
	}
	r.add(store.PruneEvents, n)
	return nil
}

func (r *pruneRun) live(ctx context.Context) error {
	for _, cat := range api.Categories {
		err := r.kind(store.LiveKind(cat), func(cut any) (int64, error) {
			return r.count(ctx, "live_messages l", liveCond(r.c.d), string(cat), cut)
		}, func(cut any) (int64, error) {
			return r.liveBatches(ctx, cat, cut)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// LiveCandidates picks, on the read side, the next batch of messages of category ?1 received
// before the cutoff ?2 that may go, after the one last picked (received_at ?3, session_id ?4,
// seq ?5), in the order of the index on (category, received_at): each query of a run starts
// where the one before stopped, so a run reads the messages it keeps (every ended session's
// last one) once, on the read side, and no write transaction reads them at all.
func LiveCandidates(d Dialect) string {
	cond := strings.NewReplacer("l.category = ?", "l.category = ?1", "l.received_at < ?", "l.received_at < ?2").Replace(liveCond(d))
	return d.Rebind(`SELECT l.session_id, l.seq, l.received_at FROM live_messages l
	WHERE ` + cond + ` AND l.received_at >= ?3
		AND (l.received_at > ?3 OR l.session_id > ?4 OR (l.session_id = ?4 AND l.seq > ?5))
	ORDER BY l.received_at, l.session_id, l.seq LIMIT ?6`)
}

// liveKey is a message LiveCandidates picked, and where the next pick starts.
type liveKey struct {
	session  string
	seq      int64
	received any
}

// liveBatches deletes the messages of cat received before cut that may go, a batch at a time:
// picked by LiveCandidates, then deleted by key in a transaction of their own, each checked
// again on its own row (StPruneLive). Nothing a candidate passed turns false later (a message
// keeps its category and time, a final record stays final, a session's last seq only grows),
// so the check matters only for a key another row took meanwhile (a session pruned with its job
// and stored again, its numbers started over), and it reads that one row.
func (r *pruneRun) liveBatches(ctx context.Context, cat api.MessageCategory, cut any) (int64, error) {
	query := LiveCandidates(r.c.d)
	after := liveKey{received: r.c.d.Time(time.Time{})}
	var total int64
	for {
		rows, err := r.c.db.QueryContext(ctx, query, string(cat), cut, after.received, after.session, after.seq, r.c.d.Limit(r.batch))
		if err != nil {
			return total, fmt.Errorf("pick: %w", err)
		}
		keys, err := Collect(rows, func(s Scanner) (liveKey, error) {
			var k liveKey
			err := s.Scan(&k.session, &k.seq, &k.received)
			if b, ok := k.received.([]byte); ok {
				k.received = string(b) // compared as the TEXT it is in SQLite, not as a BLOB
			}
			return k, err
		})
		if err != nil {
			return total, fmt.Errorf("pick: %w", err)
		}
		if len(keys) == 0 {
			return total, nil
		}
		n, err := r.deleteLive(ctx, cat, cut, keys)
		total += n
		if err != nil || len(keys) < r.batch {
			return total, err
		}
		after = keys[len(keys)-1]
	}
}

// deleteLive deletes the messages keys in one transaction, and reports how many went.
func (r *pruneRun) deleteLive(ctx context.Context, cat api.MessageCategory, cut any, keys []liveKey) (int64, error) {
	var n int64
	err := r.c.inTx(ctx, "prune "+string(store.LiveKind(cat)), Derived, nil, func(t Tx) error {
		for _, k := range keys {
			if err := r.c.pruneSearchLive(ctx, t, cat, string(cat), cut, k.session, k.seq); err != nil {
				return fmt.Errorf("message %s/%d: %w", k.session, k.seq, err)
			}
			res, err := t.Exec(ctx, StPruneLive, string(cat), cut, k.session, k.seq)
			if err != nil {
				return fmt.Errorf("message %s/%d: %w", k.session, k.seq, err)
			}
			m, _ := res.RowsAffected()
			n += m
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// tokens deletes the callback tokens minted more than p.Tokens ago, revoked or not: they
// authenticate nothing any more.
func (r *pruneRun) tokens(ctx context.Context) error {
	return r.kind(store.PruneTokens, func(cut any) (int64, error) {
		return r.count(ctx, "tokens", condTokens, cut)
	}, func(cut any) (int64, error) {
		return r.batches(ctx, store.PruneTokens, StPruneTokens, int64(r.batch), cut, r.c.d.Limit(r.batch))
	})
}

// sessions deletes the revocations of dashboard sessions that expired more than p.Sessions
// ago: their cookies are refused on their expiry alone.
func (r *pruneRun) sessions(ctx context.Context) error {
	return r.kind(store.PruneSessions, func(cut any) (int64, error) {
		return r.count(ctx, "session_revocations", condSessions, cut)
	}, func(cut any) (int64, error) {
		return r.batches(ctx, store.PruneSessions, StPruneSessions, int64(r.batch), cut, r.c.d.Limit(r.batch))
	})
}

// batches runs the DELETE st with args, each batch in a transaction of its own, until a batch
// deletes fewer than full rows, and returns how many it deleted.
func (r *pruneRun) batches(ctx context.Context, kind store.PruneKind, st Stmt, full int64, args ...any) (int64, error) {
	var total int64
	for {
		n, err := r.c.execOne(ctx, "prune "+string(kind), st, args...)
		total += n
		if err != nil || n < full {
			return total, err
		}
	}
}

// execOne runs st in a Derived transaction of its own and reports the rows it changed.
func (c *Core) execOne(ctx context.Context, op string, st Stmt, args ...any) (int64, error) {
	var n int64
	err := c.inTx(ctx, op, Derived|OneStatement, nil, func(t Tx) error {
		res, err := t.Exec(ctx, st, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
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
	keep := r.p.Keep(store.PruneJobs)
	if keep <= 0 {
		return nil
	}
	cut := r.cutoff(keep)
	if r.dry {
		return r.countJobs(ctx, cut)
	}
	for {
		ids, more, err := r.pickJobs(ctx, cut)
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
		if !more || deleted == 0 {
			return nil
		}
	}
}

// pickJobs picks the next batch of jobs to go: at most the batch size, and the first ones whose
// records before them sum to less than PruneBatchBytes. more reports that others may follow.
func (r *pruneRun) pickJobs(ctx context.Context, cut any) (ids []string, more bool, err error) {
	type picked struct {
		id   string
		size int64
	}
	var all []picked
	err = r.c.inTx(ctx, "prune jobs", Derived|OneStatement, nil, func(t Tx) error {
		rows, err := t.Query(ctx, StPruneJobsPick, cut, r.c.d.Limit(r.batch))
		if err != nil {
			return err
		}
		all, err = Collect(rows, func(s Scanner) (picked, error) {
			var p picked
			return p, s.Scan(&p.id, &p.size)
		})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	var before int64
	for _, p := range all {
		if before >= PruneBatchBytes {
			break
		}
		ids = append(ids, p.id)
		before += p.size
	}
	return ids, len(all) == r.batch || len(ids) < len(all), nil
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
	var n [3]int64 // jobs, artifacts, messages
	err := r.c.inTx(ctx, "prune jobs", Derived, nil, func(t Tx) error {
		for _, id := range ids {
			res, err := t.Exec(ctx, StPruneJob, id, cut)
			if err != nil {
				return fmt.Errorf("job %s: %w", id, err)
			}
			if k, _ := res.RowsAffected(); k == 0 {
				continue
			}
			n[0]++
			if err := r.c.pruneSearchJob(ctx, t, id); err != nil {
				return fmt.Errorf("job %s: %w", id, err)
			}
			for i, st := range []Stmt{StPruneJobArtifacts, StPruneJobLive} {
				res, err := t.Exec(ctx, st, id)
				if err != nil {
					return fmt.Errorf("job %s: %w", id, err)
				}
				k, _ := res.RowsAffected()
				n[i+1] += k
			}
			// The names of its speakers go with the job; they are no kind of their own.
			if _, err := t.Exec(ctx, StPruneJobSpeakers, id); err != nil {
				return fmt.Errorf("job %s: %w", id, err)
			}
			if r.c.d.SQL[StPruneJobSeq] != "" {
				if _, err := t.Exec(ctx, StPruneJobSeq, id); err != nil {
					return fmt.Errorf("job %s: %w", id, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
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
