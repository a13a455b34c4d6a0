package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/store/sqlite"
)

// TestServeSinkPolicyFromYAML runs serve with sinks whose policy comes from the YAML: a webhook
// at rate 10 (burst 1) delivers a session's 30 events at that rate and no faster while a file
// sink beside it has them all at once; a webhook's event that always fails is attempted on its
// retry schedule [0s, 300ms, 300ms] (the waits no shorter than the schedule less its jitter),
// three times, then dead-lettered.
func TestServeSinkPolicyFromYAML(t *testing.T) {
	const n = 30
	dir, db := tempDB(t)
	addr := "127.0.0.1:" + freePort(t)
	out := filepath.Join(dir, "out")

	var mu sync.Mutex
	var limitedAt []time.Time
	failedAt := map[string][]time.Time{}
	limited := newRecorder(t, func(int, *http.Request, []byte) (int, string) {
		mu.Lock()
		limitedAt = append(limitedAt, time.Now())
		mu.Unlock()
		return http.StatusNoContent, ""
	})
	// The third webhook fails the event of the first transcript, always, and takes the others:
	// one event's three failures stay below the breaker's threshold of five.
	failing := newRecorder(t, func(_ int, r *http.Request, body []byte) (int, string) {
		if !bytes.Contains(body, []byte(`"text":"word 1"`)) {
			return http.StatusNoContent, ""
		}
		mu.Lock()
		id := r.Header.Get("webhook-id")
		failedAt[id] = append(failedAt[id], time.Now())
		mu.Unlock()
		return http.StatusServiceUnavailable, ""
	})
	path := writeSQLiteConfig(t, dir, db,
		"listen: "+addr+"\n",
		"routes: [{name: partner, token_env: TEST_PARTNER_TOKEN}]\n",
		"sinks:\n",
		"  - {name: files, kind: file, dir: "+out+", events: [\"*\"]}\n",
		fmt.Sprintf("  - {name: crm, kind: webhook, url: %q, allow: [127.0.0.0/8], events: [\"*\"],\n", limited.URL),
		"     rate: 10, rate_burst: 1, concurrency: 4, timeout: 2s, retry: [0s, 1s]}\n",
		fmt.Sprintf("  - {name: flaky, kind: webhook, url: %q, allow: [127.0.0.0/8], events: [\"*\"],\n", failing.URL),
		"     retry: [0s, 300ms, 300ms], timeout: 2s}\n",
	)
	t.Setenv("TEST_PARTNER_TOKEN", partnerToken)
	t.Setenv("SCRIBEHOOK_API_KEY", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr sandboxtest.Buffer
	done := startCmd(ctx, nil, io.Discard, &stderr, "--config", path, "serve")
	waitServing(t, "http://"+addr+"/readyz", done, &stderr)

	const session = "5e55d000-0000-4000-8000-0000000000a1"
	start := time.Now()
	for i := 1; i <= n; i++ {
		if status, _, err := postCallback("http://"+addr+"/v1/callbacks/"+partnerToken, liveTranscript(session, i)); err != nil || status != "stored" {
			t.Fatalf("callback %d: %q, %v", i, status, err)
		}
	}
	testwait.For(t, "the file sink's events", 30*time.Second, func() bool { return liveEventFiles(out, session) == n })
	filesDone := time.Since(start)
	mu.Lock()
	crmThen := len(limitedAt)
	mu.Unlock()
	testwait.For(t, "the rate-limited webhook's events", 30*time.Second, func() bool { return limited.count() == n })
	crmDone := time.Since(start)
	t.Logf("files: %d events in %s (the rate-limited webhook had %d then); crm at 10/s: %d in %s",
		n, filesDone.Round(time.Millisecond), crmThen, n, crmDone.Round(time.Millisecond))
	if crmThen >= n {
		t.Errorf("the file sink finished after the rate-limited webhook: it was slowed")
	}
	mu.Lock()
	if span := limitedAt[n-1].Sub(limitedAt[0]); span < 2800*time.Millisecond {
		t.Errorf("30 deliveries at 10/s with a burst of 1 spanned %s, want ≥ 2.8s", span)
	}
	for i := range limitedAt {
		k := 0
		for j := i; j < len(limitedAt) && limitedAt[j].Sub(limitedAt[i]) < time.Second; j++ {
			k++
		}
		if k > 11 {
			t.Errorf("%d deliveries within 1s from delivery %d, want ≤ 11 (10/s, burst 1)", k, i)
			break
		}
	}
	mu.Unlock()

	attempts := func() int {
		mu.Lock()
		defer mu.Unlock()
		k := 0
		for _, at := range failedAt {
			k += len(at)
		}
		return k
	}
	testwait.For(t, "three attempts of the failing event", 30*time.Second, func() bool { return attempts() == 3 })
	time.Sleep(700 * time.Millisecond) // a fourth attempt would come within the schedule's waits
	if c := attempts(); c != 3 {
		t.Errorf("the failing webhook got %d attempts of its failing event, want 3", c)
	}
	mu.Lock()
	for id, at := range failedAt {
		for k := 1; k < len(at); k++ {
			if gap := at[k].Sub(at[k-1]); gap < 240*time.Millisecond {
				t.Errorf("event %s: attempt %d came %s after the previous, want ≥ 240ms (300ms less 20%% jitter)", id, k+1, gap)
			}
		}
	}
	mu.Unlock()
	cancel()
	if err := waitEnded(t, done, 30*time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	st := teststore.OpenSQLite(t, sqlite.Config{Path: db})
	dead, err := st.DeadLetters(t.Context(), "flaky", time.Time{}, 0)
	if err != nil || len(dead) != 1 || dead[0].Attempts != 3 {
		t.Fatalf("dead letters of flaky: %+v, %v; want one, after 3 attempts", dead, err)
	}
	if failing.count() != n+2 {
		t.Errorf("the failing webhook got %d requests, want %d: every event once, the failing one twice more", failing.count(), n+2)
	}
	if dl, _ := st.DeadLetters(t.Context(), "crm", time.Time{}, 0); len(dl) != 0 {
		t.Errorf("crm has %d dead letters", len(dl))
	}
}
