package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testwait"
)

// counts is how many times each event id arrived.
func (h *signedHook) counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.seen)
}

// idsOf lists the ids of the events that arrived whose type typ matches (a glob), sorted.
func (h *signedHook) idsOf(typ string) []string {
	firsts, _, _ := h.result()
	var out []string
	for _, ev := range firsts {
		if api.MatchEventType(typ, ev.Type) {
			out = append(out, ev.ID)
		}
	}
	slices.Sort(out)
	return out
}

// replayServe runs serve on the config at path until the test ends or stop is called.
type replayServe struct {
	cancel context.CancelFunc
	done   <-chan error
	logs   *sandboxtest.Buffer
}

func startServe(t *testing.T, path, addr string) *replayServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &replayServe{cancel: cancel, logs: &sandboxtest.Buffer{}}
	s.done = startCmd(ctx, nil, io.Discard, s.logs, "--config", path, "serve")
	t.Cleanup(func() { s.stop(t) })
	waitServing(t, "http://"+addr+"/readyz", s.done, s.logs)
	return s
}

func (s *replayServe) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	if err := waitEnded(t, s.done, 30*time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.logs.String())
	}
}

// TestE2EReplayAndBackfillThroughServe: serve delivers jobs' events to a webhook; the replay
// command (beside the running serve), the read API's replay and, after a restart with a second
// sink, its backfill deliver exactly the events of their window again, under the same ids.
func TestE2EReplayAndBackfillThroughServe(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	readToken := "cmVhZC10b2tlbi1mb3ItcmVwbGF5LXRlc3RzLTQy"
	target, late := newSignedHook(t, secret), newSignedHook(t, secret)
	dir, db := tempDB(t)
	addr := "127.0.0.1:" + freePort(t)
	hookSink := "  - {name: hook, kind: webhook, url: " + target.URL + ", secret_env: TEST_HOOK_SECRET, allow: [127.0.0.0/8], events: [\"*\"]}\n"
	lines := []string{"listen: " + addr + "\n", "routes: [{name: partner, token_env: TEST_PARTNER_TOKEN}]\n", "sinks:\n", hookSink}
	path := writeSQLiteConfig(t, dir, db, lines...)
	t.Setenv("TEST_PARTNER_TOKEN", partnerToken)
	t.Setenv("TEST_HOOK_SECRET", secret)
	t.Setenv("SCRIBEHOOK_READ_TOKEN", readToken)
	t.Setenv("SCRIBEHOOK_API_KEY", "")
	srv := startServe(t, path, addr)
	base := "http://" + addr
	post := func(body string) {
		t.Helper()
		status, b := httpDo(t, http.MethodPost, base+"/v1/callbacks/"+partnerToken, http.Header{"Content-Type": {"application/json"}}, []byte(body))
		if status != http.StatusOK {
			t.Fatalf("callback: %d %s", status, b)
		}
	}
	failed := func(job string) string {
		return `{"id":"` + job + `","event":"transcription.error","error":{"code":500,"message":"audio unreachable"}}`
	}
	succeeded := func(job string) string {
		return `{"id":"` + job + `","event":"transcription.success","payload":{"metadata":{"audio_duration":1},"transcription":{"full_transcript":"hello","languages":["en"],"utterances":[]}}}`
	}
	jobsOf := func(h *signedHook) []string {
		firsts, _, _ := h.result()
		var out []string
		for _, ev := range firsts {
			if !slices.Contains(out, ev.JobID) {
				out = append(out, ev.JobID)
			}
		}
		slices.Sort(out)
		return out
	}
	since := time.Now().UTC()
	for _, j := range []string{"job-a", "job-b", "job-c"} {
		post(failed(j))
	}
	testwait.For(t, "the first jobs' events at the target", 30*time.Second, func() bool { return len(jobsOf(target)) == 3 })
	time.Sleep(300 * time.Millisecond) // every event of those jobs is delivered
	first := target.counts()
	mid := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	for _, j := range []string{"job-d", "job-e"} {
		post(succeeded(j))
	}
	testwait.For(t, "the later jobs' events at the target", 30*time.Second, func() bool { return len(jobsOf(target)) == 5 })
	time.Sleep(300 * time.Millisecond)
	all := target.counts()
	for id, n := range all {
		if n != 1 {
			t.Fatalf("before any replay, event %s arrived %d times", id, n)
		}
	}
	failedIDs, succeededIDs := target.idsOf("job.failed"), target.idsOf("job.succeeded")
	if len(failedIDs) != 3 || len(succeededIDs) != 2 {
		t.Fatalf("events: %d job.failed, %d job.succeeded (of %d), want 3 and 2", len(failedIDs), len(succeededIDs), len(all))
	}
	t.Logf("%d events delivered: %v", len(all), all)

	// waitCounts waits until each event has arrived want(id) times, then checks none more.
	waitCounts := func(what string, want func(id string) int) {
		t.Helper()
		testwait.For(t, what, 30*time.Second, func() bool {
			got := target.counts()
			for id := range all {
				if got[id] < want(id) {
					return false
				}
			}
			return true
		})
		time.Sleep(300 * time.Millisecond)
		for id, n := range target.counts() {
			if n != want(id) {
				t.Errorf("%s: event %s arrived %d times, want %d", what, id, n, want(id))
			}
		}
		if _, _, bad := target.result(); bad != 0 {
			t.Errorf("%s: %d deliveries failed verification", what, bad)
		}
	}
	times := map[string]int{}
	for id := range all {
		times[id] = 1
	}
	add := func(ids []string) {
		for _, id := range ids {
			times[id]++
		}
	}
	at := func(tm time.Time) string { return tm.Format(time.RFC3339Nano) }

	// The command, beside the running serve: --type job.failed.
	out, _, err := runCmd(context.Background(), nil, "--config", path, "replay", "--sink", "hook", "--since", at(since), "--type", "job.failed")
	if err != nil {
		t.Fatalf("replay --type: %v", err)
	}
	if want := "hook: queued 3 again, queued 0 by backfill; 0 already queued, " + fmt.Sprint(len(all)-3) + " not taken\n"; out != want {
		t.Errorf("replay --type printed %q, want %q", out, want)
	}
	add(failedIDs)
	waitCounts("replay --type job.failed", func(id string) int { return times[id] })

	// --until: the window of the first three jobs, every type.
	out, _, err = runCmd(context.Background(), nil, "--config", path, "replay", "--sink", "hook", "--since", at(since), "--until", at(mid), "-o", "json")
	if err != nil {
		t.Fatalf("replay --until: %v", err)
	}
	var rep struct {
		Requeued []string `json:"requeued"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("replay -o json: %v: %s", err, out)
	}
	slices.Sort(rep.Requeued)
	if want := slices.Sorted(maps.Keys(first)); !slices.Equal(rep.Requeued, want) {
		t.Errorf("replay --until requeued %v, want the first jobs' events %v", rep.Requeued, want)
	}
	add(rep.Requeued)
	waitCounts("replay --until", func(id string) int { return times[id] })

	// A dry run queues nothing; an unknown sink is refused with the configured names.
	if out, _, err = runCmd(context.Background(), nil, "--config", path, "replay", "--sink", "hook", "--since", "1h", "--dry-run"); err != nil ||
		!strings.HasPrefix(out, fmt.Sprintf("hook: would queue %d again", len(all))) {
		t.Errorf("replay --dry-run: %q, %v", out, err)
	}
	if _, _, err = runCmd(context.Background(), nil, "--config", path, "replay", "--sink", "nope", "--since", "1h"); err == nil ||
		!strings.Contains(err.Error(), `unknown sink "nope": the sinks are hook`) {
		t.Errorf("replay of an unknown sink: %v", err)
	}

	// The read API: bearer first, validation naming the field and the rule, then the replay.
	h := http.Header{"Content-Type": {"application/json"}}
	if status, _ := httpDo(t, http.MethodPost, base+"/v1/sinks/hook/replay", h, []byte(`{"since":"`+at(since)+`"}`)); status != http.StatusUnauthorized {
		t.Errorf("replay without the token: %d, want 401", status)
	}
	h.Set("Authorization", "Bearer "+readToken)
	status, b := httpDo(t, http.MethodPost, base+"/v1/sinks/hook/replay", h, []byte(`{"since":"yesterday-ish","type":["job.nothing"]}`))
	if status != http.StatusBadRequest || !bytes.Contains(b, []byte("since: must be an ISO 8601 date-time")) ||
		!bytes.Contains(b, []byte("type[0]: must match an event type")) || bytes.Contains(b, []byte("yesterday-ish")) || bytes.Contains(b, []byte("job.nothing")) {
		t.Errorf("invalid window: %d %s", status, b)
	}
	if status, b := httpDo(t, http.MethodPost, base+"/v1/sinks/nope/replay", h, []byte(`{"since":"`+at(since)+`"}`)); status != http.StatusNotFound ||
		!bytes.Contains(b, []byte("the sinks are: hook")) {
		t.Errorf("replay of an unknown sink: %d %s", status, b)
	}
	status, b = httpDo(t, http.MethodPost, base+"/v1/sinks/hook/replay", h, []byte(`{"since":"`+at(since)+`","type":["job.succeeded"]}`))
	var apiRep struct {
		Requeued   []string `json:"requeued"`
		Backfilled []string `json:"backfilled"`
		Skipped    int      `json:"skipped"`
	}
	if err := json.Unmarshal(b, &apiRep); err != nil || status != http.StatusAccepted {
		t.Fatalf("POST /v1/sinks/hook/replay: %d %s", status, b)
	}
	slices.Sort(apiRep.Requeued)
	if !slices.Equal(apiRep.Requeued, succeededIDs) || len(apiRep.Backfilled) != 0 || apiRep.Skipped != len(all)-2 {
		t.Errorf("POST /v1/sinks/hook/replay = %s, want requeued %v", b, succeededIDs)
	}
	add(succeededIDs)
	waitCounts("the read API's replay", func(id string) int { return times[id] })

	// The history: every delivery of the sink, delivered, newest first, no bodies.
	var hist []map[string]any
	status, b = httpDo(t, http.MethodGet, base+"/v1/sinks/hook/deliveries?limit=1000", h, nil)
	if err := json.Unmarshal(b, &hist); err != nil || status != http.StatusOK {
		t.Fatalf("GET /v1/sinks/hook/deliveries: %d %s", status, b)
	}
	if len(hist) != len(all) {
		t.Errorf("history: %d deliveries, want %d", len(hist), len(all))
	}
	for _, it := range hist {
		if it["status"] != "delivered" || all[it["event_id"].(string)] != 1 || it["event_type"] == "" || it["job_id"] == "" || it["data"] != nil || it["event"] != nil {
			t.Errorf("history item %v", it)
		}
	}
	status, b = httpDo(t, http.MethodGet, base+"/v1/sinks/hook/deliveries?limit=2", h, nil)
	if err := json.Unmarshal(b, &hist); err != nil || status != http.StatusOK || len(hist) != 2 {
		t.Errorf("history ?limit=2: %d %s", status, b)
	}
	if status, b := httpDo(t, http.MethodGet, base+"/v1/sinks/hook/deliveries?status=lost", h, nil); status != http.StatusBadRequest ||
		!bytes.Contains(b, []byte("status: must be queued, delivered or dead")) || bytes.Contains(b, []byte("lost")) {
		t.Errorf("history ?status=lost: %d %s", status, b)
	}

	// A sink added later: restart with it, backfill its filter's past events.
	srv.stop(t)
	lateSink := "  - {name: late, kind: webhook, url: " + late.URL + ", secret_env: TEST_HOOK_SECRET, allow: [127.0.0.0/8], events: [\"job.succeeded\"]}\n"
	path = writeSQLiteConfig(t, dir, db, append(lines, lateSink)...)
	startServe(t, path, addr)
	if n := late.count(); n != 0 {
		t.Fatalf("the late sink got %d deliveries before its backfill", n)
	}
	out, _, err = runCmd(context.Background(), nil, "--config", path, "replay", "--sink", "late", "--since", at(since))
	if err != nil {
		t.Fatalf("backfill: %v", err)
	}
	if want := fmt.Sprintf("late: queued 0 again, queued 2 by backfill; 0 already queued, %d not taken\n", len(all)-2); out != want {
		t.Errorf("backfill printed %q, want %q", out, want)
	}
	testwait.For(t, "the backfill at the late sink", 30*time.Second, func() bool { return late.distinct() == 2 })
	time.Sleep(300 * time.Millisecond)
	if got := late.idsOf("*"); !slices.Equal(got, succeededIDs) {
		t.Errorf("the late sink got %v, want the job.succeeded events %v", got, succeededIDs)
	}
	if _, dups, bad := late.result(); dups != 0 || bad != 0 {
		t.Errorf("the late sink: %d duplicates, %d bad", dups, bad)
	}
	// The same command again: the backfilled deliveries are delivered now, so it queues them
	// again (a replay), and backfills nothing twice.
	out, _, err = runCmd(context.Background(), nil, "--config", path, "replay", "--sink", "late", "--since", at(since))
	if want := fmt.Sprintf("late: queued 2 again, queued 0 by backfill; 0 already queued, %d not taken\n", len(all)-2); err != nil || out != want {
		t.Errorf("second run: %q, %v; want %q", out, err, want)
	}
	testwait.For(t, "the replay at the late sink", 30*time.Second, func() bool {
		c := late.counts()
		return c[succeededIDs[0]] == 2 && c[succeededIDs[1]] == 2
	})
}
