package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// failThree posts three deliveries (a job error, a live message, another job's error), marks
// the first two failed for good and the third failed once (still pending), and returns their
// inbox ids in that order.
func failThree(t *testing.T, h *harness) []int64 {
	t.Helper()
	h.ack(h.post(testRouteToken, errorBody(t, jobID), nil))
	h.ack(h.post(testRouteToken, liveBody(t, sessionID, transcript("u1", true, "hi")), nil))
	h.ack(h.post(testRouteToken, errorBody(t, "job-other"), nil))
	rows := h.inbox()
	if len(rows) != 3 {
		t.Fatalf("%d inbox rows, want 3", len(rows))
	}
	ctx := context.Background()
	for i, r := range rows {
		retry := time.Time{} // failed for good
		if i == 2 {
			retry = testNow.Add(time.Minute)
		}
		if err := h.store.MarkInboxFailed(ctx, r.ID, fmt.Sprintf("apply failed: error %d", i), retry); err != nil {
			t.Fatal(err)
		}
	}
	return []int64{rows[0].ID, rows[1].ID, rows[2].ID}
}

// GET /v1/inbox/failed lists the failed deliveries newest first, with their job, kind, event,
// route, attempts, error and times and no body, filtered by the query and paged with before.
func TestFailedInboxList(t *testing.T) {
	h := newHarness(t)
	ids := failThree(t, h)
	r := h.read("/v1/inbox/failed")
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/inbox/failed: %d %s", r.status, r.body)
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &got); err != nil || len(got) != 2 {
		t.Fatalf("%v: %s", err, r.body)
	}
	first := got[0]
	want := map[string]string{
		"id": strconv.FormatInt(ids[1], 10), "job_id": `"` + sessionID + `"`, "kind": `"live.message"`,
		"event": `"live.transcript"`, "route": `"partner"`, "message_type": `"transcript"`,
		"category": `"final_transcripts"`, "attempts": "1", "last_error": `"apply failed: error 1"`,
		"received_at": `"2026-11-20T12:00:00.000Z"`,
	}
	for k, v := range want {
		if string(first[k]) != v {
			t.Errorf("%s = %s, want %s", k, first[k], v)
		}
	}
	var failedAt api.Time
	if err := json.Unmarshal(first["failed_at"], &failedAt); err != nil || failedAt.IsZero() {
		t.Errorf("failed_at = %s (%v), want a time", first["failed_at"], err)
	}
	for _, k := range []string{"body", "headers", "payload"} {
		if _, ok := first[k]; ok {
			t.Errorf("a failed delivery shows its %s", k)
		}
	}
	if string(got[1]["id"]) != strconv.FormatInt(ids[0], 10) || string(got[1]["kind"]) != `"job.error"` {
		t.Errorf("second: %s %s", got[1]["id"], got[1]["kind"])
	}

	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"?job_id=" + jobID, []int64{ids[0]}},
		{"?kind=live.message", []int64{ids[1]}},
		{"?kind=job.error&error=error+0", []int64{ids[0]}},
		{"?error=error+2", nil}, // pending, not failed
		{"?limit=1", []int64{ids[1]}},
		{"?limit=1&before=" + strconv.FormatInt(ids[1], 10), []int64{ids[0]}},
		{"?since=2026-11-20T12:00:00Z&until=2026-11-20T12:00:01Z", []int64{ids[1], ids[0]}},
		{"?since=2026-11-20T12:00:01Z", nil},
		{"?ids=" + strconv.FormatInt(ids[0], 10) + "," + strconv.FormatInt(ids[2], 10), []int64{ids[0]}},
	} {
		r := h.read("/v1/inbox/failed" + tc.query)
		var page []FailedView
		if err := json.Unmarshal(r.body, &page); r.status != http.StatusOK || err != nil {
			t.Errorf("%s: %d %s", tc.query, r.status, r.body)
			continue
		}
		var listed []int64
		for _, v := range page {
			listed = append(listed, v.ID)
		}
		if !slices.Equal(listed, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, listed, tc.want)
		}
	}
}

