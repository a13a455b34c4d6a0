package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/store"
)

func TestHealthAndReadiness(t *testing.T) {
	ready := true
	var notes []string
	h := newHarness(t, withConfig(func(c *Config) {
		c.Ready = func() bool { return ready }
		c.Notes = func() []string { return notes }
	}))
	if r := h.do(http.MethodGet, "/healthz", nil, nil); r.status != 200 || r.json(t)["status"] != "ok" {
		t.Errorf("healthz %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodGet, "/readyz", nil, nil); r.status != 200 {
		t.Errorf("readyz %d %s", r.status, r.body)
	}
	// A note (the broker away) is shown, and the replica stays ready: it still takes deliveries.
	notes = []string{"bus: the broker does not answer"}
	if r := h.do(http.MethodGet, "/readyz", nil, nil); r.status != 200 || string(r.body) != `{"notes":["bus: the broker does not answer"],"status":"ready"}` {
		t.Errorf("readyz with a note: %d %s", r.status, r.body)
	}
	notes = nil
	ready = false
	r := h.do(http.MethodGet, "/readyz", nil, nil)
	if r.status != http.StatusServiceUnavailable || r.json(t)["error"] != "not ready: router: not running" {
		t.Errorf("readyz without router: %d %s", r.status, r.body)
	}

	down := newHarness(t, withConfig(func(c *Config) { c.Store = newClosedStore(t) }))
	r = down.do(http.MethodGet, "/readyz", nil, nil)
	if msg, _ := r.json(t)["error"].(string); r.status != http.StatusServiceUnavailable || !strings.HasPrefix(msg, "not ready: store: ") {
		t.Errorf("readyz with a closed store: %d %s", r.status, r.body)
	}
	if r := down.do(http.MethodGet, "/nowhere", nil, nil); r.status != 404 || r.json(t)["status"] != float64(404) {
		t.Errorf("unknown path: %d %s", r.status, r.body)
	}
}

func TestReadAPIAuth(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name, auth, msg string
	}{
		{"missing", "", "missing bearer token"},
		{"other scheme", "Basic " + testReadToken, "missing bearer token"},
		{"wrong token", "Bearer nope", "invalid bearer token"},
		{"prefix of the token", "Bearer " + testReadToken[:5], "invalid bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/v1/jobs", "/v1/jobs/x", "/v1/live/x/messages", "/v1/live/x/events"} {
				r := h.do(http.MethodGet, path, nil, map[string]string{"Authorization": tc.auth})
				if r.status != http.StatusUnauthorized || r.json(t)["error"] != tc.msg {
					t.Errorf("%s: %d %s", path, r.status, r.body)
				}
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: no WWW-Authenticate", path)
				}
			}
		})
	}
	if r := h.read("/v1/jobs"); r.status != 200 {
		t.Errorf("right token: %d %s", r.status, r.body)
	}

	off := newHarness(t, withConfig(func(c *Config) { c.ReadToken = "" }))
	r := off.read("/v1/jobs")
	if r.status != http.StatusServiceUnavailable || r.json(t)["error"] != "read API disabled: set the read token" {
		t.Errorf("disabled: %d %s", r.status, r.body)
	}
	// The callback endpoint does not depend on the read token.
	off.ack(off.post(testRouteToken, successBody(t, jobID), nil))
}

