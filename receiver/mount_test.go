package receiver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/store"
)

// setups are the ways a program serves the receiver; the callback suite runs against each.
func setups() []setupKind {
	return []setupKind{setupStandalone, setupFiber, setupFiberStreaming, setupNetHTTP}
}

// mountedLimit is the receiver's body limit in the suite: below Fiber's default BodyLimit
// (4 MiB), so that the receiver's own limit is what refuses, whatever the parent.
const mountedLimit = 64 << 10

// TestCallbacksEverywhere runs the same callbacks against every set-up and expects the same
// answers, byte for byte, and the same rows.
func TestCallbacksEverywhere(t *testing.T) {
	for _, s := range setups() {
		t.Run(string(s), func(t *testing.T) {
			h := newHarness(t, withSetup(s), withConfig(func(c *Config) { c.BodyLimit = mountedLimit }))

			t.Run("stored only after the commit", func(t *testing.T) {
				const id = "11111111-0000-4000-8000-000000000001"
				r := h.post(testRouteToken, errorBody(t, id), nil)
				a := h.ack(r)
				if a.Status != "stored" || a.ID == 0 {
					t.Fatalf("ack %s", r.body)
				}
				if want := fmt.Sprintf(`{"status":"stored","id":%d}`, a.ID); string(r.body) != want {
					t.Errorf("body %s, want %s", r.body, want)
				}
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				row, err := h.store.InboxRow(context.Background(), a.ID)
				if err != nil {
					t.Fatalf("the 200 names row %d, which is not stored: %v", a.ID, err)
				}
				if row.Route != "partner" || row.JobID != id || row.Kind != api.CallbackJobError || row.DedupeKey != "job:"+id+":"+string(api.EventTranscriptionError) {
					t.Errorf("row %+v", row.Delivery)
				}
			})

			t.Run("a duplicate is answered as one", func(t *testing.T) {
				const id = "11111111-0000-4000-8000-000000000002"
				first := h.ack(h.post(testRouteToken, errorBody(t, id), nil))
				r := h.post(testRouteToken, errorBody(t, id), nil)
				if want := fmt.Sprintf(`{"status":"duplicate","id":%d}`, first.ID); r.status != http.StatusOK || string(r.body) != want {
					t.Errorf("second delivery: %d %s, want 200 %s", r.status, r.body, want)
				}
				if n := countRows(h, id); n != 1 {
					t.Errorf("%d rows of job %s, want 1", n, id)
				}
			})

			t.Run("above the receiver's limit: 413", func(t *testing.T) {
				big := bigErrorBody(t, "11111111-0000-4000-8000-000000000003", mountedLimit+1)
				r := h.post(testRouteToken, big, nil)
				wantAnswer(t, r, http.StatusRequestEntityTooLarge, `{"error":"request body exceeds 65536 bytes","status":413}`)
				// Chunked: no length announced, the limit found while reading.
				r = h.doChunked("/v1/callbacks/"+testRouteToken, big)
				wantAnswer(t, r, http.StatusRequestEntityTooLarge, `{"error":"request body exceeds 65536 bytes","status":413}`)
				if n := countRows(h, "11111111-0000-4000-8000-000000000003"); n != 0 {
					t.Errorf("%d rows stored", n)
				}
			})

			t.Run("gzip: decoded, and bounded after decoding", func(t *testing.T) {
				const id = "11111111-0000-4000-8000-000000000004"
				body := errorBody(t, id)
				a := h.ack(h.post(testRouteToken, gzipped(t, body), map[string]string{"Content-Encoding": "gzip"}))
				row, err := h.store.InboxRow(context.Background(), a.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(row.Body, body) || row.JobID != id {
					t.Errorf("stored %q for job %q", row.Body, row.JobID)
				}
				bomb := gzipped(t, bigErrorBody(t, "11111111-0000-4000-8000-000000000005", 4*mountedLimit))
				if len(bomb) > mountedLimit {
					t.Fatalf("the bomb is %d bytes compressed: not a test of the decoded limit", len(bomb))
				}
				r := h.post(testRouteToken, bomb, map[string]string{"Content-Encoding": "gzip"})
				wantAnswer(t, r, http.StatusRequestEntityTooLarge, `{"error":"decoded request body exceeds 65536 bytes","status":413}`)
			})

			t.Run("unknown or revoked token: 401, nothing stored, token not logged", func(t *testing.T) {
				const id = "11111111-0000-4000-8000-000000000006"
				unknown := "unknown-token-" + strings.Repeat("7", 24)
				revoked := h.jobToken(id, api.KindPreRecorded)
				if err := h.store.RevokeToken(context.Background(), store.HashToken(revoked)); err != nil {
					t.Fatal(err)
				}
				h.secrets = append(h.secrets, unknown)
				before := strings.Count(h.logs.String(), "callback rejected")
				wantAnswer(t, h.post(unknown, errorBody(t, id), nil), http.StatusUnauthorized, `{"error":"unknown callback token","status":401}`)
				wantAnswer(t, h.post(revoked, errorBody(t, id), nil), http.StatusUnauthorized, `{"error":"callback token is revoked","status":401}`)
				if n := countRows(h, id); n != 0 {
					t.Errorf("%d rows stored", n)
				}
				logs := h.logs.String()
				if got := strings.Count(logs, "callback rejected") - before; got != 2 {
					t.Errorf("%d rejections logged, want 2:\n%s", got, logs)
				}
				for _, tok := range []string{unknown, revoked} {
					if strings.Contains(logs, tok) {
						t.Errorf("the logs hold a token:\n%s", logs)
					}
				}
			})

			t.Run("Standard Webhooks signed route", func(t *testing.T) {
				body := []byte(`{"event":"transcription.success","payload":{"id":"` + jobID + `"}}`)
				r := h.post(testSignedToken, body, signHeaders("webhook", testKey1, "msg_mount", testNow, body))
				a := h.ack(r)
				row, err := h.store.InboxRow(context.Background(), a.ID)
				if err != nil {
					t.Fatal(err)
				}
				if row.Route != "account" || row.DedupeKey != "webhook:account:msg_mount" {
					t.Errorf("row route %q dedupe %q", row.Route, row.DedupeKey)
				}
				wantAnswer(t, h.post(testSignedToken, body, nil), http.StatusUnauthorized,
					`{"error":"missing signature headers (webhook-id, webhook-timestamp, webhook-signature)","status":401}`)
				wrong := signHeaders("webhook", []byte("not the route's key"), "msg_wrong", testNow, body)
				wantAnswer(t, h.post(testSignedToken, body, wrong), http.StatusUnauthorized, `{"error":"signature mismatch","status":401}`)
				zeros := signHeaders("webhook", testKey1, "msg_zero", testNow, body)
				zeros["webhook-signature"] = "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))
				wantAnswer(t, h.post(testSignedToken, body, zeros), http.StatusUnauthorized, `{"error":"signature mismatch","status":401}`)
				if n := countInbox(h, func(row store.InboxRow) bool { return row.Route == "account" }); n != 1 {
					t.Errorf("%d rows of the signed route, want 1", n)
				}
			})

			t.Run("other paths and methods under the callbacks", func(t *testing.T) {
				r := h.do(http.MethodGet, "/v1/callbacks/"+testRouteToken, nil, nil)
				wantAnswer(t, r, http.StatusMethodNotAllowed, `{"error":"Method Not Allowed","status":405}`)
				r = h.do(http.MethodPost, "/v1/callbacks/"+testRouteToken+"/more", []byte("{}"), nil)
				wantAnswer(t, r, http.StatusNotFound, `{"error":"no such callback route","status":404}`)
			})

			t.Run("other bodies bounded by 1 MiB", func(t *testing.T) {
				form := "token=" + strings.Repeat("x", otherBodyLimit)
				r := h.do(http.MethodPost, "/ui/login", []byte(form), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
				wantAnswer(t, r, http.StatusRequestEntityTooLarge, `{"error":"request body exceeds 1048576 bytes","status":413}`)
			})

			t.Run("read API, health and dashboard under the prefix", func(t *testing.T) {
				if r := h.do(http.MethodGet, "/healthz", nil, nil); r.status != http.StatusOK || string(r.body) != `{"status":"ok"}` {
					t.Errorf("healthz: %d %s", r.status, r.body)
				}
				if r := h.read("/metrics"); !bytes.Contains(r.body, []byte(`scribehook_deliveries_total{kind="job.error",outcome="stored"}`)) {
					t.Errorf("metrics: %d %s", r.status, r.body)
				}
				// Not without the token: the port faces the service.
				if r := h.do(http.MethodGet, "/metrics", nil, nil); r.status != http.StatusUnauthorized || bytes.Contains(r.body, []byte("scribehook_")) {
					t.Errorf("metrics without a token: %d %s", r.status, r.body)
				}
				if r := h.do(http.MethodGet, "/metrics", nil, map[string]string{"Authorization": "Bearer wrong-token"}); r.status != http.StatusUnauthorized {
					t.Errorf("metrics with a wrong token: %d %s", r.status, r.body)
				}
				r := h.read("/v1/jobs?limit=1")
				page := r.json(t)
				first, _ := page["first"].(string)
				if r.status != http.StatusOK || first != h.path("/v1/jobs?limit=1&offset=0") {
					t.Errorf("jobs: %d first %q, want %q: %s", r.status, first, h.path("/v1/jobs?limit=1&offset=0"), r.body)
				}
				wantAnswer(t, h.do(http.MethodGet, "/v1/jobs", nil, nil), http.StatusUnauthorized, `{"error":"missing bearer token","status":401}`)
				resp := h.noRedirect(http.MethodGet, "/ui")
				if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != h.path("/ui/") {
					t.Errorf("/ui: %d Location %q, want %q", resp.StatusCode, loc, h.path("/ui/"))
				}
				if r := h.do(http.MethodGet, "/ui/", nil, nil); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`<script type="module" src="js/app.js">`)) {
					t.Errorf("/ui/: %d %.200s", r.status, r.body)
				}
				// The pages reach the API relatively (api.js: new URL(`..${path}`, document.baseURI)).
				js := h.do(http.MethodGet, "/ui/js/api.js", nil, nil)
				if !bytes.Contains(js.body, []byte("new URL(`..${path}`, document.baseURI)")) {
					t.Errorf("api.js builds its URLs otherwise: %.300s", js.body)
				}
				resp = h.noRedirect(http.MethodPost, "/ui/login", "token="+testReadToken)
				if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "./?from=login" || len(resp.Cookies()) != 1 {
					t.Errorf("sign-in: %d %q %v", resp.StatusCode, loc, resp.Cookies())
				}
			})
		})
	}
}