// Bad query parameters get 400 with the field and the rule, never the value given.
func TestFailedInboxQueryErrors(t *testing.T) {
	h := newHarness(t)
	for q, want := range map[string]string{
		"?limit=0":                           `{"error":"limit must be at least 1","status":400}`,
		"?limit=1001":                        `{"error":"limit must be at most 1000","status":400}`,
		"?before=0":                          `{"error":"before must be at least 1","status":400}`,
		"?before=%3Cb%3E":                    `{"error":"before must be an integer","status":400}`,
		"?since=%3Cscript%3E":                `{"error":"since: must be an ISO 8601 date-time","status":400}`,
		"?until=yesterday":                   `{"error":"until: must be an ISO 8601 date-time","status":400}`,
		"?kind=%3Cscript%3E":                 `{"error":"kind: must be one of job.success, job.error, live.message, account.webhook","status":400}`,
		"?ids=1,%3Cscript%3E":                `{"error":"ids: must be positive integers separated by commas","status":400}`,
		"?ids=0":                             `{"error":"ids: must be positive integers separated by commas","status":400}`,
		"?all=yes":                           `{"error":"all: must be true or false","status":400}`,
		"?error=" + strings.Repeat("x", 513): `{"error":"error: at most 512 bytes","status":400}`,
		"?since=2026-11-20T12:00:00Z&until=2026-11-20T11:00:00Z": `{"error":"until: must be after since","status":400}`,
	} {
		wantAnswer(t, h.read("/v1/inbox/failed"+q), http.StatusBadRequest, want)
	}
	// Without the read token nothing is listed nor replayed, and the body is never read.
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/inbox/failed"}, {http.MethodPost, "/v1/inbox/1/replay"}, {http.MethodPost, "/v1/inbox/replay?all=true"},
	} {
		if r := h.do(c.method, c.path, []byte(`{"all":true}`), nil); r.status != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d %s", c.method, c.path, r.status, r.body)
		}
	}
}

func (h *harness) postRead(path string, body []byte) response {
	h.t.Helper()
	return h.do(http.MethodPost, path, body, map[string]string{"Authorization": "Bearer " + testReadToken, "Content-Type": "application/json"})
}

// POST /v1/inbox/:id/replay moves one failed delivery back to pending (attempts reset, due
// now on the receiver's clock) and tells the notifier; an id that is not failed is 404.
func TestReplayFailedByID(t *testing.T) {
	h := newHarness(t)
	ids := failThree(t, h)
	before := len(h.notified.list())
	path := "/v1/inbox/" + strconv.FormatInt(ids[0], 10) + "/replay"
	wantAnswer(t, h.postRead(path, nil), http.StatusAccepted, fmt.Sprintf(`{"id":%d,"status":"queued"}`, ids[0]))
	row, err := h.store.InboxRow(context.Background(), ids[0])
	if err != nil || row.Status != store.InboxPending || row.Attempts != 0 || !row.NextAttempt.Equal(testNow) || !row.FailedAt.IsZero() {
		t.Errorf("replayed row: %v, %s, %d attempts, due %v, failed at %v; want pending, 0, %v, none",
			err, row.Status, row.Attempts, row.NextAttempt, row.FailedAt, testNow)
	}
	if n := h.notified.list(); len(n) != before+1 || n[len(n)-1].id != ids[0] || n[len(n)-1].partition != jobID {
		t.Errorf("notified %+v, want row %d of %s", n, ids[0], jobID)
	}
	for id, want := range map[string]string{
		strconv.FormatInt(ids[0], 10): fmt.Sprintf(`{"error":"failed delivery %d not found","status":404}`, ids[0]), // replayed already
		strconv.FormatInt(ids[2], 10): fmt.Sprintf(`{"error":"failed delivery %d not found","status":404}`, ids[2]), // pending
		"424242":                      `{"error":"failed delivery 424242 not found","status":404}`,
		"0":                           `{"error":"failed delivery id must be a positive integer","status":400}`,
		"..%2F1":                      `{"error":"failed delivery id must be a positive integer","status":400}`,
		"99999999999999999999":        `{"error":"failed delivery id must be a positive integer","status":400}`,
	} {
		r := h.postRead("/v1/inbox/"+id+"/replay", nil)
		wantAnswer(t, r, r.status, want)
		if r.status != http.StatusNotFound && r.status != http.StatusBadRequest {
			t.Errorf("replay of %s: %d", id, r.status)
		}
	}
}

