package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/sandboxtest"
)

// serveWithBus writes a configuration for serve on SQLite in a temporary directory with the
// given bus, the broker URL in SCRIBEHOOK_BUS_URL as a password belongs, and returns the
// arguments that run serve on it and its listen address.
func serveWithBus(t *testing.T, driver, brokerURL string) (args []string, addr string) {
	t.Helper()
	dir, db := tempDB(t)
	addr = "127.0.0.1:" + freePort(t)
	path := writeSQLiteConfig(t, dir, db,
		"listen: "+addr+"\n",
		"bus: {driver: "+driver+", claim_after: 5s}\n",
		"subtitles: {dir: "+filepath.Join(dir, "artifacts")+"}\n",
		"sinks: [{name: files, kind: file, dir: "+filepath.Join(dir, "out")+", events: [\"*\"]}]\n")
	t.Setenv("SCRIBEHOOK_BUS_URL", brokerURL)
	return []string{"--config", path, "serve"}, addr
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
			args, _ := serveWithBus(t, tc.driver, url)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, stderr, err := runCmd(ctx, nil, args...)
			redacted := strings.Replace(url, "s3cret-pw", "REDACTED", 1)
			if err == nil || !strings.Contains(err.Error(), "bus.url "+redacted) || !strings.Contains(err.Error(), tc.cause) {
				t.Fatalf("serve = %v, want an error naming bus.url %s and %q", err, redacted, tc.cause)
			}
			if strings.Contains(err.Error()+stderr, "s3cret") {
				t.Errorf("the password leaked:\n%v\n%s", err, stderr)
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
			args, addr := serveWithBus(t, driver, url)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stderr sandboxtest.Buffer
			done := startCmd(ctx, nil, io.Discard, &stderr, args...)
			waitServing(t, "http://"+addr+"/readyz", done, &stderr)
			cancel()
			if err := waitEnded(t, done, 30*time.Second); err != nil {
				t.Fatalf("serve: %v", err)
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
