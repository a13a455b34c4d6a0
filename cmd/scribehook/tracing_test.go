package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testotlp"
	"github.com/scribehook/scribehook/internal/testwait"
)

// partnerToken is a static route's token strong enough for serve.
const partnerToken = "ZkM3c1Q2bVd4Rk5wYkx2cUh0R2pZc0V1QW9XaUt6UnA"

// serveTraced runs serve with the YAML lines of tracing (none: off), a static route and a file
// sink, posts a job's error callback to it, waits until the sink has its event, and stops it.
func serveTraced(t *testing.T, tracing ...string) {
	t.Helper()
	dir, db := tempDB(t)
	addr := "127.0.0.1:" + freePort(t)
	out := filepath.Join(dir, "out")
	path := writeSQLiteConfig(t, dir, db, append([]string{
		"listen: " + addr + "\n",
		"routes: [{name: partner, token_env: TEST_PARTNER_TOKEN}]\n",
		"sinks: [{name: files, kind: file, dir: " + out + ", events: [\"*\"]}]\n",
	}, tracing...)...)
	t.Setenv("TEST_PARTNER_TOKEN", partnerToken)
	t.Setenv("SCRIBEHOOK_API_KEY", "") // no service to resolve the job through
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr sandboxtest.Buffer
	done := startCmd(ctx, nil, io.Discard, &stderr, "--config", path, "serve")
	waitServing(t, "http://"+addr+"/readyz", done, &stderr)
	status, body := httpDo(t, http.MethodPost, "http://"+addr+"/v1/callbacks/"+partnerToken,
		http.Header{"Content-Type": {"application/json"}},
		[]byte(`{"id":"traced-job","event":"transcription.error","error":{"code":500,"message":"audio unreachable"}}`))
	if status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, body)
	}
	testwait.For(t, "the event in the file sink", 30*time.Second, func() bool {
		entries, _ := os.ReadDir(out)
		return len(entries) > 0
	})
	cancel()
	if err := waitEnded(t, done, 30*time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "tr4ce-key") {
		t.Errorf("the export headers are in the logs:\n%s", stderr.String())
	}
}

// Off by default: serve builds no exporter and dials nothing, even with OpenTelemetry's own
// variables pointing at a collector.
func TestServeTracingOffDialsNothing(t *testing.T) {
	col := testotlp.NewHTTP(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+col.Endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"+col.Endpoint+"/v1/traces")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	serveTraced(t)
	if n, e := col.Conns(), col.Exports(); n != 0 || e != 0 {
		t.Fatalf("the collector got %d connections, %d exports", n, e)
	}
}
