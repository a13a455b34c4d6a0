package receiver

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// TestEnableSink: POST /v1/sinks/:name/enable calls EnableSink for a known sink (bearer token
// or the dashboard's cookie, same-origin), 404 for an unknown one, 401 without credentials,
// 403 cross-origin, 503 when enabling fails.
func TestEnableSink(t *testing.T) {
	var enabled []string
	fail := false
	h := newHarness(t, withConfig(func(c *Config) {
		c.Sinks = func() []SinkStatus { return []SinkStatus{{Name: "captions hook", Disabled: true}} }
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
