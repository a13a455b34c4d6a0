package scribehook

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
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

// TestStartFailureLeavesNoDebugPort: a start that fails (here the store is gone) must not
// leave the profiling port open behind it, since Run returns without a Shutdown; and a busy
// debug port fails the start with the address named, the pipeline stopped again.
func TestStartFailureLeavesNoDebugPort(t *testing.T) {
	ctx := context.Background()
	newKit := func(debugListen string) *Kit {
		t.Helper()
		ln := listen(t)
		ln.Close()
		cfg := kitConfig(t.TempDir(), ln, "http://127.0.0.1:9")
		cfg.Debug.Listen = debugListen
		k, err := New(ctx, cfg, WithLogger(logx.Discard()), WithSecrets(configs.Secrets{APIKey: testKey}))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}

	free := listen(t)
	addr := free.Addr().String()
	free.Close()
	k := newKit(addr)
	if err := k.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(ctx); err == nil || !strings.Contains(err.Error(), "release sink leases") {
		t.Fatalf("Start on a closed store: %v", err)
	}
	if k.debug != nil {
		t.Fatalf("profiling endpoint left open on %s after a failed start", k.debug.Addr())
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("debug port %s still taken after a failed start: %v", addr, err)
	}
	defer again.Close()

	k = newKit(addr) // the port is held by again
	err = k.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Start with a busy debug port: %v", err)
	}
	if k.debug != nil || k.started {
		t.Fatalf("a failed start left debug=%v started=%v", k.debug, k.started)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}
