package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/subtitles"
)

func TestE2ESubtitlesArtifactsReadAPIAndFileSink(t *testing.T) {
	root := t.TempDir()
	artifacts, out := filepath.Join(root, "artifacts"), filepath.Join(root, "out")
	l := newLoopWith(t, sandbox.Faults{}, func(o *serverOptions) {
		o.Subtitles = handlers.SubtitleRendering{Dir: artifacts, Profile: subtitles.DefaultProfile(), Formats: []subtitles.Format{subtitles.SRT, subtitles.VTT}}
		o.Sinks = []sinkSetup{fileSink(t, out)}
	})
	ctx := context.Background()
	created, err := l.service.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL: l.files.URL + "/sample.wav", Callback: api.Bool(true),
		CallbackConfig:  &api.CallbackConfig{URL: l.callbackURL(api.KindPreRecorded)},
		Subtitles:       api.Bool(true),
		SubtitlesConfig: &api.SubtitlesConfig{Formats: []string{"srt"}, MaximumCharactersPerRow: api.Int(32)},
		LanguageConfig:  &api.LanguageConfig{Languages: []string{"en"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.waitJob(created.ID)
	arts, err := l.store.Artifacts(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, a := range arts {
		names[a.Name] = true
		if st, err := os.Stat(a.Path); err != nil || st.Size() != a.Size {
			t.Errorf("artifact %s: %v", a.Name, err)
		}
	}
	for _, want := range []string{"subtitles.en.srt", "subtitles.en.vtt", "service.en.srt"} {
		if !names[want] {
			t.Errorf("artifact %s missing (have %v)", want, names)
		}
	}
	// The read API serves our rendering; the job's own maximum_characters_per_row applies.
	get := func(path string) (int, string) {
		code, b := l.get(path)
		return code, string(b)
	}
	code, srt := get("/v1/jobs/" + created.ID + "/subtitles.srt")
	if code != 200 || subtitles.ValidateSRT([]byte(srt)) != nil || !strings.HasPrefix(srt, "1\n00:00:00,330 --> ") || !strings.Contains(srt, "Welcome to scribehook") {
		t.Fatalf("GET subtitles.srt = %d %q", code, srt)
	}
	for _, line := range strings.Split(srt, "\n") {
		if !strings.Contains(line, "-->") && len([]rune(line)) > 32 {
			t.Errorf("line %q exceeds the job's 32 characters", line)
		}
	}
	if code, vtt := get("/v1/jobs/" + created.ID + "/subtitles.vtt"); code != 200 || subtitles.ValidateVTT([]byte(vtt)) != nil {
		t.Errorf("GET subtitles.vtt = %d", code)
	}
	if code, body := get("/v1/jobs/" + created.ID + "/subtitles.srt?lang=fr"); code != 404 || !strings.Contains(body, "srt/en") {
		t.Errorf("missing language = %d %s", code, body)
	}
	// The file sink got the events (job.succeeded, subtitles.ready), the transcript and the files.
	jobDir := filepath.Join(out, created.ID)
	testwait.For(t, "file sink outputs", 30*time.Second, func() bool {
		_, err1 := os.Stat(filepath.Join(jobDir, "transcript.txt"))
		_, err2 := os.Stat(filepath.Join(jobDir, "subtitles.en.srt"))
		return err1 == nil && err2 == nil
	})
	transcript, _ := os.ReadFile(filepath.Join(jobDir, "transcript.txt"))
	if !strings.Contains(string(transcript), "Welcome to scribehook") {
		t.Errorf("transcript.txt = %q", transcript)
	}
	sinkSRT, _ := os.ReadFile(filepath.Join(jobDir, "subtitles.en.srt"))
	if string(sinkSRT) != srt {
		t.Errorf("the file sink's SRT differs from the artifact")
	}
	// The file sink writes an event's files before the event itself: wait for both events.
	var types []string
	testwait.For(t, "both events at the file sink", 30*time.Second, func() bool {
		events, _ := os.ReadDir(filepath.Join(jobDir, "events"))
		types = types[:0]
		for _, e := range events {
			var ev api.Event
			b, _ := os.ReadFile(filepath.Join(jobDir, "events", e.Name()))
			if json.Unmarshal(b, &ev) == nil {
				types = append(types, ev.Type)
			}
		}
		return len(types) >= 2
	})
	slices.Sort(types)
	if strings.Join(types, ",") != "job.succeeded,subtitles.ready" {
		t.Errorf("file sink events = %v", types)
	}
}

func TestE2EDeadWebhookDoesNotStallTheFileSinkAndReplayDeliversEverything(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	target := newSignedHook(t, secret)
	target.setDown(true)
	out := filepath.Join(t.TempDir(), "out")
	l := newLoopWith(t, sandbox.Faults{}, func(o *serverOptions) {
		spec := sinks.Spec{
			Name: "hook", Kind: "webhook", URL: target.URL, SigningSecrets: []string{"whsec_b2xkLXNlY3JldC1iZWZvcmUtcm90YXRpb24=", secret},
			Allow: []string{"127.0.0.0/8"}, Filter: sinks.Filter{Events: []string{"live.*"}},
			Retry: []time.Duration{0, 20 * time.Millisecond, 20 * time.Millisecond}, BreakerThreshold: 1000,
		}
		o.Sinks = []sinkSetup{fileSink(t, out), newSink(t, spec, logx.Discard())}
	})
	ctx := context.Background()
	start := time.Now()
	id := l.liveSession(api.EveryMessage(true))
	stored := l.storedMessages(id, api.MessageEndSession)
	// The file sink keeps up although the webhook fails every attempt beside it.
	testwait.For(t, "every live event in the file sink", 45*time.Second, func() bool {
		return liveEventFiles(out, id) == len(stored)
	})
	t.Logf("file sink: %d live events %v after the session started, webhook down", len(stored), time.Since(start).Round(time.Millisecond))
	// Every webhook delivery ends as a dead letter after its three attempts.
	testwait.For(t, "dead letters", 45*time.Second, func() bool {
		dl, _ := l.store.DeadLetters(ctx, "hook", time.Time{}, 0)
		return len(dl) == len(stored)
	})
	dl, _ := l.store.DeadLetters(ctx, "hook", time.Time{}, 0)
	if dl[0].Attempts != 3 || !strings.Contains(dl[0].LastError, "503") {
		t.Errorf("dead letter = %d attempts, %q", dl[0].Attempts, dl[0].LastError)
	}
	// The read API shows both sinks: the file sink healthy, the webhook's deliveries dead.
	code, b := l.get("/v1/sinks")
	var status []struct {
		Name      string `json:"name"`
		Depth     int64  `json:"depth"`
		Delivered uint64 `json:"delivered"`
		Dead      uint64 `json:"dead"`
		Breaker   string `json:"breaker"`
	}
	if err := json.Unmarshal(b, &status); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/sinks: %d, %v", code, err)
	}
	if len(status) != 2 || status[0].Name != "files" || status[0].Delivered < uint64(len(stored)) || status[1].Name != "hook" ||
		status[1].Dead != uint64(len(stored)) || status[1].Depth != 0 || status[1].Delivered != 0 {
		t.Errorf("GET /v1/sinks = %+v", status)
	}
	// The server comes back; the command replays them; each event arrives once, signed.
	target.setDown(false)
	t.Setenv("SCRIBEHOOK_STORE_DSN", l.dbPath)
	if _, _, err := runCmd(ctx, nil, "deadletters", "replay", "--sink", "hook"); err != nil {
		t.Fatalf("deadletters replay: %v", err)
	}
	testwait.For(t, "replayed deliveries", 45*time.Second, func() bool {
		return target.distinct() == len(stored)
	})
	time.Sleep(200 * time.Millisecond)
	firsts, dup, bad := target.result()
	if n := len(firsts); n != len(stored) || dup != 0 || bad != 0 {
		t.Errorf("webhook got %d distinct events (want %d), %d duplicates, %d bad signatures", n, len(stored), dup, bad)
	}
	if left, _ := l.store.DeadLetters(ctx, "hook", time.Time{}, 0); len(left) != 0 {
		t.Errorf("%d dead letters left after the replay", len(left))
	}
}
