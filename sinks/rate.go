package sinks

import (
	"math"
	"time"
)

// tokenBucket is a sink's rate limit: Rate tokens a second, at most Burst kept, one token per
// delivery attempted. The worker takes tokens before it claims, as many as it claims, and gives
// back those its claim did not use, so no claimed delivery waits for a token while its lease
// runs. It is not safe for concurrent use: its worker guards it.
//
// It is this package's own rather than golang.org/x/time/rate's Limiter: the worker needs
// "take up to n now, give back what the claim left", on the dispatcher's clock (tests move it
// by hand), which a Limiter's reservations only approximate (a cancelled reservation gives its
// tokens back only when no later one was made), and thirty lines are less to keep than a module.
type tokenBucket struct {
	rate   float64 // tokens a second, > 0
	burst  float64 // ≥ 1
	tokens float64
	last   time.Time // when tokens was counted; zero: never (the bucket starts full)
	// group is how many tokens a held-back worker waits for before it claims again: a tenth of
	// a second's worth (at most the burst), so that a fast rate costs the queue about ten
	// claims a second rather than one per delivery, which would take the store's writer from
	// the other sinks.
	group int
}

// newTokenBucket is the bucket of a policy's rate, nil when rate is 0 (no limit).
func newTokenBucket(rate float64, burst int) *tokenBucket {
	if rate <= 0 {
		return nil
	}
	burst = max(burst, 1)
	group := int(min(math.Ceil(rate/10), float64(burst)))
	return &tokenBucket{rate: rate, burst: float64(burst), group: max(group, 1)}
}

// DefaultBurst is the burst of a rate given without one: one second's worth of tokens, at
// least one.
func DefaultBurst(rate float64) int {
	if rate <= 0 || math.IsNaN(rate) {
		return 0
	}
	return int(max(1, min(math.Ceil(rate), math.MaxInt32)))
}

func (b *tokenBucket) refill(now time.Time) {
	if b.last.IsZero() {
		b.tokens, b.last = b.burst, now
		return
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(b.burst, b.tokens+el.Seconds()*b.rate)
		b.last = now
	}
}

// take takes up to want tokens at now and returns how many it took, none while fewer than
// min(want, b.group) are there; wait is how long until that many are there again (0 when they
// are).
func (b *tokenBucket) take(now time.Time, want int) (n int, wait time.Duration) {
	b.refill(now)
	least := float64(max(1, min(want, b.group)))
	// A hair of slack: a token due at t must not be missed by a rounding at t.
	if have := math.Floor(b.tokens + 1e-9); have >= least {
		n = min(want, int(have))
		b.tokens -= float64(n)
	}
	if b.tokens < least-1e-9 {
		wait = time.Duration(math.Ceil((least - b.tokens) / b.rate * float64(time.Second)))
		wait = max(wait, time.Millisecond)
	}
	return n, wait
}

// refund gives back n tokens taken but not used.
func (b *tokenBucket) refund(n int) {
	if n > 0 {
		b.tokens = min(b.burst, b.tokens+float64(n))
	}
}
