package receiver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/sinks"
)

// TestEnableSink: POST /v1/sinks/:name/enable calls EnableSink for a known sink (bearer token
// or the dashboard's cookie, same-origin), 404 for an unknown one, 401 without credentials,
// 403 cross-origin, 503 when enabling fails.
func TestEnableSink(t *testing.T) {
	var enabled []string
	fail := false
	h := newHarness(t, withConfig(func(c *Config) {
		c.Sinks = func() []sinks.SinkStats { return []sinks.SinkStats{{Name: "captions hook", Disabled: true}} }
		c.EnableSink = func(_ context.Context, name string) error {
			if fail {
				return errors.New("store down")
			}
			enabled = append(enabled, name)
			return nil
		}
	}))
	bearer := map[string]string{"Authorization": "Bearer " + testReadToken}
	const path = "/v1/sinks/captions%20hook/enable"
	if r := h.do(http.MethodPost, path, nil, bearer); r.status != http.StatusOK || r.json(t)["status"] != "enabled" || r.json(t)["name"] != "captions hook" {
		t.Errorf("enable with the token: %d %s", r.status, r.body)
	}
	cookie := h.signIn()
	if r := h.do(http.MethodPost, path, nil, withCookie(cookie, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": h.base})); r.status != http.StatusOK {
		t.Errorf("enable with the cookie: %d %s", r.status, r.body)
	}
	if len(enabled) != 2 || enabled[0] != "captions hook" {
		t.Errorf("EnableSink calls %q, want two of the decoded name", enabled)
	}
	for name, c := range map[string]struct {
		method, path string
		header       map[string]string
		status       int
	}{
		"unknown sink":    {http.MethodPost, "/v1/sinks/other/enable", bearer, http.StatusNotFound},
		"no credentials":  {http.MethodPost, path, nil, http.StatusUnauthorized},
		"cross-origin":    {http.MethodPost, path, withCookie(cookie, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}), http.StatusForbidden},
		"a GET, not POST": {http.MethodGet, path, bearer, http.StatusMethodNotAllowed},
	} {
		if r := h.do(c.method, c.path, nil, c.header); r.status != c.status {
			t.Errorf("%s: %d %s, want %d", name, r.status, r.body, c.status)
		}
	}
	if len(enabled) != 2 {
		t.Errorf("a refused request enabled the sink: %q", enabled)
	}
	fail = true
	if r := h.do(http.MethodPost, path, nil, bearer); r.status != http.StatusServiceUnavailable {
		t.Errorf("enable while the store fails: %d %s", r.status, r.body)
	}
}

// TestSinkListJSON pins GET /v1/sinks's bytes: every field of a sink's state, named as the
// read API has always named them, an open breaker's time and a disabled sink's reason shown,
// and left out when zero.
func TestSinkListJSON(t *testing.T) {
	until := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	h := newHarness(t, withConfig(func(c *Config) {
		c.Sinks = func() []sinks.SinkStats {
			return []sinks.SinkStats{
				{Name: "hook", Depth: 3, InFlight: 1, ConsecutiveFailures: 5, Breaker: "open", BreakerOpenUntil: until,
					Disabled: true, DisabledReason: "410 Gone", Delivered: 7, Failed: 6, Dead: 2},
				{Name: "files", Depth: -1, Breaker: "closed"},
			}
		}
	}))
	r := h.do(http.MethodGet, "/v1/sinks", nil, map[string]string{"Authorization": "Bearer " + testReadToken})
	const want = `[{"name":"hook","depth":3,"in_flight":1,"consecutive_failures":5,"breaker":"open","breaker_open_until":"2025-03-04T05:06:07Z","disabled":true,"disabled_reason":"410 Gone","delivered":7,"failed":6,"dead":2},` +
		`{"name":"files","depth":-1,"in_flight":0,"consecutive_failures":0,"breaker":"closed","disabled":false,"delivered":0,"failed":0,"dead":0}]`
	if got := strings.TrimSpace(string(r.body)); r.status != http.StatusOK || got != want {
		t.Errorf("GET /v1/sinks: %d\n got %s\nwant %s", r.status, got, want)
	}
}
