package receiver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A program's own net/http access log gets, from LogPathHTTP, the path of every request with a
// callback token cut off, whatever its spelling, escaping or prefix, before or after
// StripPrefix; other paths as they are.
func TestLogPathHTTP(t *testing.T) {
	h := newHarness(t)
	for _, tt := range []struct{ target, want string }{
		{mountPrefix + "/v1/callbacks/" + testRouteToken, mountPrefix + "/v1/callbacks/…"},
		{"/v1/callbacks/" + testRouteToken + "/more", "/v1/callbacks/…"},
		{"//v1/CALLBACKS/" + testRouteToken, "//v1/CALLBACKS/…"},
		{"/v1%2Fcallbacks%2F" + testRouteToken, "/v1%2Fcallbacks/…"},
		{"/v1/%63allbacks/" + testRouteToken, "/v1/callbacks/…"},
		{"/v1/%2563allbacks/" + testRouteToken, "/v1/callbacks/…"},
		{mountPrefix + "/healthz", mountPrefix + "/healthz"},
		{"/v1/jobs/abc", "/v1/jobs/abc"},
	} {
		var logged string
		var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			logged = h.rcv.LogPathHTTP(req)
		})
		req := httptest.NewRequest(http.MethodPost, "http://example.com"+tt.target, nil)
		inner.ServeHTTP(httptest.NewRecorder(), req)
		if logged != tt.want || strings.Contains(logged, testRouteToken) {
			t.Errorf("LogPathHTTP(%s) = %q, want %q", tt.target, logged, tt.want)
		}
	}
	// After StripPrefix the path has lost the prefix; the token is still cut off.
	var logged string
	strip := http.StripPrefix(mountPrefix, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		logged = h.rcv.LogPathHTTP(req)
	}))
	strip.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, mountPrefix+"/v1/callbacks/"+testRouteToken, nil))
	if logged != "/v1/callbacks/…" {
		t.Errorf("after StripPrefix: %q", logged)
	}
}
