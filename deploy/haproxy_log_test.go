package deploy_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHAProxyLogRedactsEverySpelling runs the balancer's own log rule (the set-var and
// log-format lines of compose/haproxy.cfg) in a real haproxy on loopback, and sends it every
// spelling of a callback URL: the log line has the path, never the token.
func TestHAProxyLogRedactsEverySpelling(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
		if _, serr := os.Stat(bin); serr != nil {
			t.Fatalf("haproxy is not installed (make deps installs it): %v", err)
		}
	}
	var rules []string
	for _, w := range haproxyLines(t) {
		line := strings.Join(w, " ")
		if strings.HasPrefix(line, "http-request set-var(txn.logpath)") || w[0] == "log-format" {
			rules = append(rules, line)
		}
	}
	if len(rules) != 2 {
		t.Fatalf("compose/haproxy.cfg: want the logpath rule and the log-format, found %q", rules)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer backend.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	_ = ln.Close()
	cfg := fmt.Sprintf(`global
    log stdout format raw local0 info
defaults
    mode http
    log global
    timeout connect 3s
    timeout client 10s
    timeout server 10s
frontend callbacks
    bind %s
    %s
    %s
    default_backend b
backend b
    server s %s
`, front, rules[0], rules[1], strings.TrimPrefix(backend.URL, "http://"))
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	const token = "balancer-log-token-5e2a91c07d3b48f6"
	spellings := []struct{ path, logged string }{
		{"/v1/callbacks/" + token, "/v1/callbacks/[token]"},
		{"/V1/CALLBACKS/" + token, "/v1/callbacks/[token]"},
		{"//v1/callbacks/" + token, "//v1/callbacks/[token]"},
		{"/v1/./callbacks/" + token, "/v1/./callbacks/[token]"},
		{"/v1/x/../Callbacks/" + token, "/v1/x/../callbacks/[token]"},
		{"/v1%2Fcallbacks/" + token, "/v1%[redacted]"},
		{"/v1/%63allbacks/" + token, "/v1/%[redacted]"},
		{"/hooks/v1/callbacks/" + token + "/more", "/hooks/v1/callbacks/[token]"},
		{"/v1/jobs/abc", "/v1/jobs/abc"},
	}
	deadline := time.Now().Add(10 * time.Second)
	// Until haproxy passes a request through (a GET: only POSTs are counted below).
	for {
		err := rawRequest(front, "GET", "/probe")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not answer: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, sp := range spellings {
		if err := rawRequest(front, "POST", sp.path); err != nil {
			t.Fatalf("POST %s: %v", sp.path, err)
		}
	}
	for time.Now().Before(deadline) && strings.Count(out.String(), " POST ") < len(spellings) {
		time.Sleep(50 * time.Millisecond)
	}
	logs := out.String()
	if strings.Contains(logs, token[:12]) {
		t.Errorf("the balancer's log holds the token:\n%s", logs)
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	var logged []string
	for _, l := range lines {
		if i := strings.Index(l, " POST "); i >= 0 {
			logged = append(logged, l[i+len(" POST "):])
		}
	}
	if len(logged) != len(spellings) {
		t.Fatalf("%d log lines of requests, want %d:\n%s", len(logged), len(spellings), logs)
	}
	for i, sp := range spellings {
		if logged[i] != sp.logged {
			t.Errorf("%s logged as %q, want %q", sp.path, logged[i], sp.logged)
		}
	}
}

// rawRequest sends a request for path as written (a Go client would clean or escape it).
func rawRequest(addr, method, path string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, method+" "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
		return err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 404")) {
		return fmt.Errorf("answered %q", b)
	}
	return nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
