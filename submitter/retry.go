package submitter

import (
	"errors"
	"net/http"
	"syscall"
	"time"

	"github.com/scribehook/scribehook/internal/httpretry"
)

// RetryPolicy bounds the retries of one call. Zero fields take the defaults below; set
// MaxAttempts to 1 to disable retries.
type RetryPolicy struct {
	MaxAttempts   int           // attempts in all, the first included; default 4
	BaseDelay     time.Duration // ceiling of the first back-off; default 500ms
	MaxDelay      time.Duration // ceiling of any back-off; default 20s
	MaxRetryAfter time.Duration // a longer Retry-After is clamped to this; default 60s
}

// DefaultRetryPolicy is what a zero RetryPolicy means.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 20 * time.Second, MaxRetryAfter: 60 * time.Second}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	p.MaxAttempts = positiveOr(p.MaxAttempts, d.MaxAttempts)
	p.BaseDelay = positiveOr(p.BaseDelay, d.BaseDelay)
	p.MaxDelay = positiveOr(p.MaxDelay, d.MaxDelay)
	p.MaxRetryAfter = positiveOr(p.MaxRetryAfter, d.MaxRetryAfter)
	return p
}

// positiveOr is v, or def when v is zero or negative: the package's rule for an option field
// left at its zero value (RetryPolicy, StreamOptions).
func positiveOr[T ~int | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// backoffCeiling is the upper bound of the wait before retry number n (1 for the first retry):
// BaseDelay doubled per retry, capped at MaxDelay, however large n is (a shift would overflow
// into a negative wait). A call's retries draw a full jitter in [0, ceiling]; a live stream's
// reconnections wait at least half of it.
func (p RetryPolicy) backoffCeiling(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n; i++ {
		d *= 2
		if d >= p.MaxDelay || d <= 0 {
			return p.MaxDelay
		}
	}
	return min(d, p.MaxDelay)
}

// retryableStatus reports whether a status is worth another attempt. A create (POST) is
// retried only on 429 and 503: both say the request was turned away before any job existed.
// Other 5xx may arrive after the job was created, and a second POST would create (and bill)
// a duplicate job with duplicate callbacks; the interface has no idempotency key to prevent it.
func retryableStatus(status int, idempotent bool) bool {
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable:
		return true
	case status >= 500 && status != http.StatusNotImplemented:
		return idempotent
	}
	return false
}

// retryableError reports whether a transport error is worth another attempt. For a create,
// only a refused connection qualifies: the request was certainly never sent. Any other
// failure (reset, timeout, EOF) may have happened after the server took the job.
func retryableError(err error, idempotent bool) bool {
	if idempotent {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date, at most a day (the
// policy's MaxRetryAfter then clamps it). ok is false when the header is absent or
// unreadable; a date in the past means no wait.
func retryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	return httpretry.After(h.Get("Retry-After"), now, 24*time.Hour)
}