// POST /v1/inbox/replay takes a filter in the body or the query, refuses an empty one unless
// all is true, and replays what it selects.
func TestReplayFailedByFilter(t *testing.T) {
	h := newHarness(t)
	ids := failThree(t, h)
	for _, c := range []struct {
		name, query string
		body        string
		status      int
		want        string
	}{
		{"empty", "", "", 400, `{"error":"filter: give ids, job_id, kind, since, until or error; all=true replays every failed delivery","status":400}`},
		{"empty object", "", `{}`, 400, `{"error":"filter: give ids, job_id, kind, since, until or error; all=true replays every failed delivery","status":400}`},
		{"all false", "?all=false", "", 400, `{"error":"filter: give ids, job_id, kind, since, until or error; all=true replays every failed delivery","status":400}`},
		{"unknown member", "", `{"sink":"<script>"}`, 400, `{"error":"body: must be one JSON object with only ids (numbers), job_id, kind, since, until, error (strings) and all (a boolean)","status":400}`},
		{"not an object", "", `[1]`, 400, `{"error":"body: must be one JSON object with only ids (numbers), job_id, kind, since, until, error (strings) and all (a boolean)","status":400}`},
		{"both", "?kind=job.error", `{"kind":"job.error"}`, 400, `{"error":"filter: give it in the body or in the query, not both","status":400}`},
		{"bad kind in the body", "", `{"kind":"job.other"}`, 400, `{"error":"kind: must be one of job.success, job.error, live.message, account.webhook","status":400}`},
		{"nothing matches", "", `{"job_id":"no-such-job"}`, 202, `{"ids":[],"replayed":0,"status":"queued"}`},
		{"by kind in the body", "", `{"kind":"live.message"}`, 202, fmt.Sprintf(`{"ids":[%d],"replayed":1,"status":"queued"}`, ids[1])},
		{"the rest, in the query", "?all=true", "", 202, fmt.Sprintf(`{"ids":[%d],"replayed":1,"status":"queued"}`, ids[0])},
		{"again", "", `{"all":true}`, 202, `{"ids":[],"replayed":0,"status":"queued"}`},
	} {
		r := h.postRead("/v1/inbox/replay"+c.query, []byte(c.body))
		if r.status != c.status || string(r.body) != c.want {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.want)
		}
		if strings.Contains(string(r.body), "<script>") || strings.Contains(string(r.body), "job.other") {
			t.Errorf("%s: the answer echoes the request: %s", c.name, r.body)
		}
	}
	if n, err := h.store.CountFailedInbox(context.Background()); err != nil || n != 0 {
		t.Errorf("failed rows left: %d, %v", n, err)
	}
}

// scribehook_inbox_failed counts the failed rows beside the backlog, refreshed at most once a
// second.
func TestFailedInboxGauge(t *testing.T) {
	h := newHarness(t)
	if text := h.metricsText(); !strings.Contains(text, "\nscribehook_inbox_failed 0\n") {
		t.Errorf("metrics lack scribehook_inbox_failed 0")
	}
	failThree(t, h)
	time.Sleep(1100 * time.Millisecond)
	text := h.metricsText()
	for _, line := range []string{"scribehook_inbox_failed 2", "scribehook_inbox_backlog 1"} {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
}

// The dashboard replays with its session cookie, from its own origin only, as its other posts.
func TestReplayFailedWithTheDashboardCookie(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Now = nil })) // serve's clock
	ids := failThree(t, h)
	cookie := h.signIn()
	path := "/v1/inbox/" + strconv.FormatInt(ids[1], 10) + "/replay"
	r := h.do(http.MethodPost, path, nil, withCookie(cookie, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}))
	if r.status != http.StatusForbidden || !strings.Contains(r.json(t)["error"].(string), "cross-origin") {
		t.Errorf("cross-origin replay: %d %s", r.status, r.body)
	}
	if n, _ := h.store.CountFailedInbox(context.Background()); n != 2 {
		t.Errorf("%d failed rows after a refused replay, want 2", n)
	}
	r = h.do(http.MethodPost, path, nil, withCookie(cookie, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": h.base}))
	wantAnswer(t, r, http.StatusAccepted, fmt.Sprintf(`{"id":%d,"status":"queued"}`, ids[1]))
	if row, err := h.store.InboxRow(context.Background(), ids[1]); err != nil || row.Status != store.InboxPending || row.NextAttempt.IsZero() {
		t.Errorf("replayed row: %v, %s, due %v", err, row.Status, row.NextAttempt)
	}
}