// TestNetHTTPChecksTokenBeforeBody: net/http streams bodies, so a bad token is answered on the
// headers alone, though the body never comes.
func TestNetHTTPChecksTokenBeforeBody(t *testing.T) {
	h := newHarness(t, withSetup(setupNetHTTP))
	conn := dialFrom(t, h, "")
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	fmt.Fprintf(conn, "POST %s/v1/callbacks/not-a-token-0123456789 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", mountPrefix)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || string(b) != `{"error":"unknown callback token","status":401}` {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("answered after %s", d)
	}
	h.assertNothingStored()
}

// TestMountedEventStream: the event stream runs through a parent Fiber app and through the
// net/http bridge, event by event.
func TestMountedEventStream(t *testing.T) {
	for _, s := range []setupKind{setupFiber, setupNetHTTP} {
		t.Run(string(s), func(t *testing.T) {
			h := newHarness(t, withSetup(s))
			tok := h.jobToken(sessionID, api.KindLive)
			a := h.ack(h.post(tok, liveBody(t, sessionID, transcript("u1", true, "hello")), nil))
			h.applyLive(a.ID)
			req, err := http.NewRequest(http.MethodGet, h.base+"/v1/live/"+sessionID+"/events", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+testReadToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream; charset=utf-8" {
				t.Fatalf("%d %q", resp.StatusCode, ct)
			}
			br := bufio.NewReader(resp.Body)
			readEvent := func() string {
				var ev strings.Builder
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						t.Fatalf("read event: %v (so far %q)", err, ev.String())
					}
					if line == "\n" {
						return ev.String()
					}
					ev.WriteString(line)
				}
			}
			if ev := readEvent(); ev != ": stream open\n" {
				t.Errorf("first event %q", ev)
			}
			if ev := readEvent(); !strings.HasPrefix(ev, "id: 1\nevent: transcript\ndata: ") || !strings.Contains(ev, `"hello"`) {
				t.Errorf("stored event %q", ev)
			}
			// A message stored later arrives while the stream is open.
			a = h.ack(h.post(tok, liveBody(t, sessionID, transcript("u2", true, "again")), nil))
			h.applyLive(a.ID)
			h.feed.ping(sessionID)
			if ev := readEvent(); !strings.HasPrefix(ev, "id: 2\n") || !strings.Contains(ev, `"again"`) {
				t.Errorf("new event %q", ev)
			}
		})
	}
}

