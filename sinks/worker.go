package sinks

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/store"
)

// sinkWorker works one sink's queue.
type sinkWorker struct {
	d     *Dispatcher
	name  string
	kind  string // the spec's Kind, for the attempts' spans
	sink  Sink
	pol   Policy
	lease time.Duration
	// minClaim is the fewest free slots worth a claim while attempts are in flight.
	minClaim int
	log      *logrus.Entry
	// wake is poked by Wake; settled by every finished attempt. Both hold at most one signal:
	// the loop looks at the whole queue whenever it wakes, so signals may merge.
	wake, settled chan struct{}

	mu sync.Mutex
	br *sinkBreaker
	// bucket is the sink's rate limit (rate.go), nil without one; throttledAt is when the loop
	// last stopped short of its free slots for want of tokens with deliveries likely waiting,
	// zero when it did not (the time until the next round counts as rate-limited).
	bucket      *tokenBucket
	throttledAt time.Time
	inFlight    int
	// done holds the deliveries delivered but not yet recorded; their
	// slots stay counted in inFlight until the next round records them. A round waits at most
	// for the attempts running to end, each within the attempt timeout, so a delivery is
	// recorded well within its lease (at least twice that timeout) and not attempted again.
	done           []int64
	disabled       bool
	disabledReason string
	// stateGen counts the changes of disabled made in this process (a 410, Enable, Disable):
	// a read of the recorded states that began before one of them is older than it and must
	// not undo it.
	stateGen uint64
	// recording counts the disablings (410s) being recorded in DispatcherConfig.States; no read of
	// the states applies meanwhile.
	recording int
	delivered uint64
	failed    uint64
	dead      uint64

	depthMu sync.Mutex
	depth   int64
	depthAt time.Time // wall time of the count
}

