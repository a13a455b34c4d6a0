package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/submitter"
)

func TestParseFaults(t *testing.T) {
	cases := []struct {
		spec    string
		want    sandbox.Faults
		wantErr string
	}{
		{"", sandbox.Faults{}, ""},
		{"none", sandbox.Faults{}, ""},
		{"duplicate=2,delay=250ms,reorder=4,fail-first=3,fail-jobs=0.5,seed=9",
			sandbox.Faults{DuplicateCallbacks: 2, CallbackDelay: 250 * time.Millisecond, ReorderLive: 4, FailFirstAttempts: 3, FailJobRate: 0.5, Seed: 9}, ""},
		{"fail-jobs=1.5", sandbox.Faults{}, "faults: fail-jobs: faults: fail-jobs must be between 0 and 1 (got 1.5)"},
		{"duplicate=-1", sandbox.Faults{}, "faults: duplicate: duplicate must not be negative (got -1)"},
		{"explode=1", sandbox.Faults{}, `faults: unknown fault "explode" (known: duplicate, delay, reorder, fail-first, fail-jobs, drop, seed)`},
		{"drop=0.5,seed=3", sandbox.Faults{DropCallbacks: 0.5, Seed: 3}, ""},
		{"drop=1.01", sandbox.Faults{}, "faults: drop: faults: drop must be between 0 and 1 (got 1.01)"},
		{"delay", sandbox.Faults{}, `faults: "delay" must be key=value`},
	}
	for _, tc := range cases {
		got, err := sandbox.ParseFaults(tc.spec)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseFaults(%q) error = %v, want %q", tc.spec, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseFaults(%q) = %+v, %v", tc.spec, got, err)
		}
	}
}

func createWithCallback(t *testing.T, e *env, path string) string {
	t.Helper()
	audioURL := e.files.put("/f.wav", speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000))
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{
		AudioURL: audioURL, Callback: api.Bool(true), CallbackConfig: &api.CallbackConfig{URL: e.hooks.url(path)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return created.ID
}

func TestFaultDuplicateCallbacks(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.Faults.DuplicateCallbacks = 2 })
	id := createWithCallback(t, e, "/dup")
	hooks := e.hooks.waitFor(t, "3 deliveries", func(h []hook) bool { return len(h) >= 3 })
	time.Sleep(100 * time.Millisecond)
	if n := len(e.hooks.all()); n != 3 {
		t.Fatalf("deliveries = %d, want 3", n)
	}
	for _, h := range hooks[1:] {
		if !bytes.Equal(h.Body, hooks[0].Body) || !bytes.Contains(h.Body, []byte(id)) {
			t.Errorf("duplicate differs from the first delivery")
		}
	}
}

func TestFaultFailFirstAttemptsRetriesOnSchedule(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) {
		c.Faults.FailFirstAttempts = 2
		c.Callbacks = sandbox.CallbackPolicy{Schedule: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, time.Second}, Timeout: time.Second}
	})
	createWithCallback(t, e, "/ff")
	var times []time.Time
	start := time.Now()
	for len(times) < 3 && time.Since(start) < 10*time.Second {
		<-e.hooks.notify
		times = append(times, time.Now())
	}
	time.Sleep(1500 * time.Millisecond)
	if n := len(e.hooks.all()); n != 3 {
		t.Fatalf("deliveries = %d, want 3 (two forced failures, then success)", n)
	}
	// The waits follow the schedule: ≥100 ms, then ≥200 ms.
	if d := times[1].Sub(times[0]); d < 90*time.Millisecond {
		t.Errorf("first retry after %v, want ≥100ms", d)
	}
	if d := times[2].Sub(times[1]); d < 190*time.Millisecond {
		t.Errorf("second retry after %v, want ≥200ms", d)
	}
}

func TestCallbackRetriesNon2xxThenGivesUp(t *testing.T) {
	e := newEnv(t, nil) // schedule: 3 retries of 20 ms
	e.hooks.status = func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	}
	createWithCallback(t, e, "/retry")
	e.hooks.waitFor(t, "success on the third attempt", func(h []hook) bool { return len(h) >= 3 })
	time.Sleep(200 * time.Millisecond)
	if n := len(e.hooks.all()); n != 3 {
		t.Fatalf("attempts = %d, want 3", n)
	}

	e2 := newEnv(t, nil)
	e2.hooks.status = func(int) int { return http.StatusInternalServerError }
	createWithCallback(t, e2, "/dead")
	e2.hooks.waitFor(t, "4 attempts", func(h []hook) bool { return len(h) >= 4 })
	time.Sleep(300 * time.Millisecond)
	if n := len(e2.hooks.all()); n != 4 {
		t.Fatalf("attempts against a dead receiver = %d, want 1 + 3 retries", n)
	}
}

