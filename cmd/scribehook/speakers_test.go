package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
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
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/submitter"
	"github.com/scribehook/scribehook/subtitles"
)

// TestE2ESpeakersThroughServe: a diarized result posted through a partner route is rendered
// with the name its custom_metadata gives; PUT /v1/jobs/{id}/speakers renders it again with
// the names, the files on disk and a second subtitles.ready (revision 2, an id of its own)
// reach the webhook sink, the same PUT again emits nothing, and the job view and the command
// show the names.
func TestE2ESpeakersThroughServe(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	readToken := "cmVhZC10b2tlbi1mb3Itc3BlYWtlcnMtdGVzdHMtNDI"
	target := newSignedHook(t, secret)
	dir, db := tempDB(t)
	artifacts := filepath.Join(dir, "artifacts")
	addr := "127.0.0.1:" + freePort(t)
	path := writeSQLiteConfig(t, dir, db, "listen: "+addr+"\n",
		"routes: [{name: partner, token_env: TEST_PARTNER_TOKEN}]\n",
		"subtitles: {formats: [srt, vtt], dir: "+artifacts+"}\n",
		"sinks:\n  - {name: hook, kind: webhook, url: "+target.URL+", secret_env: TEST_HOOK_SECRET, allow: [127.0.0.0/8], events: [\"subtitles.ready\"]}\n")
	t.Setenv("TEST_PARTNER_TOKEN", partnerToken)
	t.Setenv("TEST_HOOK_SECRET", secret)
	t.Setenv("SCRIBEHOOK_READ_TOKEN", readToken)
	t.Setenv("SCRIBEHOOK_API_KEY", "")
	startServe(t, path, addr)
	base := "http://" + addr

	result := `{"transcription":{"languages":["en"],"utterances":[` +
		`{"start":1,"end":1.9,"speaker":0,"text":"Welcome back.","words":[{"word":"Welcome","start":1,"end":1.4},{"word":"back.","start":1.5,"end":1.9}]},` +
		`{"start":4,"end":5,"speaker":1,"text":"Thanks Alice.","words":[{"word":"Thanks","start":4,"end":4.4},{"word":"Alice.","start":4.5,"end":5}]}]}}`
	body := `{"id":"job-spk","event":"transcription.success","custom_metadata":{"scribehook_speakers":{"1":"Bob"}},"payload":` + result + `}`
	if status, b := httpDo(t, http.MethodPost, base+"/v1/callbacks/"+partnerToken, http.Header{"Content-Type": {"application/json"}}, []byte(body)); status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, b)
	}
	ready := func(n int) []api.Event {
		t.Helper()
		testwait.For(t, "subtitles.ready at the sink", 30*time.Second, func() bool { return len(target.idsOf(api.EventSubtitlesReady)) >= n })
		firsts, _, _ := target.result()
		return firsts
	}
	first := ready(1)[0]
	var d1 sinks.SubtitlesReadyData
	if err := json.Unmarshal(first.Data, &d1); err != nil || d1.Revision != 1 ||
		d1.Files[0].Content != "1\n00:00:01,000 --> 00:00:02,200\nSpeaker 1: Welcome back.\n\n2\n00:00:04,000 --> 00:00:05,000\nBob: Thanks Alice.\n" {
		t.Fatalf("first subtitles.ready %s, %v", first.Data, err)
	}

	auth := http.Header{"Authorization": {"Bearer " + readToken}, "Content-Type": {"application/json"}}
	put := func(names string) (int, []byte) {
		return httpDo(t, http.MethodPut, base+"/v1/jobs/job-spk/speakers", auth, []byte(names))
	}
	if status, b := put(`{"0": "Alice Martin", "x": ""}`); status != http.StatusBadRequest ||
		!strings.Contains(string(b), `speaker \"x\" must be a speaker number from 0 to 99`) {
		t.Errorf("invalid names: %d %s", status, b)
	}
	if status, b := httpDo(t, http.MethodPut, base+"/v1/jobs/no-such-job/speakers", auth, []byte(`{"0":"A"}`)); status != http.StatusNotFound {
		t.Errorf("unknown job: %d %s", status, b)
	}
	if status, b := httpDo(t, http.MethodPut, base+"/v1/jobs/job-spk/speakers", http.Header{}, []byte(`{"0":"A"}`)); status != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", status, b)
	}
	status, b := put(`{"0": "Alice Martin", "1": "Bob Stone"}`)
	var res struct {
		Revision int64  `json:"revision"`
		Changed  bool   `json:"changed"`
		EventID  string `json:"event_id"`
	}
	if err := json.Unmarshal(b, &res); status != http.StatusOK || err != nil || res.Revision != 2 || !res.Changed || res.EventID == "" {
		t.Fatalf("PUT speakers: %d %s", status, b)
	}
	srt := "1\n00:00:01,000 --> 00:00:02,350\nAlice Martin: Welcome back.\n\n2\n00:00:04,000 --> 00:00:05,200\nBob Stone: Thanks Alice.\n"
	vtt := "WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.350\n<v Alice Martin>Alice Martin: Welcome back.\n\n" +
		"2\n00:00:04.000 --> 00:00:05.200\n<v Bob Stone>Bob Stone: Thanks Alice.\n"
	var second api.Event
	for _, ev := range ready(2) {
		if ev.ID == res.EventID {
			second = ev
		}
	}
	want, _ := json.Marshal(sinks.SubtitlesReadyData{JobID: "job-spk", Revision: 2, Files: []sinks.SubtitleFile{
		{Format: "srt", Language: "en", Name: "subtitles.en.srt", Content: srt},
		{Format: "vtt", Language: "en", Name: "subtitles.en.vtt", Content: vtt}}})
	if string(second.Data) != string(want) {
		t.Errorf("second subtitles.ready\n%s\nwant\n%s", second.Data, want)
	}
	for name, content := range map[string]string{"subtitles.en.srt": srt, "subtitles.en.vtt": vtt} {
		if b, err := os.ReadFile(filepath.Join(artifacts, "job-spk", name)); err != nil || string(b) != content {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if status, b := httpDo(t, http.MethodGet, base+"/v1/jobs/job-spk/subtitles.vtt", auth, nil); status != http.StatusOK || string(b) != vtt {
		t.Errorf("GET subtitles.vtt: %d %q", status, b)
	}
	// The same names again: 200, unchanged, and no third event.
	if status, b := put(`{"1": "Bob Stone", "0": "Alice Martin"}`); status != http.StatusOK || !strings.Contains(string(b), `"changed":false`) {
		t.Errorf("same names again: %d %s", status, b)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(target.idsOf(api.EventSubtitlesReady)); n != 2 {
		t.Errorf("%d subtitles.ready events, want 2", n)
	}
	if status, b := httpDo(t, http.MethodGet, base+"/v1/jobs/job-spk", auth, nil); status != http.StatusOK ||
		!strings.Contains(string(b), `"speakers":{"0":"Alice Martin","1":"Bob Stone"},"subtitles_revision":2`) {
		t.Errorf("job view: %d %s", status, b)
	}
	out, _, err := runCmd(t.Context(), nil, "--config", path, "speakers", "get", "job-spk")
	if err != nil || out != "0\tAlice Martin\n1\tBob Stone\n" {
		t.Errorf("speakers get: %q, %v", out, err)
	}
	out, _, err = runCmd(t.Context(), nil, "--config", path, "speakers", "set", "job-spk", "0=Alice Martin", "1=Bob Stone")
	if err != nil || !strings.Contains(out, "unchanged") {
		t.Errorf("speakers set with the same names: %q, %v", out, err)
	}
}

// TestE2ELiveSpeakersThroughServe: a live session started with names in its custom_metadata
// (api.SpeakersMetadataKey) gets subtitles rendered at its end, from the service's record of
// the session, with those names; PUT /v1/jobs/{id}/speakers then renders the session's
// subtitles again as revision 2, the stored names over its custom_metadata's, and the job view
// shows both.
func TestE2ELiveSpeakersThroughServe(t *testing.T) {
	const readToken = "bGl2ZS1zcGVha2Vycy1yZWFkLXRva2VuLTAxMjM0NTY3"
	w, client := startWorld(t, sandbox.Config{APIKey: cliTestKey,
		Callbacks: sandbox.CallbackPolicy{Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}, Timeout: 5 * time.Second}})
	t.Cleanup(func() { _ = w.Close() })
	dir, db := tempDB(t)
	st := teststore.OpenSQLite(t, sqlite.Config{Path: db, Synchronous: "normal"})
	srv := serveOn(t, st, "", serverOptions{
		Service: client, ReadToken: readToken, Logger: logx.Discard(),
		Subtitles: handlers.SubtitleRendering{Dir: filepath.Join(dir, "subtitles"), Profile: subtitles.DefaultProfile(), Formats: []subtitles.Format{subtitles.VTT}},
	})
	t.Cleanup(func() { srv.stop(t) })
	base := "http://" + srv.addr

	sub, err := srv.kit.Submitter()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	created, err := sub.StartLive(ctx, api.LiveRequest{
		SampleRate: api.Int(16000), Endpointing: api.Float(0.3),
		CustomMetadata: json.RawMessage(`{"team":"live","scribehook_speakers":{"1":"Bob Stone"}}`),
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, wav := sampleWAV(t)
	if err := sub.Stream(ctx, created, bytes.NewReader(wav), submitter.StreamOptions{}, nil); err != nil {
		t.Fatalf("stream: %v", err)
	}

	auth := http.Header{"Authorization": {"Bearer " + readToken}, "Content-Type": {"application/json"}}
	vtt := func() string {
		t.Helper()
		status, b := httpDo(t, http.MethodGet, base+"/v1/jobs/"+created.ID+"/subtitles.vtt", auth, nil)
		if status != http.StatusOK {
			t.Fatalf("subtitles.vtt: %d %s", status, b)
		}
		return string(b)
	}
	testwait.For(t, "the session's subtitles rendered at its end", 30*time.Second, func() bool {
		arts, err := st.Artifacts(ctx, created.ID)
		return err == nil && len(arts) > 0
	})
	first := vtt()
	// The sandbox's diarization alternates speakers from one final to the next: both are there.
	if !strings.HasPrefix(first, "WEBVTT\n") || !strings.Contains(first, "\n<v Speaker 1>") || !strings.Contains(first, "\n<v Bob Stone>Bob Stone: ") {
		t.Fatalf("the session's first subtitles:\n%s", first)
	}

	status, b := httpDo(t, http.MethodPut, base+"/v1/jobs/"+created.ID+"/speakers", auth, []byte(`{"0": "Alice Martin"}`))
	var res struct {
		Names    map[string]string `json:"names"`
		Revision int64             `json:"revision"`
		Changed  bool              `json:"changed"`
		Files    []string          `json:"files"`
	}
	if err := json.Unmarshal(b, &res); status != http.StatusOK || err != nil || res.Revision != 2 || !res.Changed ||
		!slices.Equal(res.Files, []string{"subtitles.en.vtt"}) || res.Names["0"] != "Alice Martin" {
		t.Fatalf("PUT speakers of the session: %d %s", status, b)
	}
	again := vtt()
	if strings.Contains(again, "<v Speaker 1>") || !strings.Contains(again, "\n<v Alice Martin>Alice Martin: ") || !strings.Contains(again, "\n<v Bob Stone>Bob Stone: ") {
		t.Fatalf("the session's subtitles after the naming:\n%s", again)
	}
	// The same cues, every one with a named voice (and, at each turn, its label).
	cues := strings.Count(first, " --> ")
	alice, bob := strings.Count(again, "\n<v Alice Martin>"), strings.Count(again, "\n<v Bob Stone>")
	if strings.Count(again, " --> ") != cues || alice == 0 || bob == 0 || alice+bob != cues {
		t.Errorf("%d cues before the naming; after it %d cues, %d of Alice Martin and %d of Bob Stone:\n%s", cues, strings.Count(again, " --> "), alice, bob, again)
	}

	status, b = httpDo(t, http.MethodGet, base+"/v1/jobs/"+created.ID, auth, nil)
	var job struct {
		Kind  string `json:"kind"`
		Local struct {
			Speakers          map[string]string `json:"speakers"`
			SubtitlesRevision int64             `json:"subtitles_revision"`
		} `json:"local"`
	}
	if err := json.Unmarshal(b, &job); status != http.StatusOK || err != nil || job.Kind != string(api.KindLive) ||
		job.Local.SubtitlesRevision != 2 || !maps.Equal(job.Local.Speakers, map[string]string{"0": "Alice Martin", "1": "Bob Stone"}) {
		t.Fatalf("the session's job view: %d %s", status, b)
	}
}