func (w *sinkWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the sink's loop: claim what the concurrency and the breaker allow, start the attempts,
// sleep until something changes; while the sink is disabled, claim nothing until it is
// enabled. It returns when ctx ends, once its attempts are settled.
func (w *sinkWorker) run(ctx context.Context) {
	var attempts sync.WaitGroup
	defer func() {
		attempts.Wait()
		w.recordDone(ctx)
	}()
	for ctx.Err() == nil {
		now := w.d.now()
		w.mu.Lock()
		if w.disabled {
			// Enable (here or through DispatcherConfig.States) pokes the worker. Meanwhile what the
			// attempts still running deliver is recorded as they settle.
			w.mu.Unlock()
			w.recordDone(ctx)
			select {
			case <-ctx.Done():
			case <-w.wake:
			case <-w.settled:
			}
			continue
		}
		// A round records what was delivered and claims for the free slots. While attempts are
		// running it waits until a few slots are free: one transaction then serves several
		// deliveries instead of one each. An idle sink goes at once.
		running := w.inFlight - len(w.done)
		free := w.pol.Concurrency - running
		var done []int64
		if running == 0 || free >= w.minClaim {
			done, w.done = w.done, nil
		} else {
			free = 0
		}
		// The slots are reserved before the claim, so that InFlight counts claims under way.
		n, probe, wait, halfOpened := w.br.admit(now, free)
		// A rate-limited sink claims no more than it has tokens for: a claimed delivery never
		// waits for a token while its lease runs.
		wasThrottled := w.rateRound(now)
		var limited bool
		var tokenWait time.Duration
		if w.bucket != nil && n > 0 {
			var got int
			got, tokenWait = w.bucket.take(now, n)
			if limited = got < n; limited {
				if probe && got == 0 {
					w.br.release()
					probe = false
				}
				n = got
			}
		}
		w.inFlight += n
		w.mu.Unlock()
		if halfOpened {
			w.log.Info("sinks: breaker half-open, probing")
			w.d.m.breaker(w.name, BreakerHalfOpen)
		}
		if wait <= 0 {
			wait = w.d.poll
		}
		claimed := 0
		if n > 0 || len(done) > 0 {
			ds := w.round(ctx, done, now, n)
			claimed = len(ds)
			w.mu.Lock()
			w.inFlight -= len(done) + n - len(ds)
			if probe && len(ds) == 0 {
				w.br.release()
			}
			if w.bucket != nil {
				w.bucket.refund(n - len(ds))
			}
			w.mu.Unlock()
			// Attempts claimed while the breaker was closed run even if it opened meanwhile.
			w.start(ctx, &attempts, ds, probe)
		}
		// Short of tokens with deliveries maybe waiting (the claim took all it was allowed, or
		// none could be claimed): come back when the tokens are there rather than at the next
		// poll. The time counts as held back when the queue was surely not drained.
		if limited && (n == 0 || claimed == n) {
			wait = min(wait, tokenWait)
			if n > 0 || wasThrottled {
				w.mu.Lock()
				w.throttledAt = now
				w.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-w.settled:
		case <-w.d.after(wait):
		}
	}
}

// rateRound counts the time since the previous round as rate-limited when that round was held
// back by the bucket, and reports whether it was; w.mu is held.
func (w *sinkWorker) rateRound(now time.Time) bool {
	if w.throttledAt.IsZero() {
		return false
	}
	if el := now.Sub(w.throttledAt); el > 0 {
		w.d.m.rateLimited.WithLabelValues(w.name).Add(el.Seconds())
	}
	w.throttledAt = time.Time{}
	return true
}

// recordDone records the deliveries delivered but not yet recorded and frees their slots.
func (w *sinkWorker) recordDone(ctx context.Context) {
	w.mu.Lock()
	done := w.done
	w.done = nil
	w.inFlight -= len(done)
	w.mu.Unlock()
	w.record(ctx, done)
}

// finish settles an attempt that ended with err, accounts for it, and returns its outcome.
func (w *sinkWorker) finish(ctx context.Context, dl store.SinkDelivery, probe bool, err error) attemptOutcome {
	now := w.d.now()
	qctx, qcancel := context.WithTimeout(ctx, queueTimeout)
	defer qcancel()
	res := w.settle(qctx, dl, err, now)

	w.mu.Lock()
	if res == outcomeDelivered {
		// The slot stays taken until the next round records the delivery.
		w.done = append(w.done, dl.ID)
	} else {
		w.inFlight--
	}
	var opened, closed bool
	switch res {
	case outcomeDelivered:
		w.delivered++
		closed = w.br.success(probe)
	case outcomeDead:
		w.failed++
		w.dead++
		if AsFailure(err).Permanent {
			// The destination answered; only the event was at fault.
			closed = w.br.success(probe)
		} else {
			opened = w.br.failure(now, probe)
		}
	case outcomeRetried:
		w.failed++
		opened = w.br.failure(now, probe)
	case outcomeDisabled:
		w.failed++
		w.dead++
		if probe {
			w.br.release()
		}
	}
	failures, until := w.br.failures, w.br.openUntil
	w.mu.Unlock()

	w.d.m.deliveries.WithLabelValues(w.name, string(res)).Inc()
	if opened {
		w.attemptLog(dl).WithFields(logrus.Fields{"failures": failures, "until": until}).Warn("sinks: breaker open")
		w.d.m.breaker(w.name, BreakerOpen)
	}
	if closed {
		w.attemptLog(dl).Info("sinks: breaker closed")
		w.d.m.breaker(w.name, BreakerClosed)
	}
	select {
	case w.settled <- struct{}{}:
	default:
	}
	return res
}

type attemptOutcome string

// Outcomes of an attempt: the outcome label of scribehook_sink_deliveries_total.
const (
	outcomeDelivered attemptOutcome = "delivered"
	outcomeRetried   attemptOutcome = "retried"
	outcomeDead      attemptOutcome = "dead"
	outcomeDisabled  attemptOutcome = "disabled"
)

// settle records the attempt's result in the queue. A queue error is logged and left to the
// lease: the delivery is claimed again when it ends.
func (w *sinkWorker) settle(ctx context.Context, dl store.SinkDelivery, err error, now time.Time) attemptOutcome {
	if err == nil {
		return outcomeDelivered // recorded by the next round, with the others delivered since
	}
	f := AsFailure(err)
	msg := truncateError(f.Error(), maxErrorLen)
	log := w.attemptLog(dl).WithField("error", msg)
	kill := func(what string) {
		if qerr := w.d.queue.KillSinkDelivery(ctx, dl.ID, msg, now); qerr != nil {
			log.WithError(qerr).Error("sinks: dead-lettering failed; the delivery will be attempted again")
			return
		}
		log.Warn(what)
	}
	switch {
	case f.Disable:
		kill("sinks: delivery dead-lettered, sink disabled")
		w.disable(msg)
		return outcomeDisabled
	case f.Permanent:
		kill("sinks: permanent failure, delivery dead-lettered")
		return outcomeDead
	}
	attempt := dl.Attempts + 1
	wait, ok := w.pol.Wait(attempt, f.RetryAfter, w.d.random())
	if !ok {
		kill(fmt.Sprintf("sinks: attempt %d of %d failed, delivery dead-lettered", attempt, len(w.pol.Schedule)))
		return outcomeDead
	}
	if qerr := w.d.queue.RetrySinkDelivery(ctx, dl.ID, now.Add(wait), msg); qerr != nil {
		log.WithError(qerr).Error("sinks: recording a failed attempt failed; it will be attempted again when its lease ends")
	} else {
		log.WithField("retry_in", wait).Info("sinks: attempt failed, will retry")
	}
	return outcomeRetried
}

// attemptLog is the log of an attempt of dl, made only when there is something to say: a
// delivered event, the common case, logs nothing.
func (w *sinkWorker) attemptLog(dl store.SinkDelivery) *logrus.Entry {
	return w.log.WithFields(logrus.Fields{"delivery": dl.ID, "event": dl.EventID, "attempt": dl.Attempts + 1})
}

// readDepth counts the sink's queued deliveries, within depthTimeout, and refreshes the gauge's
// cache; -1 when the queue cannot say.
func (w *sinkWorker) readDepth() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), depthTimeout)
	defer cancel()
	n, err := w.d.queue.SinkDepth(ctx, w.name)
	if err != nil {
		w.log.WithError(err).Warn("sinks: reading queue depth failed")
		return -1
	}
	w.depthMu.Lock()
	w.depth, w.depthAt = n, time.Now()
	w.depthMu.Unlock()
	return n
}

// cachedDepth is the gauge's value: a scrape reads the queue at most every depthCacheTTL.
func (w *sinkWorker) cachedDepth() float64 {
	w.depthMu.Lock()
	n, at := w.depth, w.depthAt
	w.depthMu.Unlock()
	if !at.IsZero() && time.Since(at) < depthCacheTTL {
		return float64(n)
	}
	return float64(w.readDepth())
}

// truncateError keeps at most n bytes of s, cut at a rune boundary.
func truncateError(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