func TestFaultCallbackDelay(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.Faults.CallbackDelay = 400 * time.Millisecond })
	id := createWithCallback(t, e, "/slow")
	job := e.waitJob(id, api.KindPreRecorded)
	e.hooks.waitFor(t, "delayed callback", func(h []hook) bool { return len(h) == 1 })
	if d := time.Since(job.CompletedAt.Time); d < 380*time.Millisecond {
		t.Errorf("callback arrived %v after completion, want ≥400ms", d)
	}
}

func TestFaultFailJobs(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.Faults.FailJobRate = 1 })
	id := createWithCallback(t, e, "/fj")
	job := e.waitJob(id, api.KindPreRecorded)
	if job.Status != api.StatusError || *job.ErrorCode != 500 {
		t.Fatalf("job = %s %v", job.Status, job.ErrorCode)
	}
	hooks := e.hooks.waitFor(t, "error callback", func(h []hook) bool { return len(h) == 1 })
	var cb api.JobCallback
	decodeJSON(t, hooks[0].Body, &cb)
	if cb.Event != api.EventTranscriptionError || cb.Error.Code != 500 {
		t.Errorf("callback = %+v", cb)
	}
	// A rate between 0 and 1 fails some, deterministically for a seed.
	e2 := newEnv(t, func(c *sandbox.Config) { c.Faults.FailJobRate = 0.5; c.Faults.Seed = 42; c.Workers = 1 })
	audioURL := e2.files.put("/f.wav", speechLike(t, 1, nil, 16000))
	failed := 0
	for i := 0; i < 20; i++ {
		created, err := e2.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: audioURL})
		if err != nil {
			t.Fatal(err)
		}
		if e2.waitJob(created.ID, api.KindPreRecorded).Status == api.StatusError {
			failed++
		}
	}
	if failed == 0 || failed == 20 {
		t.Errorf("fail-jobs=0.5 failed %d of 20", failed)
	}
}

func TestFaultReorderLiveCallbacks(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.Faults.ReorderLive = 5; c.Faults.Seed = 3 })
	on := api.Bool(true)
	req := api.LiveRequest{
		Endpointing: api.Float(0.3),
		Callback:    on,
		CallbackConfig: &api.LiveCallbackConfig{URL: e.hooks.url("/ro"), MessagesConfig: api.MessagesConfig{
			ReceiveAcknowledgments: on, ReceiveLifecycleEvents: on,
		}},
	}
	_, msgs := liveRun(t, e, req, pcm16(speechLike(t, 2, [][2]float64{{0.3, 1.2}}, 16000)), submitter.StreamOptions{})
	var sent []string
	for _, m := range msgs {
		if m.Type == api.MessageAudioChunk {
			sent = append(sent, string(testjson.Marshal(t, m)))
		}
	}
	e.hooks.waitFor(t, "end_session", func(h []hook) bool {
		for _, x := range h {
			if bytes.Contains(x.Body, []byte(`"live.end_session"`)) {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	ackTimes := ackCallbackTimes(t, e.hooks.all())
	if len(ackTimes) != 20 {
		t.Fatalf("ack callbacks = %d, want 20 (every one delivered)", len(ackTimes))
	}
	if sort.Float64sAreSorted(ackTimes) {
		t.Errorf("reorder fault delivered in order: %v", ackTimes)
	}
	sorted := append([]float64(nil), ackTimes...)
	sort.Float64s(sorted)
	want := make([]float64, 20)
	for i := range want {
		want[i] = float64(i) / 10
	}
	if !reflect.DeepEqual(sorted, want) {
		t.Errorf("ack callbacks = %v", sorted)
	}
	_ = sent
}

// TestFaultDropCallbacks: drop=1 sends no callback at all, not even a retry, while the job
// ends done at the service; drop=0.5 (seeded) loses some of 20 jobs' callbacks and sends the
// others exactly once each.
func TestFaultDropCallbacks(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) {
		c.Faults.DropCallbacks = 1
		c.Callbacks = sandbox.CallbackPolicy{Schedule: []time.Duration{50 * time.Millisecond}, Timeout: time.Second}
	})
	id := createWithCallback(t, e, "/drop")
	if job := e.waitJob(id, api.KindPreRecorded); job.Status != api.StatusDone {
		t.Fatalf("job = %s, want done at the service", job.Status)
	}
	time.Sleep(300 * time.Millisecond) // past the retry schedule
	if n := len(e.hooks.all()); n != 0 {
		t.Fatalf("deliveries = %d, want 0", n)
	}

	e2 := newEnv(t, func(c *sandbox.Config) { c.Faults.DropCallbacks = 0.5; c.Faults.Seed = 42; c.Workers = 1 })
	audioURL := e2.files.put("/f.wav", speechLike(t, 1, nil, 16000))
	ids := map[string]bool{}
	for i := 0; i < 20; i++ {
		created, err := e2.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{
			AudioURL: audioURL, Callback: api.Bool(true), CallbackConfig: &api.CallbackConfig{URL: e2.hooks.url("/half")},
		})
		if err != nil {
			t.Fatal(err)
		}
		e2.waitJob(created.ID, api.KindPreRecorded)
		ids[created.ID] = true
	}
	time.Sleep(500 * time.Millisecond)
	got := map[string]int{}
	for _, h := range e2.hooks.all() {
		var cb api.JobCallback
		decodeJSON(t, h.Body, &cb)
		if !ids[cb.ID] {
			t.Errorf("a callback for an unknown job %s", cb.ID)
		}
		got[cb.ID]++
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("job %s: %d callbacks, want 1", id, n)
		}
	}
	if len(got) == 0 || len(got) == 20 {
		t.Errorf("drop=0.5 delivered the callbacks of %d of 20 jobs", len(got))
	}
}

