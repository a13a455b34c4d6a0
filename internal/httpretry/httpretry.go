// Package httpretry reads a Retry-After header, for the two clients that honour it: the
// webhook sink and the service client (submitter).
package httpretry

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// After is the wait a Retry-After value v asks for at now: delay-seconds or an HTTP date
// (any of the three formats of http.ParseTime), at most limit. ok is false when v is empty,
// negative or neither form; a date in the past is a wait of zero. Seconds are clamped in whole
// seconds before they are multiplied, so no value overflows a Duration.
func After(v string, now time.Time, limit time.Duration) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(limit/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), limit), true
	}
	return 0, false
}
