package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/receiver/internal/ui"
	"github.com/scribehook/scribehook/store"
)

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// form posts a sign-in or sign-out form as a browser on the dashboard's own origin would.
func (h *harness) form(path string, vals url.Values, header map[string]string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.base+path, strings.NewReader(vals.Encode()))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", h.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// signIn signs in with the read token and returns the session cookie.
func (h *harness) signIn() *http.Cookie {
	h.t.Helper()
	resp := h.form("/ui/login", url.Values{"token": {testReadToken}}, nil)
	for _, c := range resp.Cookies() {
		if c.Name == ui.CookieName {
			return c
		}
	}
	h.t.Fatalf("sign-in set no cookie: %d %v", resp.StatusCode, resp.Header)
	return nil
}

func withCookie(c *http.Cookie, extra map[string]string) map[string]string {
	m := map[string]string{"Cookie": c.Name + "=" + c.Value}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestDashboardAssets(t *testing.T) {
	h := newHarness(t)
	resp, err := noRedirects.Get(h.base + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, want := range map[string]string{
		"/ui/":            "text/html",
		"/ui/login":       "text/html",
		"/ui/app.css":     "text/css",
		"/ui/js/app.js":   "text/javascript",
		"/ui/js/vtt.js":   "text/javascript",
		"/ui/favicon.svg": "image/svg+xml",
	} {
		// The assets are public: the page must load before anyone signs in.
		r := h.do(http.MethodGet, path, nil, nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), want) {
			t.Errorf("%s: %d %q", path, r.status, r.header.Get("Content-Type"))
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: security headers %v", path, r.header)
		}
		if etag := r.header.Get("ETag"); etag == "" {
			t.Errorf("%s: no ETag", path)
		} else if again := h.do(http.MethodGet, path, nil, map[string]string{"If-None-Match": etag}); again.status != http.StatusNotModified {
			t.Errorf("%s with If-None-Match: %d", path, again.status)
		}
	}
	if r := h.do(http.MethodGet, "/ui/", nil, nil); !strings.Contains(string(r.body), `<script type="module" src="js/app.js">`) {
		t.Errorf("index does not load the app: %s", r.body)
	}
	if r := h.do(http.MethodGet, "/ui/nope.js", nil, nil); r.status != 404 || r.json(t)["status"] != float64(404) {
		t.Errorf("unknown asset: %d %s", r.status, r.body)
	}
}

func TestDashboardSignIn(t *testing.T) {
	h := newHarness(t)
	// A wrong token goes back to the form with the reason and the route to return to.
	resp := h.form("/ui/login", url.Values{"token": {"wrong"}, "next": {"#/jobs/x"}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "login?error=invalid&next=%23%2Fjobs%2Fx" || len(resp.Cookies()) != 0 {
		t.Errorf("wrong token: %d %q %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	// The right one sets the cookie and returns to the route, never anywhere else.
	resp = h.form("/ui/login", url.Values{"token": {testReadToken}, "next": {"#/live/abc"}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "./?from=login#/live/abc" {
		t.Errorf("sign-in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	raw := resp.Header.Get("Set-Cookie")
	for _, attr := range []string{ui.CookieName + "=v2.", "path=/", "HttpOnly", "secure", "SameSite=Strict", "max-age=43200"} {
		if !strings.Contains(raw, attr) {
			t.Errorf("cookie %q lacks %q", raw, attr)
		}
	}
	if strings.Contains(raw, testReadToken) {
		t.Errorf("the cookie carries the token itself: %q", raw)
	}
	for _, next := range []string{"https://evil.example/", "//evil.example", "#/x\r\nSet-Cookie: a=b", `#/\evil`} {
		resp := h.form("/ui/login", url.Values{"token": {testReadToken}, "next": {next}}, nil)
		if loc := resp.Header.Get("Location"); loc != "./?from=login" {
			t.Errorf("next %q: Location %q", next, loc)
		}
	}
	// Another origin (another port of the same host counts) cannot post the form.
	for name, hdr := range map[string]map[string]string{
		"cross-site":  {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"same-site":   {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
		"old browser": {"Sec-Fetch-Site": "", "Origin": "http://127.0.0.1:1"},
	} {
		resp := h.form("/ui/login", url.Values{"token": {testReadToken}}, hdr)
		if resp.Header.Get("Location") != "login?error=origin" || len(resp.Cookies()) != 0 {
			t.Errorf("%s: %d %q", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}

	off := newHarness(t, withConfig(func(c *Config) { c.ReadToken = "" }))
	resp = off.form("/ui/login", url.Values{"token": {""}}, nil)
	if resp.Header.Get("Location") != "login?error=disabled" || len(resp.Cookies()) != 0 {
		t.Errorf("read API off: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestDashboardCookieOnTheReadAPI(t *testing.T) {
	now := testNow
	h := newHarness(t, withConfig(func(c *Config) { c.Now = func() time.Time { return now } }))
	cookie := h.signIn()
	putJobs(t, h)
	storeLive(t, h, sessionID, transcript("u1", true, "hello"))

	for _, path := range []string{"/v1/jobs", "/v1/jobs/job-1", "/v1/live/" + sessionID + "/messages", "/v1/deadletters"} {
		if r := h.do(http.MethodGet, path, nil, withCookie(cookie, nil)); r.status != 200 {
			t.Errorf("%s with the cookie: %d %s", path, r.status, r.body)
		}
	}
	// EventSource sends the cookie and nothing else.
	st := h.openStream("/v1/live/"+sessionID+"/events", withCookie(cookie, map[string]string{"Authorization": ""}))
	if st.status != 200 {
		t.Fatalf("event stream with the cookie: %d", st.status)
	}
	if ev := st.must(t); ev.id != "1" || ev.event != "transcript" {
		t.Errorf("first event %+v", ev)
	}

	// The header, when sent, decides alone: a wrong token is refused whatever the cookie.
	r := h.do(http.MethodGet, "/v1/jobs", nil, withCookie(cookie, map[string]string{"Authorization": "Bearer nope"}))
	if r.status != 401 || r.json(t)["error"] != "invalid bearer token" {
		t.Errorf("wrong bearer with a good cookie: %d %s", r.status, r.body)
	}
	parts := strings.Split(cookie.Value, ".") // v2, id, issued-at, expiry, mac
	if len(parts) != 5 {
		t.Fatalf("cookie %q: want v2.<id>.<issued>.<expiry>.<mac>", cookie.Value)
	}
	later := strconv.FormatInt(testNow.Add(48*time.Hour).Unix(), 10)
	for name, value := range map[string]string{
		"forged":          "v2.AAAAAAAAAAAAAAAAAAAAAA.1.9999999999.AAAA",
		"tampered expiry": strings.Join([]string{parts[0], parts[1], parts[2], later, parts[4]}, "."),
		"tampered id":     strings.Join([]string{parts[0], "AAAAAAAAAAAAAAAAAAAAAA", parts[2], parts[3], parts[4]}, "."),
		"other scheme":    "v3." + strings.TrimPrefix(cookie.Value, "v2."),
		// The first format, signed with the right key: it has no id to revoke, so it is refused.
		"first format": firstFormatCookie(testReadToken, testNow.Add(time.Hour)),
		"empty":        "",
	} {
		r := h.do(http.MethodGet, "/v1/jobs", nil, map[string]string{"Cookie": ui.CookieName + "=" + value})
		if r.status != 401 || r.json(t)["error"] != "missing bearer token" {
			t.Errorf("%s cookie: %d %s", name, r.status, r.body)
		}
	}
	// A cookie signed for another token is worthless here.
	other := newHarness(t, withConfig(func(c *Config) { c.ReadToken = "another-read-token" }))
	if r := other.do(http.MethodGet, "/v1/jobs", nil, withCookie(cookie, nil)); r.status != 401 {
		t.Errorf("cookie of another token: %d %s", r.status, r.body)
	}
	// Sessions end after 12 hours.
	now = testNow.Add(ui.DefaultSessionTTL + time.Second)
	if r := h.do(http.MethodGet, "/v1/jobs", nil, withCookie(cookie, nil)); r.status != 401 {
		t.Errorf("expired cookie: %d %s", r.status, r.body)
	}
}

func TestDashboardReplayAndSignOut(t *testing.T) {
	// No clock in the configuration, as serve runs it: replay must still work.
	h := newHarness(t, withConfig(func(c *Config) { c.Now = nil }))
	ctx := context.Background()
	ev := api.Event{ID: "ev-1", Type: "job.succeeded", CreatedAt: api.NewTime(time.Now()), JobID: jobID, Kind: api.KindPreRecorded, Data: []byte(`{}`)}
	if err := h.store.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "hook", EventID: ev.ID, Event: ev, OrderKey: jobID, NextAttempt: time.Now(), CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := h.store.ClaimSinkDeliveries(ctx, "hook", false, time.Now().Add(time.Second), time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if err := h.store.KillSinkDelivery(ctx, claimed[0].ID, "503 from the hook", time.Now()); err != nil {
		t.Fatal(err)
	}
	path := "/v1/deadletters/" + strconv.FormatInt(claimed[0].ID, 10) + "/replay"
	cookie := h.signIn()

	// Cookies ride along on cross-origin posts; the receiver refuses them.
	for name, hdr := range map[string]map[string]string{
		"same-site": {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
		"old":       {"Origin": "http://localhost:9"},
	} {
		r := h.do(http.MethodPost, path, nil, withCookie(cookie, hdr))
		if r.status != http.StatusForbidden || !strings.Contains(r.json(t)["error"].(string), "cross-origin") {
			t.Errorf("%s replay: %d %s", name, r.status, r.body)
		}
	}
	r := h.do(http.MethodPost, path, nil, withCookie(cookie, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": h.base}))
	if r.status != http.StatusAccepted || r.json(t)["status"] != "queued" {
		t.Fatalf("replay with the cookie: %d %s", r.status, r.body)
	}
	if dls, _ := h.store.DeadLetters(ctx, "", time.Time{}, 10); len(dls) != 0 {
		t.Errorf("dead letter still listed after replay: %+v", dls)
	}

	// Signing out clears the cookie; the browser then has nothing to send.
	resp := h.form("/ui/logout", nil, withCookie(cookie, nil))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "login?signed_out=1" {
		t.Errorf("sign-out: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == ui.CookieName && c.Value == "" && c.Expires.Before(time.Now()))
	}
	if !cleared {
		t.Errorf("sign-out did not clear the cookie: %v", resp.Header.Values("Set-Cookie"))
	}
	if resp := h.form("/ui/logout", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site sign-out: %d", resp.StatusCode)
	}
}

// firstFormatCookie is a session value of the first format, "v1.<unix expiry>.<mac>", as
// earlier versions signed it for token.
func firstFormatCookie(token string, exp time.Time) string {
	k := hmac.New(sha256.New, []byte(token))
	k.Write([]byte("scribehook dashboard session key v1"))
	payload := "v1." + strconv.FormatInt(exp.Unix(), 10)
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
