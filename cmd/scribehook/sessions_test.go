package main

import (
	"encoding/json"
	"github.com/scribehook/scribehook/receiver"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store/sqlite"
)

const sessionsReadToken = "read-token-of-the-sessions-test"

// signInTo signs in to the dashboard of serve at base and returns the cookie, as "name=value".
func signInTo(t *testing.T, base string) string {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(base+"/ui/login", url.Values{"token": {sessionsReadToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == receiver.DashboardCookie {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("sign-in set no cookie: %d", resp.StatusCode)
	return ""
}

// readsJobsWith is the status of GET /v1/jobs with cookie alone.
func readsJobsWith(t *testing.T, base, cookie string) int {
	t.Helper()
	status, _ := httpDo(t, http.MethodGet, base+"/v1/jobs", http.Header{"Cookie": {cookie}}, nil)
	return status
}

// TestSessionsRevokeAllSignsEveryBrowserOut: serve's dashboard sessions, signed in before
// `scribehook sessions revoke-all` ran beside it on the same store, read nothing after it.
func TestSessionsRevokeAllSignsEveryBrowserOut(t *testing.T) {
	dir, db := tempDB(t)
	srv := serveOn(t, teststore.OpenSQLite(t, sqlite.Config{Path: db}), "", serverOptions{ReadToken: sessionsReadToken, Logger: logx.Discard()})
	defer srv.stop(t)
	base := "http://" + srv.addr
	a, b := signInTo(t, base), signInTo(t, base)
	for _, c := range []string{a, b} {
		if status := readsJobsWith(t, base, c); status != http.StatusOK {
			t.Fatalf("a fresh session reads GET /v1/jobs: %d", status)
		}
	}
	cfg := writeSQLiteConfig(t, dir, db)
	start := time.Now().Truncate(time.Second)
	out, errOut, err := runCmd(t.Context(), nil, "sessions", "revoke-all", "-o", "json", "--config", cfg)
	if err != nil {
		t.Fatalf("sessions revoke-all: %v\n%s", err, errOut)
	}
	var res struct {
		RevokedBefore time.Time `json:"revoked_before"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.RevokedBefore.Before(start) || res.RevokedBefore.After(time.Now()) {
		t.Errorf("revoke-all printed %q (%v), want revoked_before between %v and now", out, err, start)
	}
	for name, c := range map[string]string{"first": a, "second": b} {
		if status := readsJobsWith(t, base, c); status != http.StatusUnauthorized {
			t.Errorf("the %s session after revoke-all: GET /v1/jobs %d, want 401", name, status)
		}
	}
	out, _, err = runCmd(t.Context(), nil, "sessions", "revoke-all", "--config", cfg)
	if err != nil || !strings.HasPrefix(out, "every dashboard session issued until ") {
		t.Errorf("revoke-all as text: %q, %v", out, err)
	}
}