// TestFaultDropLiveCallbacks: drop=0.5 (seeded) loses some of a session's message callbacks,
// each one whole and never retried, and sends the others once each, in session order; the
// session's record at the service still holds every message.
func TestFaultDropLiveCallbacks(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.Faults.DropCallbacks = 0.5; c.Faults.Seed = 11 })
	on := api.Bool(true)
	req := api.LiveRequest{
		Endpointing: api.Float(0.3),
		Callback:    on,
		CallbackConfig: &api.LiveCallbackConfig{URL: e.hooks.url("/dl"), MessagesConfig: api.MessagesConfig{
			ReceiveAcknowledgments: on, ReceiveLifecycleEvents: on,
		}},
	}
	created, msgs := liveRun(t, e, req, pcm16(speechLike(t, 2, [][2]float64{{0.3, 1.2}}, 16000)), submitter.StreamOptions{})
	job := e.waitJob(created.ID, api.KindLive)
	res, err := job.DecodeResult()
	if err != nil || res == nil {
		t.Fatalf("the session's result: %v", err)
	}
	kept := 0
	for _, m := range res.Messages {
		if strings.Contains(m, `"type":"audio_chunk"`) {
			kept++
		}
	}
	if kept != 20 {
		t.Errorf("the session's record keeps %d acknowledgments, want 20", kept)
	}
	acks := 0
	for _, m := range msgs {
		if m.Type == api.MessageAudioChunk {
			acks++
		}
	}
	if acks != 20 {
		t.Fatalf("the WebSocket acknowledged %d chunks, want 20 (drop touches callbacks only)", acks)
	}
	time.Sleep(time.Second) // every callback that will be sent is sent by now
	ackTimes := ackCallbackTimes(t, e.hooks.all())
	if len(ackTimes) == 0 || len(ackTimes) >= 20 {
		t.Fatalf("drop=0.5 delivered %d of 20 acknowledgment callbacks", len(ackTimes))
	}
	if !sort.Float64sAreSorted(ackTimes) {
		t.Errorf("the delivered callbacks are out of session order: %v", ackTimes)
	}
	seen := map[float64]bool{}
	for _, at := range ackTimes {
		if seen[at] {
			t.Errorf("the acknowledgment at %v was delivered twice", at)
		}
		seen[at] = true
	}
}

// ackCallbackTimes is the start of the acknowledged range of every live.audio_chunk callback
// among hooks, in the order they arrived.
func ackCallbackTimes(t *testing.T, hooks []hook) []float64 {
	t.Helper()
	var out []float64
	for _, h := range hooks {
		var cb struct {
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		}
		decodeJSON(t, h.Body, &cb)
		if cb.Event != "live.audio_chunk" {
			continue
		}
		var m api.LiveMessage
		decodeJSON(t, cb.Payload, &m)
		var d api.AudioChunkAckData
		if err := m.DecodeData(&d); err != nil {
			t.Fatalf("acknowledgment data: %v", err)
		}
		out = append(out, d.TimeRange[0])
	}
	return out
}
