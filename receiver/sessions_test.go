package receiver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/receiver/internal/ui"
	"github.com/scribehook/scribehook/store/sqlite"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// readsJobs tells whether cookie alone reads GET /v1/jobs: 200, or 401 for a session refused.
func (h *harness) readsJobs(cookie *http.Cookie) bool {
	h.t.Helper()
	r := h.do(http.MethodGet, "/v1/jobs", nil, withCookie(cookie, nil))
	switch r.status {
	case http.StatusOK:
		return true
	case http.StatusUnauthorized:
		return false
	}
	h.t.Errorf("GET /v1/jobs with a cookie: %d %s", r.status, r.body)
	return false
}

// signOut posts the sign-out form with cookie, as the dashboard's page does, with all for its
// "sign out everywhere" button, and checks that it went to the sign-in page and cleared the
// cookie.
func (h *harness) signOut(cookie *http.Cookie, all bool) {
	h.t.Helper()
	vals := url.Values{}
	if all {
		vals.Set("all", "1")
	}
	resp := h.form("/ui/logout", vals, withCookie(cookie, nil))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "login?signed_out=1" {
		h.t.Errorf("sign-out (all %v): %d %q", all, resp.StatusCode, resp.Header.Get("Location"))
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == ui.CookieName && c.Value == "")
	}
	if !cleared {
		h.t.Errorf("sign-out did not clear the cookie: %v", resp.Header.Values("Set-Cookie"))
	}
}

// A sign-out ends its session on the server: the cookie, kept by whoever copied it, reads
// nothing any more. Another session of the same token is not affected.
func TestDashboardSessionSignOutRevokes(t *testing.T) {
	clock := &testClock{now: testNow}
	h := newHarness(t, withConfig(func(c *Config) { c.Now = clock.Now }))
	first := h.signIn()
	clock.add(time.Second)
	second := h.signIn()
	if first.Value == second.Value {
		t.Fatalf("two sign-ins gave the same cookie %q: a sign-out could not tell them apart", first.Value)
	}
	if !h.readsJobs(first) || !h.readsJobs(second) {
		t.Fatal("a fresh session reads nothing")
	}
	h.signOut(first, false)
	if h.readsJobs(first) {
		t.Error("the cookie of a signed-out session still reads /v1/jobs")
	}
	if !h.readsJobs(second) {
		t.Error("signing out one session ended another")
	}
}

// A sign-out is kept in the store: a receiver started again on the same database still refuses
// the cookie.
func TestDashboardSessionSignOutSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scribehook.db")
	var gone, kept *http.Cookie
	t.Run("before the restart", func(t *testing.T) {
		// The subtest's cleanup stops the receiver and closes the store.
		h := newHarness(t, withStore(teststore.OpenSQLite(t, sqlite.Config{Path: path})))
		gone = h.signIn()
		kept = h.signIn()
		h.signOut(gone, false)
	})
	h := newHarness(t, withStore(teststore.OpenSQLite(t, sqlite.Config{Path: path})))
	if h.readsJobs(gone) {
		t.Error("after a restart, the cookie of a signed-out session reads /v1/jobs")
	}
	if !h.readsJobs(kept) {
		t.Error("after a restart, a session that did not sign out reads nothing")
	}
}

// "Sign out everywhere" ends every session issued until then; signing in again works.
func TestDashboardSessionSignOutEverywhere(t *testing.T) {
	clock := &testClock{now: testNow}
	h := newHarness(t, withConfig(func(c *Config) { c.Now = clock.Now }))
	a := h.signIn()
	clock.add(time.Minute)
	b := h.signIn()
	clock.add(time.Minute)
	h.signOut(a, true)
	for name, c := range map[string]*http.Cookie{"the one signing out": a, "another": b} {
		if h.readsJobs(c) {
			t.Errorf("after signing out everywhere, the cookie of %s still reads /v1/jobs", name)
		}
	}
	clock.add(time.Second)
	if c := h.signIn(); !h.readsJobs(c) {
		t.Error("a sign-in after signing out everywhere reads nothing")
	}
}

// POST /v1/sessions/revoke, with the bearer token, ends every session without a browser.
func TestSessionsRevokeAPI(t *testing.T) {
	clock := &testClock{now: testNow}
	h := newHarness(t, withConfig(func(c *Config) { c.Now = clock.Now }))
	a, b := h.signIn(), h.signIn()
	clock.add(time.Minute)
	r := h.do(http.MethodPost, "/v1/sessions/revoke", nil, map[string]string{"Authorization": "Bearer " + testReadToken})
	if r.status != http.StatusOK || r.json(t)["revoked_before"] != clock.Now().UTC().Format(time.RFC3339) {
		t.Fatalf("revoke: %d %s, want 200 and revoked_before %s", r.status, r.body, clock.Now().UTC().Format(time.RFC3339))
	}
	if h.readsJobs(a) || h.readsJobs(b) {
		t.Error("a session issued before the revoke-all still reads /v1/jobs")
	}
	clock.add(time.Second)
	if c := h.signIn(); !h.readsJobs(c) {
		t.Error("a sign-in after the revoke-all reads nothing")
	}
	if r := h.do(http.MethodPost, "/v1/sessions/revoke", nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("revoke without the token: %d %s", r.status, r.body)
	}
}

