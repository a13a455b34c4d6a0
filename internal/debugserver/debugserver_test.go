package debugserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServesProfilesUntilClosed(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr() + "/debug/pprof/"
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		return resp.StatusCode, b
	}
	if code, body := get(""); code != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("index: %d %q", code, body)
	}
	// The heap and CPU profiles are gzipped protocol buffers.
	for _, path := range []string{"heap", "profile?seconds=1"} {
		code, body := get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, code, body)
		}
		if _, err := gzip.NewReader(bytes.NewReader(body)); err != nil {
			t.Fatalf("%s: not a gzipped profile: %v", path, err)
		}
	}
	if code, _ := get("cmdline"); code != http.StatusOK {
		t.Fatalf("cmdline: status %d", code)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if resp, err := client.Get(base); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d after Close", resp.StatusCode)
	}
}

func TestStartFailsOnABusyAddress(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s2, err := Start(s.Addr()); err == nil {
		s2.Close()
		t.Fatalf("second Start on %s succeeded", s.Addr())
	} else if !strings.Contains(err.Error(), "debug listener") {
		t.Fatalf("error %q does not name the debug listener", err)
	}
}
