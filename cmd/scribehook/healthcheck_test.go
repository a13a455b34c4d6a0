package main

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func TestReadyzURL(t *testing.T) {
	for _, tc := range []struct{ listen, want string }{
		{"0.0.0.0:8787", "http://127.0.0.1:8787/readyz"},
		{":8787", "http://127.0.0.1:8787/readyz"},
		{"[::]:9000", "http://[::1]:9000/readyz"},
		{"127.0.0.1:8787", "http://127.0.0.1:8787/readyz"},
		{"10.1.2.3:80", "http://10.1.2.3:80/readyz"},
		{"[fd00::1]:8787", "http://[fd00::1]:8787/readyz"},
	} {
		got, err := readyzURL(tc.listen)
		if err != nil || got != tc.want {
			t.Errorf("readyzURL(%q) = %q, %v; want %q", tc.listen, got, err, tc.want)
		}
	}
	if _, err := readyzURL("8787"); err == nil {
		t.Error("readyzURL(\"8787\") gave no error for an address without a port")
	}
}

// runHealthcheck runs `scribehook healthcheck args…` as the binary would and returns its
// output and error.
func runHealthcheck(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := rootCmd(nil, &out, &out, append([]string{"healthcheck"}, args...)...).Execute()
	return out.String(), err
}

func TestHealthcheck(t *testing.T) {
	// The answer is read on the server's goroutines: it goes through mu (the race detector
	// does not see the ordering a TCP round trip gives).
	var (
		mu     sync.Mutex
		status = http.StatusOK
		body   = `{"status":"ready"}`
	)
	answer := func(code int, text string) {
		mu.Lock()
		defer mu.Unlock()
		status, body = code, text
	}
	srv := newRecorder(t, func(int, *http.Request, []byte) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		return status, body
	})

	const ready = `{"status":"ready"}`
	out, err := runHealthcheck(t, "--url", srv.URL+"/readyz")
	if err != nil || strings.TrimSpace(out) != ready {
		t.Fatalf("ready: output %q, error %v; want %q and no error", out, err, ready)
	}

	const notReady = `{"error":"not ready: shutting down","status":503}`
	answer(http.StatusServiceUnavailable, notReady)
	_, err = runHealthcheck(t, "--url", srv.URL+"/readyz")
	want := "answered 503: " + notReady
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("not ready: error %v; want one containing %q", err, want)
	}

	// Without --url: serve's listen address from the configuration, here its override.
	answer(http.StatusOK, ready)
	t.Setenv(envConfig, "")
	t.Setenv("SCRIBEHOOK_LISTEN", strings.TrimPrefix(srv.URL, "http://"))
	if out, err := runHealthcheck(t); err != nil || strings.TrimSpace(out) != ready {
		t.Fatalf("from the configuration: output %q, error %v", out, err)
	}
	var asked []string
	for i := range srv.count() {
		asked = append(asked, srv.req(i).Method+" "+srv.req(i).URL.Path)
	}
	if got, want := strings.Join(asked, ","), "GET /readyz,GET /readyz,GET /readyz"; got != want {
		t.Errorf("asked %q, want %q", got, want)
	}

	srv.Close()
	if _, err := runHealthcheck(t, "--url", srv.URL+"/readyz", "--timeout", "1s"); err == nil {
		t.Error("no error with nothing listening")
	}
}
