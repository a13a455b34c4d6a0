package sinks

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// Defaults of a Spec's delivery settings (see Spec).
const (
	DefaultJitter = 0.2
	// DefaultConcurrency is how many deliveries of a sink are in flight at once: enough to keep
	// a webhook sink's round trips from bounding its throughput (16 parallel requests reach
	// thousands of events a second on a loopback target), few enough for any receiver.
	DefaultConcurrency      = 16
	DefaultBreakerThreshold = 5
	DefaultBreakerCooldown  = 30 * time.Second
	// DefaultAttemptTimeout bounds one attempt when the spec gives no Timeout.
	DefaultAttemptTimeout = 10 * time.Second
	// MaxRetryAfter is the longest wait a destination's Retry-After can impose; see Policy.Wait.
	MaxRetryAfter = time.Hour
)

// Policy is a sink's delivery settings with the defaults applied: how often, how fast and how
// patiently its deliveries are attempted.
//
// # Attempts and the schedule
//
// Attempts are numbered from 1, and a delivery gets at most len(Schedule) of them:
//
//   - Schedule[0] is the wait before attempt 1, counted from when the event was queued. It is
//     normally 0, and it is the enqueuer's to apply (FirstAttempt gives the due time to queue
//     with): a claimed delivery is attempted at once.
//   - Schedule[n], n ≥ 1, is the wait after attempt n failed before attempt n+1, counted from
//     the failure. store.SinkDelivery.Attempts holds the failed attempts so far, so a delivery that fails
//     its attempt Attempts+1 = n waits Schedule[n].
//   - When attempt len(Schedule) fails, the delivery is dead-lettered.
//
// With DefaultSchedule that is 8 attempts: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h,
// 10 h and 10 h, about 28 hours from the first to the last.
type Policy struct {
	Schedule []time.Duration
	// Jitter spreads each retry wait uniformly over [wait·(1−Jitter), wait·(1+Jitter)], so that
	// deliveries failed together do not come back together; 0 ≤ Jitter ≤ 1, so a wait is never
	// negative.
	Jitter      float64
	Concurrency int
	Ordered     bool
	// Timeout bounds one attempt.
	Timeout time.Duration
	// BreakerThreshold consecutive failures open the breaker for BreakerCooldown; 0 means no
	// breaker.
	BreakerThreshold int
	BreakerCooldown  time.Duration
	// Rate is the most attempts a second (0: no limit); Burst how many may go at once, ≥ 1
	// when Rate is set.
	Rate  float64
	Burst int
}

// PolicyOf applies the defaults to spec's delivery settings and rejects settings that cannot
// work. Zero values take the defaults; a negative Jitter means no jitter and a negative
// BreakerThreshold no breaker. An Ordered sink has the same default concurrency: an ordered
// claim never hands out two deliveries of one key at once, so its deliveries run in parallel
// across jobs and sessions and one at a time, in order, within one.
func PolicyOf(spec Spec) (Policy, error) {
	p := Policy{
		Schedule:         spec.Retry,
		Jitter:           spec.Jitter,
		Concurrency:      spec.Concurrency,
		Ordered:          spec.Ordered,
		Timeout:          spec.Timeout,
		BreakerThreshold: spec.BreakerThreshold,
		BreakerCooldown:  spec.BreakerCooldown,
		Rate:             spec.Rate,
		Burst:            spec.RateBurst,
	}
	if len(p.Schedule) == 0 {
		p.Schedule = DefaultSchedule
	}
	p.Schedule = append([]time.Duration(nil), p.Schedule...) // the caller's slice stays theirs
	for i, w := range p.Schedule {
		if w < 0 {
			return Policy{}, fmt.Errorf("sink %q: retry: wait %d is negative (%s)", spec.Name, i, w)
		}
	}
	switch {
	case p.Jitter == 0:
		p.Jitter = DefaultJitter
	case p.Jitter < 0:
		p.Jitter = 0
	case p.Jitter > 1:
		return Policy{}, fmt.Errorf("sink %q: jitter: %g is above 1, waits would go negative", spec.Name, p.Jitter)
	}
	// The first setting at fault is the error.
	if err := cmp.Or(
		orDefault(&p.Concurrency, DefaultConcurrency, spec.Name, "concurrency"),
		orDefault(&p.Timeout, DefaultAttemptTimeout, spec.Name, "timeout"),
		orDefault(&p.BreakerCooldown, DefaultBreakerCooldown, spec.Name, "breaker cooldown"),
	); err != nil {
		return Policy{}, err
	}
	switch {
	case math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0) || p.Rate < 0:
		return Policy{}, fmt.Errorf("sink %q: rate: %g is not a positive number of deliveries a second, nor 0 for no limit", spec.Name, p.Rate)
	case p.Burst < 0:
		return Policy{}, fmt.Errorf("sink %q: rate burst: %d is negative", spec.Name, p.Burst)
	case p.Rate == 0:
		p.Burst = 0
	case p.Burst == 0:
		p.Burst = DefaultBurst(p.Rate)
	}
	switch {
	case p.BreakerThreshold < 0:
		p.BreakerThreshold = 0
	case p.BreakerThreshold == 0:
		p.BreakerThreshold = DefaultBreakerThreshold
	}
	return p, nil
}

// orDefault gives *v the default def when it is zero; a negative *v is an error naming the
// sink's setting.
func orDefault[T int | time.Duration](v *T, def T, sink, setting string) error {
	switch {
	case *v < 0:
		return fmt.Errorf("sink %q: %s: %v is negative", sink, setting, *v)
	case *v == 0:
		*v = def
	}
	return nil
}

// FirstAttempt is when an event queued at queued is due for attempt 1 (Schedule[0] later).
func (p Policy) FirstAttempt(queued time.Time) time.Time {
	return queued.Add(p.Schedule[0])
}

// Wait is how long to wait after attempt number attempt (from 1) failed, and false when that
// was the last attempt. r, in [0, 1), places the wait within the jitter range: 0 gives
// wait·(1−Jitter), 0.5 the wait itself. A destination's retryAfter (Retry-After) is honoured
// within [the jittered scheduled wait, MaxRetryAfter]: it can make a wait longer, up to an
// hour, but never shorter — a destination asking for a quick retry gets no more attempts than
// the schedule gives, and one asking for days does not park the delivery for days; the schedule
// goes on from there.
func (p Policy) Wait(attempt int, retryAfter time.Duration, r float64) (time.Duration, bool) {
	if attempt < 1 {
		attempt = 1
	}
	if attempt >= len(p.Schedule) {
		return 0, false
	}
	w := spreadWait(p.Schedule[attempt], p.Jitter, r)
	if retryAfter > 0 {
		w = max(w, min(retryAfter, MaxRetryAfter))
	}
	return w, true
}

// spreadWait moves wait by up to ±jitter of itself, r in [0, 1) choosing where (values outside are
// clamped, so a faulty random source cannot produce a negative wait).
func spreadWait(wait time.Duration, jitter, r float64) time.Duration {
	if wait <= 0 || jitter <= 0 {
		return wait
	}
	r = min(max(r, 0), 1)
	return wait + time.Duration(float64(wait)*jitter*(2*r-1))
}