// failingSessions is a session store that does not answer.
type failingSessions struct{}

var errStoreDown = errors.New("store down (simulated)")

func (failingSessions) RevokeSession(context.Context, []byte, time.Time) error { return errStoreDown }
func (failingSessions) RevokeAllSessions(context.Context, time.Time) error     { return errStoreDown }
func (failingSessions) SessionRevoked(context.Context, []byte, time.Time) (bool, error) {
	return false, errStoreDown
}

// When the store cannot tell whether a session was signed out, the cookie is refused with a
// 503 (try again), not a 401 (sign in again); the bearer token does not need the store's word.
// A sign-out that cannot be stored keeps the cookie and says so.
func TestDashboardSessionStoreDown(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Sessions = failingSessions{} }))
	cookie := h.signIn()
	r := h.do(http.MethodGet, "/v1/jobs", nil, withCookie(cookie, nil))
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(r.json(t)["error"].(string), "could not be checked") {
		t.Errorf("cookie while the store is down: %d %v %s", r.status, r.header, r.body)
	}
	if r := h.read("/v1/jobs"); r.status != http.StatusOK {
		t.Errorf("bearer token while the session store is down: %d %s", r.status, r.body)
	}
	for _, all := range []string{"", "1"} {
		resp := h.form("/ui/logout", url.Values{"all": {all}}, withCookie(cookie, nil))
		if resp.StatusCode != http.StatusServiceUnavailable || len(resp.Cookies()) != 0 {
			t.Errorf("sign-out (all=%q) while the store is down: %d, cookies %v", all, resp.StatusCode, resp.Header.Values("Set-Cookie"))
		}
	}
	r = h.do(http.MethodPost, "/v1/sessions/revoke", nil, map[string]string{"Authorization": "Bearer " + testReadToken})
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("revoke-all while the store is down: %d %s", r.status, r.body)
	}
	if !strings.Contains(h.logs.String(), errStoreDown.Error()) {
		t.Errorf("the store's failure is not logged: %s", h.logs)
	}
}

// Signing out everywhere takes a valid session: a request without one (no browser needed to
// send it) ends nobody's.
func TestDashboardSessionSignOutEverywhereNeedsASession(t *testing.T) {
	h := newHarness(t)
	cookie := h.signIn()
	for name, hdr := range map[string]map[string]string{
		"no cookie":     nil,
		"forged cookie": {"Cookie": ui.CookieName + "=v2.AAAAAAAAAAAAAAAAAAAAAA.1.9999999999.AAAA"},
	} {
		resp := h.form("/ui/logout", url.Values{"all": {"1"}}, hdr)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("sign out everywhere with %s: %d", name, resp.StatusCode)
		}
	}
	if !h.readsJobs(cookie) {
		t.Error("a sign-out everywhere without a session ended one")
	}
	// A plain sign-out without a session clears the cookie and revokes nothing.
	resp := h.form("/ui/logout", nil, nil)
	if resp.StatusCode != http.StatusSeeOther || !h.readsJobs(cookie) {
		t.Errorf("sign-out without a cookie: %d, and the other session reads: %v", resp.StatusCode, h.readsJobs(cookie))
	}
}

// plainStore is a store that keeps no sessions.
type plainStore struct{ Store }

// Without a session store, a sign-out still clears the cookie, and the receiver says that a
// copy stays valid; signing out everywhere is refused rather than pretended.
func TestDashboardSessionWithoutASessionStore(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Store = plainStore{c.Store} }))
	if !strings.Contains(h.logs.String(), "store keeps no dashboard sessions") {
		t.Errorf("no warning that sign-outs cannot be kept: %s", h.logs)
	}
	cookie := h.signIn()
	resp := h.form("/ui/logout", url.Values{"all": {"1"}}, withCookie(cookie, nil))
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("sign out everywhere without a session store: %d", resp.StatusCode)
	}
	r := h.do(http.MethodPost, "/v1/sessions/revoke", nil, map[string]string{"Authorization": "Bearer " + testReadToken})
	if r.status != http.StatusNotImplemented {
		t.Errorf("revoke-all without a session store: %d %s", r.status, r.body)
	}
	h.signOut(cookie, false)
	if !h.readsJobs(cookie) {
		t.Error("without a session store, a copy of the cookie no longer reads: then where was the sign-out kept?")
	}
	if !strings.Contains(h.logs.String(), "sign-out cleared the cookie only") {
		t.Errorf("the sign-out does not say it was not kept: %s", h.logs)
	}
}