func putJobs(t *testing.T, h *harness) {
	t.Helper()
	base := time.Date(2026, 11, 19, 10, 0, 0, 0, time.UTC)
	jobs := []struct {
		id     string
		status api.JobStatus
		kind   api.JobKind
		meta   string
	}{
		{"job-1", api.StatusDone, api.KindPreRecorded, `{"team":"a"}`},
		{"job-2", api.StatusError, api.KindPreRecorded, `{"team":"b"}`},
		{"job-3", api.StatusDone, api.KindLive, `{"team":"a","env":"prod"}`},
		{"job-4", api.StatusDone, api.KindPreRecorded, `{"team":"a"}`},
		{"job-5", api.StatusQueued, api.KindPreRecorded, ``},
	}
	for i, j := range jobs {
		rec := store.JobRecord{
			Job: api.Job{
				ID: j.id, RequestID: "G-0000000" + string(rune('1'+i)), Version: api.RecordVersion, Status: j.status,
				CreatedAt: api.NewTime(base.Add(time.Duration(i) * time.Minute)), Kind: j.kind,
				RequestParams: json.RawMessage(`{"audio_url":"https://example.com/a.wav"}`),
			},
			Local: store.Local{Source: "submit", UpdatedAt: base},
		}
		if j.meta != "" {
			rec.Job.CustomMetadata = json.RawMessage(j.meta)
		}
		if err := h.store.PutJob(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListJobs(t *testing.T) {
	h := newHarness(t)
	putJobs(t, h)
	// No public URL configured: the links are relative (paging_test.go has the absolute ones).
	link := func(v url.Values) string { return "/v1/jobs?" + v.Encode() }
	filter := url.Values{"status": {"done"}, "custom_metadata": {`{"team":"a"}`}}
	with := func(offset, limit string) url.Values {
		v := url.Values{"offset": {offset}, "limit": {limit}}
		for k, vs := range filter {
			v[k] = vs
		}
		return v
	}

	var page api.Page
	r := h.read("/v1/jobs?status=done&limit=2&custom_metadata=" + url.QueryEscape(`{"team":"a"}`))
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if ids := jobIDs(page); ids != "job-4,job-3" {
		t.Errorf("page 1: %s", ids)
	}
	if page.First != link(with("0", "2")) || page.Current != link(with("0", "2")) || page.Next == nil || *page.Next != link(with("2", "2")) {
		t.Errorf("page 1 links: first %s current %s next %v", page.First, page.Current, page.Next)
	}
	next, _ := url.Parse(*page.Next)
	r = h.read(next.RequestURI())
	page = api.Page{}
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	if ids := jobIDs(page); ids != "job-1" || page.Next != nil || page.Current != link(with("2", "2")) {
		t.Errorf("page 2: %s next %v current %s", ids, page.Next, page.Current)
	}

	for query, want := range map[string]string{
		"":                                 "job-5,job-4,job-3,job-2,job-1",
		"?kind=live":                       "job-3",
		"?status=error,queued":             "job-5,job-2",
		"?date=2026-11-19&offset=3":        "job-2,job-1",
		"?after_date=2026-11-19T10:02:30Z": "job-5,job-4",
	} {
		page = api.Page{}
		r := h.read("/v1/jobs" + query)
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatalf("%s: %s", query, r.body)
		}
		if ids := jobIDs(page); ids != want {
			t.Errorf("%s: %s, want %s", query, ids, want)
		}
	}

	// Every violation is listed, each naming its field.
	r = h.read("/v1/jobs?limit=0&status=bogus&date=yesterday")
	if r.status != 400 {
		t.Fatalf("bad query: %d %s", r.status, r.body)
	}
	var e apiError
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Status != 400 || len(e.ValidationErrors) != 3 {
		t.Fatalf("bad query: %s", r.body)
	}
	for i, field := range []string{"limit", "date", "status"} {
		if !strings.HasPrefix(e.ValidationErrors[i], field) {
			t.Errorf("violation %d %q, want about %s", i, e.ValidationErrors[i], field)
		}
	}
}

func jobIDs(p api.Page) string {
	ids := make([]string, len(p.Items))
	for i, j := range p.Items {
		ids[i] = j.ID
	}
	return strings.Join(ids, ",")
}

func TestGetJob(t *testing.T) {
	h := newHarness(t)
	body := successBody(t, jobID)
	a := h.ack(h.post(testRouteToken, body, nil))
	received := testNow.Add(-time.Minute)
	// What the persist and subtitle handlers do with the delivery.
	err := h.store.Apply(context.Background(), a.ID, func(ctx context.Context, tx store.Tx) error {
		var cb api.JobCallback
		if err := json.Unmarshal(body, &cb); err != nil {
			return err
		}
		rec := store.JobRecord{
			Job: api.Job{
				ID: jobID, RequestID: "G-0f4e7a55", Version: 2, Status: api.StatusDone,
				CreatedAt: api.NewTime(received.Add(-time.Hour)), Kind: api.KindPreRecorded,
				CustomMetadata: cb.CustomMetadata, Result: api.RawResult(cb.Payload),
				Extra: api.Extra{"future_field": json.RawMessage(`{"x":1}`)},
			},
			Local: store.Local{Source: "callback", ReceivedAt: received, UpdatedAt: testNow, Deliveries: 1},
		}
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		return tx.PutArtifact(ctx, store.Artifact{
			JobID: jobID, Name: "subtitles.en.srt", Format: "srt", Language: "en",
			Path: "/out/" + jobID + "/subtitles.en.srt", Size: 1234, CreatedAt: testNow,
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	r := h.read("/v1/jobs/" + jobID)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if !bytes.HasPrefix(r.body, []byte(`{"id":"`+jobID+`"`)) {
		t.Errorf("record does not start like the service's: %.60s", r.body)
	}
	// The service's shape decodes as a job, unknown members kept.
	var job api.Job
	if err := json.Unmarshal(r.body, &job); err != nil {
		t.Fatal(err)
	}
	if job.ID != jobID || job.Status != api.StatusDone || len(job.Result) == 0 || apitest.MustResult(&job).Transcription == nil || string(job.Extra["future_field"]) != `{"x":1}` {
		t.Errorf("job %+v", job)
	}
	var withLocal struct {
		Local map[string]any `json:"local"`
	}
	if err := json.Unmarshal(r.body, &withLocal); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"source": "callback", "received_at": "2026-11-20T11:59:00Z", "updated_at": "2026-11-20T12:00:00Z",
		"deliveries": float64(1),
		"artifacts": []any{map[string]any{
			"name": "subtitles.en.srt", "format": "srt", "language": "en", "path": "/out/" + jobID + "/subtitles.en.srt", "size": float64(1234),
		}},
	}
	if got, _ := json.Marshal(withLocal.Local); string(got) != string(testjson.Marshal(t, want)) {
		t.Errorf("local\n got %s\nwant %s", got, testjson.Marshal(t, want))
	}

	r = h.read("/v1/jobs/nope")
	if r.status != 404 || r.json(t)["error"] != `job not found` {
		t.Errorf("unknown job: %d %s", r.status, r.body)
	}
}

// storeLive posts live messages and applies them, returning their bodies in order.
func storeLive(t *testing.T, h *harness, session string, msgs ...map[string]any) [][]byte {
	t.Helper()
	var bodies [][]byte
	for _, m := range msgs {
		b := liveBody(t, session, m)
		a := h.ack(h.post(testRouteToken, b, nil))
		h.applyLive(a.ID)
		bodies = append(bodies, b)
	}
	return bodies
}

func TestLiveMessages(t *testing.T) {
	h := newHarness(t)
	bodies := storeLive(t, h, sessionID,
		map[string]any{"type": "start_session", "created_at": "2026-11-20T11:58:00.000Z"},
		transcript("u1", false, "hel"),
		transcript("u1", true, "hello"),
	)
	storeLive(t, h, "other-session", transcript("z", true, "elsewhere"))

	r := h.read("/v1/live/" + sessionID + "/messages")
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	wantMeta := []string{
		`1 "start_session" "lifecycle_events" "2026-11-20T11:58:00.000Z"`,
		`2 "transcript" "partial_transcripts" "2026-11-20T11:59:00.000Z"`,
		`3 "transcript" "final_transcripts" "2026-11-20T11:59:00.000Z"`,
	}
	if len(got) != len(wantMeta) {
		t.Fatalf("%d messages: %s", len(got), r.body)
	}
	for i, m := range got {
		meta := string(m["seq"]) + " " + string(m["type"]) + " " + string(m["category"]) + " " + string(m["created_at"])
		if meta != wantMeta[i] {
			t.Errorf("message %d: %s, want %s", i, meta, wantMeta[i])
		}
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		_ = json.Unmarshal(bodies[i], &env)
		if !jsonSame(t, m["payload"], env.Payload) {
			t.Errorf("message %d payload %s, want %s", i, m["payload"], env.Payload)
		}
	}

	r = h.read("/v1/live/" + sessionID + "/messages?after=1&limit=1")
	got = nil
	_ = json.Unmarshal(r.body, &got)
	if len(got) != 1 || string(got[0]["seq"]) != "2" {
		t.Errorf("after=1&limit=1: %s", r.body)
	}
	if r := h.read("/v1/live/unknown/messages"); r.status != 200 || string(r.body) != "[]" {
		t.Errorf("unknown session: %d %s", r.status, r.body)
	}
	for _, q := range []string{"?after=x", "?limit=0", "?limit=1001", "?after=-1"} {
		if r := h.read("/v1/live/" + sessionID + "/messages" + q); r.status != 400 || r.json(t)["status"] != float64(400) {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
}

func jsonSame(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return string(testjson.Marshal(t, x)) == string(testjson.Marshal(t, y))
}

func TestPanicsAnswerJSON(t *testing.T) {
	st := newClosedStore(t)
	r, err := New(Config{Store: st, Ingester: &switchIngester{}})
	if err != nil {
		t.Fatal(err)
	}
	r.App().Get("/boom", func(*fiber.Ctx) error { panic("kaboom") })
	resp, err := r.App().Test(httptest.NewRequest(http.MethodGet, "/boom", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || string(b) != `{"error":"internal error","status":500}` {
		t.Errorf("panic answered %d %s", resp.StatusCode, b)
	}
}

// TestDeadLettersQuery: the dead-letter list reads its limit as the other lists' integer
// parameters are read, and refuses a bad one or a bad since with 400 and the reason.
func TestDeadLettersQuery(t *testing.T) {
	h := newHarness(t)
	if r := h.read("/v1/deadletters?limit=1000&sink=hook"); r.status != 200 || string(r.body) != "[]" {
		t.Errorf("no dead letters: %d %s", r.status, r.body)
	}
	for q, want := range map[string]string{
		"?limit=0":     `{"error":"limit must be at least 1","status":400}`,
		"?limit=1001":  `{"error":"limit must be at most 1000","status":400}`,
		"?limit=ten":   `{"error":"limit must be an integer","status":400}`,
		"?since=today": `{"error":"since: must be an ISO 8601 date-time","status":400}`,
	} {
		wantAnswer(t, h.read("/v1/deadletters"+q), http.StatusBadRequest, want)
	}
}
