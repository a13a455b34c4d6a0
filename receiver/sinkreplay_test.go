package receiver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// TestSinkReplayRoute: POST /v1/sinks/:name/replay passes the window (body or query) to
// ReplaySink, refuses a request without credentials before reading its body, a cross-origin
// cookie, an unknown sink (listing the sinks) and an invalid window (naming each field and its
// rule, never the value), and answers 501 without ReplaySink.
func TestSinkReplayRoute(t *testing.T) {
	var got []SinkReplayWindow
	h := newHarness(t, withConfig(func(c *Config) {
		c.Sinks = func() []sinks.SinkStats { return []sinks.SinkStats{{Name: "hook"}, {Name: "files"}} }
		c.ReplaySink = func(_ context.Context, sink string, w SinkReplayWindow) (store.SinkReplayResult, error) {
			got = append(got, w)
			return store.SinkReplayResult{Requeued: []string{"e1"}, Backfilled: []string{"e2", "e3"}, Skipped: 4}, nil
		}
	}))
	bearer := map[string]string{"Authorization": "Bearer " + testReadToken, "Content-Type": "application/json"}
	r := h.do(http.MethodPost, "/v1/sinks/hook/replay", []byte(`{"since":"2026-11-29T06:00:00Z","until":"2026-11-29T07:00:00Z","type":["job.*","live.transcript"]}`), bearer)
	if r.status != http.StatusAccepted || string(r.body) != `{"sink":"hook","dry_run":false,"requeued":["e1"],"backfilled":["e2","e3"],"already_queued":[],"skipped":4}` {
		t.Errorf("replay: %d %s", r.status, r.body)
	}
	since := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	if len(got) != 1 || !got[0].Since.Equal(since) || !got[0].Until.Equal(since.Add(time.Hour)) ||
		!slices.Equal(got[0].Types, []string{"job.*", "live.transcript"}) || got[0].DryRun {
		t.Fatalf("ReplaySink got %+v", got)
	}
	r = h.do(http.MethodPost, "/v1/sinks/files/replay?since=2026-11-29T06:00:00Z&type=job.failed&type=job.succeeded&dry_run=true", nil, bearer)
	if r.status != http.StatusOK || len(got) != 2 || !slices.Equal(got[1].Types, []string{"job.failed", "job.succeeded"}) || !got[1].DryRun || !got[1].Until.IsZero() {
		t.Errorf("replay in the query: %d %s, %+v", r.status, r.body, got)
	}
	cookie := h.signIn()
	if r := h.do(http.MethodPost, "/v1/sinks/hook/replay?since=2026-11-29T06:00:00Z", nil,
		withCookie(cookie, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"})); r.status != http.StatusForbidden {
		t.Errorf("cross-origin: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodPost, "/v1/sinks/hook/replay?since=2026-11-29T06:00:00Z", nil,
		withCookie(cookie, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": h.base})); r.status != http.StatusAccepted {
		t.Errorf("same-origin cookie: %d %s", r.status, r.body)
	}
	// No credentials: refused on the headers, whatever the body.
	if r := h.do(http.MethodPost, "/v1/sinks/hook/replay", []byte(strings.Repeat("x", 1<<20)), map[string]string{"Content-Type": "application/json"}); r.status != http.StatusUnauthorized {
		t.Errorf("no credentials: %d %s", r.status, r.body)
	}
	for name, c := range map[string]struct {
		path, body string
		status     int
		want       []string
	}{
		"unknown sink": {"/v1/sinks/secret-name/replay", `{"since":"2026-11-29T06:00:00Z"}`, http.StatusNotFound, []string{"the sinks are: hook, files"}},
		"no since":     {"/v1/sinks/hook/replay", `{"type":["nothing.here"]}`, http.StatusBadRequest, []string{"since: required", "type[0]: must match an event type"}},
		"bad times": {"/v1/sinks/hook/replay", `{"since":"tuesday-secret","until":"2020-01-01T00:00:00Z"}`, http.StatusBadRequest,
			[]string{"since: must be an ISO 8601 date-time"}},
		"until before since": {"/v1/sinks/hook/replay", `{"since":"2026-11-29T06:00:00Z","until":"2026-11-29T05:00:00Z"}`, http.StatusBadRequest, []string{"until: must be after since"}},
		"unknown field":      {"/v1/sinks/hook/replay", `{"since":"2026-11-29T06:00:00Z","secret-field":1}`, http.StatusBadRequest, []string{"body: must be one JSON object"}},
	} {
		r := h.do(http.MethodPost, c.path, []byte(c.body), bearer)
		if r.status != c.status {
			t.Errorf("%s: %d %s, want %d", name, r.status, r.body, c.status)
		}
		for _, w := range c.want {
			if !strings.Contains(string(r.body), w) {
				t.Errorf("%s: %s, want %q in it", name, r.body, w)
			}
		}
		if strings.Contains(string(r.body), "secret") || strings.Contains(string(r.body), "nothing.here") {
			t.Errorf("%s: the answer echoes the request: %s", name, r.body)
		}
	}
	if len(got) != 3 {
		t.Errorf("ReplaySink called %d times, want 3", len(got))
	}
	h2 := newHarness(t, withConfig(func(c *Config) { c.Sinks = func() []sinks.SinkStats { return []sinks.SinkStats{{Name: "hook"}} } }))
	if r := h2.do(http.MethodPost, "/v1/sinks/hook/replay?since=2026-11-29T06:00:00Z", nil, bearer); r.status != http.StatusNotImplemented {
		t.Errorf("without ReplaySink: %d %s", r.status, r.body)
	}
}

// TestSinkDeliveriesRoute: GET /v1/sinks/:name/deliveries passes status, since, limit and
// before to SinkHistory and shows each delivery without a body.
func TestSinkDeliveriesRoute(t *testing.T) {
	var got store.SinkHistoryQuery
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	h := newHarness(t, withConfig(func(c *Config) {
		c.Sinks = func() []sinks.SinkStats { return []sinks.SinkStats{{Name: "hook"}} }
		c.SinkHistory = func(_ context.Context, q store.SinkHistoryQuery) ([]store.SinkHistoryItem, error) {
			got = q
			return []store.SinkHistoryItem{{ID: 7, Sink: "hook", EventID: "e7", EventType: "job.failed", JobID: "j", Status: "dead",
				Attempts: 8, LastError: "503", CreatedAt: at, FailedAt: at.Add(time.Hour)}}, nil
		}
	}))
	bearer := map[string]string{"Authorization": "Bearer " + testReadToken}
	r := h.do(http.MethodGet, "/v1/sinks/hook/deliveries?status=dead&since=2026-11-29T06:00:00Z&limit=10&before=99", nil, bearer)
	want := `[{"id":7,"event_id":"e7","event_type":"job.failed","job_id":"j","status":"dead","attempts":8,"last_error":"503","created_at":"2026-11-29T06:00:00.000Z","delivered_at":null,"failed_at":"2026-11-29T07:00:00.000Z"}]`
	if r.status != http.StatusOK || string(r.body) != want {
		t.Errorf("deliveries: %d %s\nwant %s", r.status, r.body, want)
	}
	if got.Sink != "hook" || got.Status != "dead" || !got.Since.Equal(at) || got.Limit != 10 || got.Before != 99 {
		t.Errorf("SinkHistory got %+v", got)
	}
	for q, msg := range map[string]string{
		"status=lost-secret": "status: must be queued, delivered or dead",
		"limit=0":            "limit must be at least 1",
		"before=x":           "before must be an integer",
		"since=soon":         "since: must be an ISO 8601 date-time",
	} {
		r := h.do(http.MethodGet, "/v1/sinks/hook/deliveries?"+q, nil, bearer)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), msg) || strings.Contains(string(r.body), "secret") {
			t.Errorf("?%s: %d %s, want 400 %q", q, r.status, r.body, msg)
		}
	}
	if r := h.do(http.MethodGet, "/v1/sinks/hook/deliveries", nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("no credentials: %d", r.status)
	}
}
