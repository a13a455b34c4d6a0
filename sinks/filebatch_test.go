package sinks

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/logx"
)

// DeliverBatch writes the same files as Deliver one event at a time, and each event's error is
// its own: a permanent failure and a disk error fail their event only.
func TestFileSinkBatchMatchesDeliver(t *testing.T) {
	live := fileEvent("live.transcript", "ev/live 1", `{"type":"transcript","data":{"utterance":{"text":"a <b> & c"}}}`)
	live.Kind, live.Category = api.KindLive, api.CategoryFinalTranscripts
	noJob := fileEvent(api.EventJobCreated, "ev-nojob", `{}`)
	noJob.JobID = ""
	blocked := fileEvent(api.EventJobCreated, "ev-blocked", `{}`)
	blocked.JobID = "job-2" // its directory is taken by a file
	events := []api.Event{
		fileEvent(api.EventJobCreated, "ev-created", `{"id":"job-1","status":"queued"}`),
		noJob,
		fileEvent(api.EventJobSucceeded, "ev-done", succeededData),
		blocked,
		fileEvent(api.EventSubtitlesReady, "ev-subs", subtitlesData(
			SubtitleFile{Format: "srt", Language: "en", Name: "subtitles.en.srt", Content: "1\n"},
			SubtitleFile{Format: "vtt", Language: "en", Name: "subtitles.en.vtt", Content: "WEBVTT\n"},
		)),
		live,
	}
	one, oneDir := newFileSink(t)
	batch, batchDir := newFileSink(t)
	for _, dir := range []string{oneDir, batchDir} {
		if err := os.WriteFile(filepath.Join(dir, "job-2"), []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want []error
	for _, ev := range events {
		want = append(want, one.Deliver(context.Background(), ev))
	}
	got := batch.DeliverBatch(context.Background(), events)
	for i, ev := range events {
		switch {
		case (got[i] == nil) != (want[i] == nil):
			t.Errorf("%s: batch error %v, alone %v", ev.ID, got[i], want[i])
		case got[i] != nil && AsFailure(got[i]).Permanent != AsFailure(want[i]).Permanent:
			t.Errorf("%s: batch error %v (permanent %t), alone %v", ev.ID, got[i], AsFailure(got[i]).Permanent, want[i])
		}
	}
	if got[1] == nil || !AsFailure(got[1]).Permanent || got[3] == nil || AsFailure(got[3]).Permanent {
		t.Errorf("errors = %v, want a permanent one for the event without a job and a retryable one for the blocked directory", got)
	}
	if a, b := tree(t, oneDir), tree(t, batchDir); !maps.Equal(a, b) {
		t.Errorf("batch wrote %v\nwant (one at a time) %v", names(b), names(a))
	}
}

// BenchmarkFileSinkDeliver2h writes a 2-hour result's job.succeeded event (1.7 MB): the event
// file indented and the transcript, synced; B/op is what the file sink allocates for it.
func BenchmarkFileSinkDeliver2h(b *testing.B) {
	ev := succeeded2h(b)
	s, err := NewFile(Spec{Name: "files", Kind: KindFile, Dir: b.TempDir()}, Deps{Logger: logx.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(ev.Data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Deliver(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
	}
}

// succeeded2h is the job.succeeded event of a 2-hour result (20,000 words, 1.7 MB of data).
func succeeded2h(tb testing.TB) api.Event {
	tb.Helper()
	data, err := json.Marshal(apitest.JobRecord("8d0f7a52-31c4-4f0e-9b5e-6a1f3e2c9d47", apitest.Result(1, 2*time.Hour, 20000)))
	if err != nil {
		tb.Fatal(err)
	}
	return fileEvent(api.EventJobSucceeded, "ev-2h", string(data))
}
