package sinks

import "time"

// BreakerState is where a sink's circuit breaker is.
type BreakerState string

const (
	// BreakerClosed: deliveries are attempted normally.
	BreakerClosed BreakerState = "closed"
	// BreakerOpen: nothing is attempted until the cooldown ends.
	BreakerOpen BreakerState = "open"
	// BreakerHalfOpen: the cooldown ended; one delivery probes the destination.
	BreakerHalfOpen BreakerState = "half-open"
)

// sinkBreaker tracks a destination's health from the outcomes of attempts. It is not safe for
// concurrent use: its worker guards it.
//
// It counts consecutive failed attempts, and at threshold (0: never) opens for cooldown. When
// the cooldown ends it is half-open and lets one attempt through as a probe: success closes it,
// failure opens it again for another cooldown. Any success closes it, even one that started
// before it opened, since a success is first-hand news that the destination works.
type sinkBreaker struct {
	threshold int
	cooldown  time.Duration

	state     BreakerState
	failures  int // consecutive
	openUntil time.Time
	probing   bool // the half-open probe is in flight
}

func newSinkBreaker(threshold int, cooldown time.Duration) *sinkBreaker {
	return &sinkBreaker{threshold: threshold, cooldown: cooldown, state: BreakerClosed}
}

// admit says how many of free slots may be claimed at now, or how long to wait before asking
// again when none may; probe tells that the one slot allowed is the half-open probe (it stays
// reserved until released or settled), halfOpened the move from open to half-open.
func (b *sinkBreaker) admit(now time.Time, free int) (n int, probe bool, wait time.Duration, halfOpened bool) {
	if b.state == BreakerOpen {
		if now.Before(b.openUntil) {
			return 0, false, b.openUntil.Sub(now), false
		}
		b.state, halfOpened = BreakerHalfOpen, true
	}
	if b.state == BreakerHalfOpen {
		if b.probing || free < 1 {
			return 0, false, 0, halfOpened
		}
		b.probing = true
		return 1, true, 0, halfOpened
	}
	return free, false, 0, false
}

// release gives back a probe reservation: nothing was claimed, or the attempt says nothing
// about the destination's health.
func (b *sinkBreaker) release() { b.probing = false }

// success records an attempt the destination answered; it reports whether that closed the
// breaker.
func (b *sinkBreaker) success(probe bool) (closed bool) {
	if probe {
		b.probing = false
	}
	b.failures = 0
	if b.state == BreakerClosed {
		return false
	}
	b.state = BreakerClosed
	return true
}

// failure records a failed attempt at now; it reports whether that opened the breaker.
func (b *sinkBreaker) failure(now time.Time, probe bool) (opened bool) {
	if probe {
		b.probing = false
	}
	b.failures++
	switch {
	case b.state == BreakerHalfOpen && (probe || !b.probing):
		// The probe failed (or an attempt from before the cooldown did, with no probe out).
	case b.state == BreakerClosed && b.threshold > 0 && b.failures >= b.threshold:
	default:
		return false
	}
	b.state, b.openUntil = BreakerOpen, now.Add(b.cooldown)
	return true
}
