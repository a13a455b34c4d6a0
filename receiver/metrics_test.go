package receiver

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

func TestMetrics(t *testing.T) {
	sw := &switchIngester{}
	h := newHarness(t, withConfig(func(c *Config) {
		c.BodyLimit = 8192
		sw.inner, c.Ingester = c.Ingester, sw // the real batcher, behind a switch
	}))
	other := h.jobToken("another-job", api.KindPreRecorded)

	// The script: each line of want below counts one of these.
	h.ack(h.post(testRouteToken, errorBody(t, jobID), nil))                                                            // job.error stored
	h.ack(h.post(testRouteToken, errorBody(t, jobID), nil))                                                            // job.error duplicate
	h.ack(h.post(testRouteToken, liveBody(t, sessionID, transcript("u1", true, "hi")), nil))                           // live.message stored
	h.ack(h.post(testRouteToken, liveBody(t, sessionID, transcript("u2", false, "h")), nil))                           // live.message stored
	h.ack(h.post(testRouteToken, []byte(`{"hello":1}`), nil))                                                          // unknown quarantined
	h.post("not-a-token", errorBody(t, jobID), nil)                                                                    // unknown unauthorized
	h.post(testSignedToken, []byte(`{"event":"x","payload":{"id":"y"}}`), nil)                                         // unknown unauthorized
	h.post(other, errorBody(t, jobID), nil)                                                                            // job.error unauthorized
	h.post(testRouteToken, bytes.Repeat([]byte("x"), 9000), nil)                                                       // unknown too_large
	h.post(testRouteToken, gzipped(t, bytes.Repeat([]byte(" "), 9000)), map[string]string{"Content-Encoding": "gzip"}) // unknown too_large
	sw.fail.Store(true)
	h.post(testRouteToken, liveBody(t, sessionID, transcript("u3", true, "lost")), nil) // live.message error
	sw.fail.Store(false)

	text := h.metricsText()
	for _, line := range []string{
		`scribehook_deliveries_total{kind="job.error",outcome="stored"} 1`,
		`scribehook_deliveries_total{kind="job.error",outcome="duplicate"} 1`,
		`scribehook_deliveries_total{kind="job.error",outcome="unauthorized"} 1`,
		`scribehook_deliveries_total{kind="live.message",outcome="stored"} 2`,
		`scribehook_deliveries_total{kind="live.message",outcome="error"} 1`,
		`scribehook_deliveries_total{kind="unknown",outcome="quarantined"} 1`,
		`scribehook_deliveries_total{kind="unknown",outcome="unauthorized"} 2`,
		`scribehook_deliveries_total{kind="unknown",outcome="too_large"} 2`,
		`scribehook_ack_seconds_count 5`,
		`scribehook_ack_seconds_bucket{le="0.0005"}`,
		`scribehook_ack_seconds_bucket{le="1"}`,
		`scribehook_inbox_backlog 3`,
	} {
		if !strings.Contains(text, line+"\n") && !strings.Contains(text, line+" ") {
			t.Errorf("metrics lack %q", line)
		}
	}
	if n := strings.Count(text, "scribehook_deliveries_total{"); n != 8 {
		t.Errorf("%d delivery series, want 8:\n%s", n, text)
	}

	// The backlog is cached for a second: scrapes stay cheap.
	h.ack(h.post(testRouteToken, errorBody(t, "job-b"), nil))
	if text := h.metricsText(); !strings.Contains(text, "scribehook_inbox_backlog 3\n") {
		t.Errorf("backlog refreshed within a second")
	}
	time.Sleep(1100 * time.Millisecond)
	if text := h.metricsText(); !strings.Contains(text, "scribehook_inbox_backlog 4\n") {
		t.Errorf("backlog not refreshed after a second")
	}
}

func (h *harness) metricsText() string {
	h.t.Helper()
	r := h.read("/metrics")
	if r.status != 200 {
		h.t.Fatalf("metrics: %d %s", r.status, r.body)
	}
	return string(r.body)
}
