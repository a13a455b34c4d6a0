package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
)

// serveWithBus writes a configuration for serve on SQLite in a temporary directory with the
// given bus, the broker URL in SCRIBEHOOK_BUS_URL as a password belongs, and returns the root
// command, its stderr and the listen address.
func serveWithBus(t *testing.T, driver, brokerURL string) (run func(ctx context.Context) error, stderr *sandboxtest.Buffer, addr string) {
	t.Helper()
	dir := t.TempDir()
	addr = "127.0.0.1:" + freePort(t)
	path := writeSQLiteConfig(t, dir, filepath.Join(dir, "scribehook.db"),
		"listen: "+addr+"\n",
		"bus: {driver: "+driver+", claim_after: 5s}\n",
		"subtitles: {dir: "+filepath.Join(dir, "artifacts")+"}\n",
		"sinks: [{name: files, kind: file, dir: "+filepath.Join(dir, "out")+", events: [\"*\"]}]\n")
	t.Setenv("SCRIBEHOOK_BUS_URL", brokerURL)
	stderr = &sandboxtest.Buffer{}
	return func(ctx context.Context) error {
		return rootCmd(nil, io.Discard, stderr, "--config", path, "serve").ExecuteContext(ctx)
	}, stderr, addr
}

// A broker that cannot be reached stops serve at once with an error naming bus.url, redacted,
// and the cause; the password appears nowhere.
func TestServeBrokerUnreachable(t *testing.T) {
	for _, tc := range []struct{ driver, url, cause string }{
		{handlers.BusRedisStream, "redis://:s3cret-pw@127.0.0.1:PORT/0", "cannot reach the Redis broker"},
		{handlers.BusNATS, "nats://scribehook:s3cret-pw@127.0.0.1:PORT", "cannot reach the NATS broker"},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			url := strings.Replace(tc.url, "PORT", freePort(t), 1) // nothing listens there
			run, stderr, _ := serveWithBus(t, tc.driver, url)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := run(ctx)
			redacted := strings.Replace(url, "s3cret-pw", "REDACTED", 1)
			if err == nil || !strings.Contains(err.Error(), "bus.url "+redacted) || !strings.Contains(err.Error(), tc.cause) {
				t.Fatalf("serve = %v, want an error naming bus.url %s and %q", err, redacted, tc.cause)
			}
			if strings.Contains(err.Error()+stderr.String(), "s3cret") {
				t.Errorf("the password leaked:\n%v\n%s", err, stderr.String())
			}
		})
	}
}

// serve on a broker that requires a password: it runs, becomes ready once subscribed, logs the
// bus with the password redacted, and stops cleanly.
func TestServeOnBroker(t *testing.T) {
	for _, driver := range []string{handlers.BusRedisStream, handlers.BusNATS} {
		t.Run(driver, func(t *testing.T) {
			url := startTestBroker(t, driver, "s3cret-pw")
			run, stderr, addr := serveWithBus(t, driver, url)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- run(ctx) }()
			testwait.For(t, "serve ready", 30*time.Second, func() bool {
				select {
				case err := <-done:
					t.Fatalf("serve stopped: %v\n%s", err, stderr.String())
				default:
				}
				resp, err := http.Get("http://" + addr + "/readyz")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			})
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("serve: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
			logs := stderr.String()
			if strings.Contains(logs, "s3cret") {
				t.Errorf("the password is in the logs:\n%s", logs)
			}
			if !strings.Contains(logs, "REDACTED@127.0.0.1") || !strings.Contains(logs, "bus="+driver) && !strings.Contains(logs, `bus="`+driver) {
				t.Errorf("the logs do not show the bus, redacted:\n%s", logs)
			}
			if !strings.Contains(logs, "replicas cannot share a SQLite file") {
				t.Errorf("no warning about a broker with SQLite:\n%s", logs)
			}
		})
	}
}
