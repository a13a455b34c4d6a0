package scribehook

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDebugListenServesProfilesOnItsOwnPort checks debug.listen end to end: off by default,
// profiles on their own port when set (never on the receiver's), closed with the kit.
func TestDebugListenServesProfilesOnItsOwnPort(t *testing.T) {
	client := &http.Client{Timeout: 10 * time.Second}
	status := func(url string) int {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	ln := listen(t)
	off := startKit(t, kitConfig(t.TempDir(), ln, "http://127.0.0.1:9"), ln)
	if off.debug != nil {
		t.Fatalf("a profiling endpoint without debug.listen, on %s", off.debug.Addr())
	}

	ln = listen(t)
	cfg := kitConfig(t.TempDir(), ln, "http://127.0.0.1:9")
	cfg.Debug.Listen = "127.0.0.1:0"
	k := startKit(t, cfg, ln)
	if k.debug == nil {
		t.Fatal("no profiling endpoint with debug.listen set")
	}
	debugURL := "http://" + k.debug.Addr() + "/debug/pprof/cmdline"
	if got := status(debugURL); got != http.StatusOK {
		t.Fatalf("GET %s: %d", debugURL, got)
	}
	if got := status("http://" + ln.Addr().String() + "/debug/pprof/cmdline"); got == http.StatusOK {
		t.Fatal("the receiver's port serves the profiles")
	}
	if !strings.HasPrefix(k.debug.Addr(), "127.0.0.1:") {
		t.Fatalf("debug address %s", k.debug.Addr())
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if got := status(debugURL); got != 0 {
		t.Fatalf("GET %s after Close: %d", debugURL, got)
	}
}
