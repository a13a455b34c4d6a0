package scribehook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/signature"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

// A sink's when, body and headers, from YAML, through the kit with the sandbox: the webhook
// target gets only the job.succeeded of the job the when takes, as {id, text} with the header
// the sink adds, signed over that body; the issue's own example compiles and takes nothing of a
// 12-second recording; a when that fails over an event (a field it lacks) does not deliver it
// and is counted.
func TestSinkWhenBodyHeadersThroughTheKit(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	dir := t.TempDir()
	hook := newHookTarget(t)
	yaml := `sinks:
  - name: media
    kind: webhook
    url: ` + hook.srv.URL + `/media
    allow: [127.0.0.1]
    secret_env: MEDIA_SECRET
    events: ["*"]
    when: 'event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 5.0 && event.custom_metadata.team == "media"'
    body: '{"id": event.job_id, "text": event.data.result.transcription.full_transcript}'
    headers:
      X-Team: 'event.custom_metadata.team'
      X-Languages: 'event.data.result.transcription.languages.join(",")'
  - name: long
    kind: webhook
    url: ` + hook.srv.URL + `/long
    allow: [127.0.0.1]
    events: ["*"]
    when: 'event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0'
  - name: strict
    kind: webhook
    url: ` + hook.srv.URL + `/strict
    allow: [127.0.0.1]
    events: ["*"]
    when: 'event.data.result.metadata.audio_duration > 5.0'
`
	path := filepath.Join(dir, "scribehook.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.LoadOnto(kitConfig(dir, ln, w.sandbox), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := strongSecret(t)
	logs := &lockedBuffer{}
	logger := logrus.New()
	logger.SetOutput(logs)
	logger.SetFormatter(&logrus.JSONFormatter{})
	// A Go event handler filters with a compiled expression the same way.
	mediaOnly, err := sinkexpr.CompileWhen(`event.custom_metadata.team == "media"`)
	if err != nil {
		t.Fatal(err)
	}
	goHandler := &recorder{}
	k := startKit(t, cfg, ln, WithLogger(logger), WithService(w.service),
		WithEventHandler(EventHandler{Name: "go-media", Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}, When: mediaOnly}, Func: goHandler.handle}),
		WithSecrets(configs.Secrets{APIKey: testKey, Sinks: map[string]string{"media": secret}}))

	ctx := context.Background()
	subm, err := k.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, team := range []string{"sales", "media"} {
		created, err := subm.Submit(ctx, api.PreRecordedRequest{AudioURL: w.audio, CustomMetadata: json.RawMessage(`{"team":"` + team + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, created.ID)
	}
	var text string
	for _, id := range jobs {
		waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		rec, err := WaitJob(waitCtx, k.Records(), id, 0, nil)
		cancel()
		if err != nil || rec.Job.Status != api.StatusDone {
			t.Fatalf("job %s: %v", id, err)
		}
		res, err := rec.Job.DecodeResult()
		if err != nil || res == nil || res.Transcription == nil {
			t.Fatalf("result of %s: %v", id, err)
		}
		text = res.Transcription.FullTranscript
	}
	media := jobs[1]
	byPath := func() map[string][]hookRequest {
		out := map[string][]hookRequest{}
		for _, r := range hook.requests() {
			out[r.path] = append(out[r.path], r)
		}
		return out
	}
	// strict is sent both job.succeeded (each has a result), nothing else.
	testwait.For(t, "the deliveries at the target", 30*time.Second, func() bool {
		got := byPath()
		return len(got["/media"]) == 1 && len(got["/strict"]) == 2
	})
	// Events queued after: wait for the pipeline to settle, then nothing more arrived.
	time.Sleep(500 * time.Millisecond)
	got := byPath()
	if len(got) != 2 || len(got["/media"]) != 1 || len(got["/strict"]) != 2 || len(got["/long"]) != 0 {
		t.Fatalf("requests by path: media %d, strict %d, long %d (all %d paths), want 1, 2, 0", len(got["/media"]), len(got["/strict"]), len(got["/long"]), len(got))
	}
	testwait.For(t, "the Go handler's event", 10*time.Second, func() bool { return len(goHandler.of(media)) == 1 })
	if n := len(goHandler.of(jobs[0])); n != 0 {
		t.Errorf("the Go handler got %d events of the sales job, want none", n)
	}
	req := got["/media"][0]
	var body map[string]string
	if err := json.Unmarshal(req.body, &body); err != nil {
		t.Fatalf("body %s: %v", req.body, err)
	}
	if len(body) != 2 || body["id"] != media || body["text"] != text || text == "" {
		t.Errorf("body = %s, want {id: %s, text: %q}", req.body, media, text)
	}
	if req.header.Get("X-Team") != "media" || req.header.Get("X-Languages") != "en" {
		t.Errorf("headers X-Team %q, X-Languages %q; want media, en", req.header.Get("X-Team"), req.header.Get("X-Languages"))
	}
	verifier, err := signature.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifier.Verify(req.body, req.header); err != nil {
		t.Errorf("signature over the projected body: %v", err)
	}
	for _, r := range got["/strict"] {
		var ev api.Event
		if err := json.Unmarshal(r.body, &ev); err != nil || ev.Type != api.EventJobSucceeded {
			t.Errorf("strict got %s (%v), want job.succeeded envelopes", r.body, err)
		}
	}

	// strict's when failed over every other event (job.created…, subtitles.ready): counted.
	if n := testmetrics.Value(t, k.Metrics(), "scribehook_sink_when_errors_total", "sink", "strict"); n < 2 {
		t.Errorf("strict's when errors = %v, want at least the two subtitles.ready", n)
	}
	if n, ok := testmetrics.Series(t, k.Metrics(), "scribehook_sink_when_errors_total", "sink", "media"); ok {
		t.Errorf("media's when, guarded by the type, counted %v errors", n)
	}
	// Logged once for the sink, however many events it failed over.
	var warned []string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "the sink's when failed") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `"sink":"strict"`) || !strings.Contains(warned[0], "no such key: result") {
		t.Errorf("when failures logged %d times: %q, want once for strict with the error", len(warned), warned)
	}
}

// lockedBuffer is a log output the kit's goroutines write while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