// TestMountedPanicAnswered: a panic in a mounted route is answered by the receiver (500 in its
// shape, logged without the token), though the parent has no recover middleware.
func TestMountedPanicAnswered(t *testing.T) {
	for _, s := range []setupKind{setupFiber, setupNetHTTP} {
		t.Run(string(s), func(t *testing.T) {
			h := newHarness(t, withSetup(s), withConfig(func(c *Config) { c.Ingester = panickingIngester{} }))
			r := h.post(testRouteToken, errorBody(t, "11111111-0000-4000-8000-000000000009"), nil)
			wantAnswer(t, r, http.StatusInternalServerError, `{"error":"internal error","status":500}`)
			logs := h.logs.String()
			pattern := mountPrefix + "/v1/callbacks/:token"
			if s == setupNetHTTP {
				pattern = mountPrefix + "/v1/callbacks/{token}"
			}
			if !strings.Contains(logs, "handler panicked") || !strings.Contains(logs, pattern) {
				t.Errorf("logs:\n%s", logs)
			}
		})
	}
}

type panickingIngester struct{}

func (panickingIngester) Submit(context.Context, store.Delivery) (store.IngestResult, error) {
	panic("ingester broke")
}

// TestLogPath: a parent app that logs its requests learns from LogPath the route's pattern of
// a callback, never its token, and the path of anything else.
func TestLogPath(t *testing.T) {
	h := newHarness(t)
	parent := fiber.New()
	var logged []string
	parent.Use(func(c *fiber.Ctx) error {
		err := c.Next()
		logged = append(logged, h.rcv.LogPath(c))
		return err
	})
	h.rcv.Mount(parent.Group(mountPrefix), MountOptions{Health: true})
	for _, target := range []string{
		mountPrefix + "/v1/callbacks/" + testRouteToken,
		mountPrefix + "/v1/callbacks/" + testRouteToken + "/more",
		mountPrefix + "/healthz",
	} {
		req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(string(errorBody(t, "11111111-0000-4000-8000-00000000000a"))))
		resp, err := parent.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	want := []string{mountPrefix + "/v1/callbacks/:token", mountPrefix + "/v1/callbacks/+", mountPrefix + "/healthz"}
	if strings.Join(logged, " ") != strings.Join(want, " ") {
		t.Errorf("logged %q, want %q", logged, want)
	}
}

