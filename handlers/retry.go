package handlers

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/store"
)

// Persisted retries.
//
// An attempt to apply a row that fails is recorded in the row (store.Inbox.MarkInboxFailed):
// its error, one attempt more, and when it is due again, the wait RetrySchedule gives for its
// attempts so far. The attempt after the last retry (MaxRetries, by default the schedule's
// length) marks the row failed for good, and so does the first one when no retry can change its
// outcome (the row's body does not decode as its kind: permanentError). A failed row waits for a
// replay (store.InboxFailures). Nothing waits in memory: after a restart the row is found with
// its attempts and its due time, and is retried when it was due. A callback applied at its
// first attempt costs nothing more than before: the due time is written only by a failure.
//
// While a row waits, the later rows of its key (its job or live session) wait behind it: a
// hold on the key, so that a session's messages are still applied in order when one of them
// needed a retry. A row failed for good holds nothing; the rows behind it go on, as they did
// when retries were in memory. When a hold goes with rows behind it, they are queued again.
//
// Rows come due through the store: at the due time of this process's earliest hold, and every
// RetryPoll, which finds what another process recorded (a replay by `scribehook inbox replay`,
// a retry recorded by another replica).

// DefaultRetryPoll is how often the store is asked for rows that came due.
const DefaultRetryPoll = time.Second

// DefaultRetrySchedule is the waits before the retries of a row whose apply failed: 1 s, 5 s,
// 30 s, 2 min, 10 min, about 13 minutes from the first attempt to the sixth and last.
func DefaultRetrySchedule() []time.Duration {
	return []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}
}

// retryWait is the wait after a row's attempt number n (1: the first) failed.
func (p *Pipeline) retryWait(n int) time.Duration {
	s := p.cfg.RetrySchedule
	return s[min(max(n-1, 0), len(s)-1)]
}

// permanentError is a failure no retry changes: the row's own bytes, which never change, do
// not decode as its kind. The row is failed at its first attempt.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// permanent marks err as one no retry changes.
func permanent(err error) error { return permanentError{err} }

func isPermanent(err error) bool {
	var pe permanentError
	return errors.As(err, &pe)
}

// errWaiting is what persist answers for a row it left alone because it is not due, or waits
// behind an earlier row of its key: no attempt was made.
var errWaiting = errors.New("inbox row waits for its turn")

