package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store/sqlite"
)

// TestSinkDisabledAcrossRestart: a webhook sink whose endpoint answers 410 is disabled; serve
// restarts with the endpoint back and the sink stays disabled, its later deliveries queued;
// `scribehook sinks list` shows it so, `scribehook sinks enable`, run beside the running serve,
// resumes it and the queued events are delivered.
func TestSinkDisabledAcrossRestart(t *testing.T) {
	dir, db := tempDB(t)
	var gone atomic.Bool
	var received atomic.Int64
	gone.Store(true)
	endpoint := newRecorder(t, func(int, *http.Request, []byte) (int, string) {
		if gone.Load() {
			return http.StatusGone, "this endpoint was removed"
		}
		received.Add(1)
		return http.StatusNoContent, ""
	})
	spec := sinks.Spec{Name: "hook", Kind: sinks.KindWebhook, URL: endpoint.URL, Allow: []string{"127.0.0.0/8"},
		Filter: sinks.Filter{Events: []string{"*"}}, Timeout: 2 * time.Second}
	route := []receiver.Route{{Name: "load", Token: backupRouteToken}}
	start := func() *served {
		st := teststore.OpenSQLite(t, sqlite.Config{Path: db})
		return serveOn(t, st, "", serverOptions{Routes: route, Logger: logx.Discard(), Sinks: []sinkSetup{newSink(t, spec, logx.Discard())}})
	}
	const session = "5e55d000-0000-4000-8000-00000000000d"
	post := func(srv *served, n int) {
		t.Helper()
		if status, _, err := postCallback("http://"+srv.addr+"/v1/callbacks/"+backupRouteToken, liveTranscript(session, n)); err != nil || status != "stored" {
			t.Fatalf("callback %d: %q, %v", n, status, err)
		}
	}
	applied := func(srv *served) func() bool {
		return func() bool { n, err := srv.store.InboxBacklog(t.Context()); return err == nil && n == 0 }
	}

	srv := start()
	post(srv, 1)
	testwait.For(t, "the sink disabled by the 410", 10*time.Second, func() bool {
		sts, err := srv.store.SinkStates(t.Context())
		return err == nil && len(sts) == 1 && sts[0].Disabled
	})
	post(srv, 2)
	testwait.For(t, "the second callback applied", 10*time.Second, applied(srv))
	srv.stop(t)

	// The restart, with the endpoint back: the sink stays disabled, its event queued.
	gone.Store(false)
	srv = start()
	defer srv.stop(t)
	post(srv, 3)
	testwait.For(t, "the third callback applied", 10*time.Second, applied(srv))
	time.Sleep(time.Second) // the dispatcher's chance to deliver, which it must not take
	if n := received.Load(); n != 0 {
		t.Fatalf("the endpoint received %d events from a sink disabled before the restart", n)
	}
	if n, err := srv.store.SinkDepth(t.Context(), "hook"); err != nil || n != 2 {
		t.Fatalf("sink depth %d, %v; want 2 queued", n, err)
	}

	cfg := writeSQLiteConfig(t, dir, db, fmt.Sprintf("sinks:\n  - {name: hook, kind: webhook, url: %q, events: [\"*\"]}\n", endpoint.URL))
	out, _, err := runCmd(t.Context(), nil, "sinks", "list", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "hook  disabled  2 ") || !strings.Contains(out, "answered 410 Gone: this endpoint was removed") {
		t.Errorf("sinks list printed:\n%s", out)
	}
	if _, _, err := runCmd(t.Context(), nil, "sinks", "enable", "nope", "--config", cfg); err == nil || !strings.Contains(err.Error(), `no sink "nope" in the configuration (sinks: hook)`) {
		t.Errorf("enable of an unknown sink: %v", err)
	}
	out, _, err = runCmd(t.Context(), nil, "sinks", "enable", "hook", "--config", cfg)
	if err != nil || !strings.Contains(out, "sink hook enabled (2 deliveries queued)") {
		t.Fatalf("sinks enable: %q, %v", out, err)
	}
	testwait.For(t, "the queued events delivered", 3*sinks.DefaultStateInterval, func() bool {
		n, err := srv.store.SinkDepth(t.Context(), "hook")
		return err == nil && n == 0
	})
	if n := received.Load(); n != 2 {
		t.Errorf("the endpoint received %d events, want the 2 queued", n)
	}
	dead, err := srv.store.DeadLetters(t.Context(), "hook", time.Time{}, 0)
	if err != nil || len(dead) != 1 || !strings.Contains(dead[0].LastError, "410") {
		t.Errorf("dead letters %+v, %v; want the one answered 410", dead, err)
	}
	if sts, err := srv.store.SinkStates(t.Context()); err != nil || len(sts) != 1 || sts[0].Disabled {
		t.Errorf("states after enable: %+v, %v", sts, err)
	}
}