func wantAnswer(t *testing.T, r response, status int, body string) {
	t.Helper()
	if r.status != status || string(r.body) != body {
		t.Errorf("answered %d %s, want %d %s", r.status, r.body, status, body)
	}
	if ct := r.header.Get("Content-Type"); r.status != 0 && ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// bigErrorBody is a job error callback of at least size bytes.
func bigErrorBody(t *testing.T, id string, size int) []byte {
	t.Helper()
	return testjson.Marshal(t, map[string]any{
		"id": id, "event": api.EventTranscriptionError,
		"error": map[string]any{"code": 500, "message": strings.Repeat("x", size)},
	})
}

// countRows counts the pending inbox rows of job.
func countRows(h *harness, job string) int {
	return countInbox(h, func(row store.InboxRow) bool { return row.JobID == job })
}

// countInbox counts the pending inbox rows that match.
func countInbox(h *harness, match func(store.InboxRow) bool) int {
	n := 0
	for _, row := range h.inbox() {
		if match(row) {
			n++
		}
	}
	return n
}

// path is p as the client reaches it: under the prefix in the mounted set-ups.
func (h *harness) path(p string) string {
	u, err := url.Parse(h.base)
	if err != nil {
		h.t.Fatal(err)
	}
	return u.Path + p
}

// noRedirect sends a request (a form body when given) and returns the answer as is.
func (h *harness) noRedirect(method, path string, form ...string) *http.Response {
	h.t.Helper()
	var body io.Reader
	if len(form) > 0 {
		body = strings.NewReader(form[0])
	}
	req, err := http.NewRequest(method, h.base+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// doChunked posts body to a callback path with no length announced (chunked).
func (h *harness) doChunked(path string, body []byte) response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.base+path, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Errorf("POST %s: %v", path, err)
		return response{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestMountedPublicURL: with the public URL (which includes the prefix, as callback URLs do),
// paging links name the prefix once.
func TestMountedPublicURL(t *testing.T) {
	for _, s := range setups() {
		t.Run(string(s), func(t *testing.T) {
			public := "https://example.com/base"
			if s != setupStandalone {
				public += mountPrefix
			}
			h := newHarness(t, withSetup(s), withConfig(func(c *Config) { c.PublicURL = public }))
			r := h.read("/v1/jobs?limit=5")
			if first, _ := r.json(t)["first"].(string); first != public+"/v1/jobs?limit=5&offset=0" {
				t.Errorf("first %q, want under %s", first, public)
			}
		})
	}
}

// TestStreamingParentTakesLargerBodies: a parent that streams bodies lets the receiver's limit
// decide, though its own BodyLimit (1 MiB) is lower, announced or chunked.
func TestStreamingParentTakesLargerBodies(t *testing.T) {
	h := newHarness(t, withSetup(setupFiberStreaming), withConfig(func(c *Config) { c.BodyLimit = 4 << 20 }))
	big := bigErrorBody(t, "11111111-0000-4000-8000-00000000000b", 2<<20)
	if a := h.ack(h.post(testRouteToken, big, nil)); a.Status != "stored" {
		t.Errorf("announced: %+v", a)
	}
	big = bigErrorBody(t, "11111111-0000-4000-8000-00000000000c", 2<<20)
	if r := h.doChunked("/v1/callbacks/"+testRouteToken, big); r.status != http.StatusOK {
		t.Errorf("chunked: %d %s", r.status, r.body)
	}
	huge := bigErrorBody(t, "11111111-0000-4000-8000-00000000000d", 5<<20)
	wantAnswer(t, h.post(testRouteToken, huge, nil), http.StatusRequestEntityTooLarge, `{"error":"request body exceeds 4194304 bytes","status":413}`)
}