// attemptError is a failed attempt, recorded (or not) in the row.
type attemptError struct {
	err error
	// stuck: the failure could not be recorded; the row stays pending as it was, for the
	// sweep.
	stuck bool
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// failed records a failed attempt of row (of which only ID, PartitionKey, Kind and Attempts are
// read: a row that could not be read is given with its id alone) and returns the attempt's
// error as an *attemptError. The row is due again after its wait, its key held until then, or
// failed for good after its last retry or at a permanent error. An attempt interrupted by a
// stop is not recorded: the row stays pending, untouched, for the next start.
func (p *Pipeline) failed(ctx context.Context, row store.InboxRow, err error) error {
	if p.stopping() || errors.Is(err, context.Canceled) {
		return err
	}
	p.m.errors.WithLabelValues(string(row.Kind)).Inc()
	attempt := row.Attempts + 1
	final := attempt > p.cfg.MaxRetries || isPermanent(err)
	var retryAt time.Time // zero: failed for good
	if !final {
		retryAt = p.cfg.Now().Add(p.retryWait(attempt))
	}
	log := p.log.WithFields(logrus.Fields{"inbox_id": row.ID, "job_id": row.JobID, "kind": row.Kind, "attempt": attempt})
	merr := p.cfg.Store.MarkInboxFailed(context.WithoutCancel(ctx), row.ID, err.Error(), retryAt)
	switch {
	case merr == nil && final:
		p.m.poisoned.Inc()
		log.WithError(err).Error("delivery failed for good; it waits for a replay (scribehook inbox replay)")
		p.emitInboxFailed(ctx, row, attempt, err)
		p.release(row.PartitionKey, row.ID)
	case merr == nil:
		log.WithError(err).WithField("retry_at", retryAt).Warn("applying a delivery failed; it is retried at its due time")
		if row.DedupeKey != "" {
			// A row that could not even be read has no key to hold: the store's due rows bring
			// it back.
			p.holds.hold(row.PartitionKey, row.ID, retryAt)
		}
	case errors.Is(merr, store.ErrAlreadyApplied), errors.Is(merr, store.ErrNotFound):
		// Applied meanwhile (by another replica), or gone: nothing to retry.
		p.release(row.PartitionKey, row.ID)
	default:
		// The store refuses writes: the row stays pending as it was, for the sweep, rather than
		// retried at once into the same refusal. Nothing records that it waits, so its key
		// goes on, as when its failure is recorded for good.
		log.WithError(merr).Warn("could not record a failed attempt; the row stays pending for the sweep")
		p.release(row.PartitionKey, row.ID)
		return &attemptError{err: err, stuck: true}
	}
	return &attemptError{err: err}
}

// release ends the hold of row id on key, if it holds it: the row was applied, found done, or
// failed for good. The rows left behind it are queued again.
func (p *Pipeline) release(key string, id int64) {
	if !p.holds.release(key, id) {
		return
	}
	if p.bus != nil {
		p.bus.drainLater(key)
		return
	}
	ping(p.rescan)
}

// holds are the partition keys whose earliest pending row waits for its next attempt, and
// which of their rows holds them. Safe for concurrent use.
type holds struct {
	n       atomic.Int32 // len(m): the fast path of a row when no key is held
	mu      sync.Mutex
	m       map[string]*hold
	gen     uint64        // counts the scans of all rows, for keepOnly
	changed chan struct{} // capacity 1: a hold was set, the earliest due time may be sooner
}

type hold struct {
	id  int64     // the row that holds the key
	due time.Time // when it is due
	gen uint64    // the scan generation it was set in
	// skipped: a later row of the key was left pending behind it, to queue again once it goes.
	skipped bool
}

func newHolds() *holds {
	return &holds{m: map[string]*hold{}, changed: make(chan struct{}, 1)}
}

// hold records that row id of key waits until due (a failed attempt). An earlier row of the
// key holding it already keeps holding it.
func (h *holds) hold(key string, id int64, due time.Time) {
	h.mu.Lock()
	h.set(key, id, due)
	h.mu.Unlock()
	ping(h.changed)
}

// set is hold with h.mu held.
func (h *holds) set(key string, id int64, due time.Time) {
	cur := h.m[key]
	switch {
	case cur == nil:
		h.m[key] = &hold{id: id, due: due, gen: h.gen}
		h.n.Add(1)
	case cur.id == id:
		cur.due = due
	case cur.id > id:
		// An earlier row takes the hold over; the later one is left behind it.
		h.m[key] = &hold{id: id, due: due, gen: h.gen, skipped: true}
	}
}

// waits reports whether the row id of key, due at due (zero: at once), must be left pending
// at now: it is not due (its key is then held by it, unless an earlier row holds it), or an
// earlier row of its key is held (the row is then noted as left behind).
func (h *holds) waits(key string, id int64, due, now time.Time) bool {
	notDue := due.After(now)
	if !notDue && h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.m[key]; cur != nil && cur.id < id {
		cur.skipped = true
		return true
	}
	if notDue {
		h.set(key, id, due)
		ping(h.changed)
		return true
	}
	return false
}

// behind reports whether an earlier row than id holds key.
func (h *holds) behind(key string, id int64) bool {
	if h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.m[key]
	return cur != nil && cur.id < id
}

// held reports whether key is held.
func (h *holds) held(key string) bool {
	if h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[key] != nil
}

// release ends the hold of key if row id holds it, and reports whether rows were left behind
// it.
func (h *holds) release(key string, id int64) bool {
	if h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.m[key]
	if cur == nil || cur.id != id {
		return false
	}
	delete(h.m, key)
	h.n.Add(-1)
	return cur.skipped
}

// dropStale ends the hold of key if its row is before first, the key's first pending row:
// its row is no longer pending (another replica applied it).
func (h *holds) dropStale(key string, first int64) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.m[key]; cur != nil && cur.id < first {
		delete(h.m, key)
		h.n.Add(-1)
	}
}

// generation starts a scan of all rows and returns its generation.
func (h *holds) generation() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	return h.gen
}

// keepOnly ends, after a scan of all rows of generation gen, the holds set before it of keys
// the scan found no pending row of.
func (h *holds) keepOnly(keys map[string]int64, gen uint64) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, cur := range h.m {
		if _, ok := keys[key]; !ok && cur.gen < gen {
			delete(h.m, key)
			h.n.Add(-1)
		}
	}
}

// nextDue is the earliest due time after now of a hold; zero when none.
func (h *holds) nextDue(now time.Time) time.Time {
	if h.n.Load() == 0 {
		return time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var next time.Time
	for _, cur := range h.m {
		if cur.due.After(now) && (next.IsZero() || cur.due.Before(next)) {
			next = cur.due
		}
	}
	return next
}

// dueTimer fires at the next due time of the holds: a time.Timer that may be off.
type dueTimer struct{ t *time.Timer }

func newDueTimer() *dueTimer {
	t := time.NewTimer(time.Duration(math.MaxInt64))
	t.Stop()
	return &dueTimer{t: t}
}

// reset sets the timer to fire at due (on the clock now is read from), or stops it when due is
// zero.
func (d *dueTimer) reset(due, now time.Time) {
	d.t.Stop()
	if !due.IsZero() {
		d.t.Reset(max(due.Sub(now), 0))
	}
}

func (d *dueTimer) c() <-chan time.Time { return d.t.C }

func (d *dueTimer) stop() { d.t.Stop() }
