package httpretry_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/httpretry"
)

func TestAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const unlimited = time.Duration(math.MaxInt64)
	maxSeconds := unlimited / time.Second * time.Second
	for _, tc := range []struct {
		v     string
		limit time.Duration
		want  time.Duration
		ok    bool
	}{
		{"", unlimited, 0, false},
		{"   ", unlimited, 0, false},
		{"0", unlimited, 0, true},
		{" 30 ", unlimited, 30 * time.Second, true},
		{"3600", unlimited, time.Hour, true},
		{"3600", time.Minute, time.Minute, true},
		{"90", 1500 * time.Millisecond, time.Second, true}, // whole seconds below the limit
		{"-1", unlimited, 0, false},
		{"-5", time.Minute, 0, false},
		{"1.5", unlimited, 0, false},
		{"tomorrow", unlimited, 0, false},
		{"999999999999", unlimited, maxSeconds, true},
		{"999999999999", 24 * time.Hour, 24 * time.Hour, true},
		{"99999999999999999999", unlimited, 0, false}, // not an int64, not a date
		{now.Add(time.Minute).Format(http.TimeFormat), unlimited, time.Minute, true},
		{"Fri, 02 Jan 2026 03:05:05 GMT", unlimited, time.Minute, true},
		{"Friday, 02-Jan-26 03:05:05 GMT", unlimited, time.Minute, true}, // RFC 850
		{"Fri Jan  2 03:05:05 2026", unlimited, time.Minute, true},       // asctime
		{"Fri, 02 Jan 2026 04:04:05 GMT", 10 * time.Second, 10 * time.Second, true},
		{"Thu, 01 Jan 2026 00:00:00 GMT", unlimited, 0, true}, // past: no wait
		{"Fri, 02 Jan 2026 03:04:05 GMT", unlimited, 0, true},
	} {
		got, ok := httpretry.After(tc.v, now, tc.limit)
		if got != tc.want || ok != tc.ok {
			t.Errorf("After(%q, limit %s) = %s, %t; want %s, %t", tc.v, tc.limit, got, ok, tc.want, tc.ok)
		}
	}
}
