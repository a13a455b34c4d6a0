package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/subtitles"
)

// rawPayload is a result as a service may send it: members scribehook does not know at every
// level, spaces, HTML characters, escapes, numbers written in ways a re-encoding would change.
const rawPayload = `{"transcription": {"full_transcript":"a < b & c","languages":["en"],` +
	`"utterances":[{"start":0.50,"end":1.0e0,"confidence":1,"channel":0,"text":"a < b & c",` +
	`"words":[{"word":"a","start":0.5,"end":0.7,"confidence":0.9,"word_new":{"k":[1, 2]}},` +
	`{"word":" \u003cb\u003e","start":0.8,"end":1,"confidence":0.80}],"utt_new":12345678901234567890}],"tr_new":null},` +
	"\n  " + `"metadata":{"audio_duration":1.5,"number_of_distinct_channels":1,"billing_time":1.5,"transcription_time":0.1},` +
	`"brand_new_addon":{"success":true,"results":["\u00e9"]}}`

// rawDelivery is the transcription.success callback of id carrying payload, as sent.
func rawDelivery(id, payload string) store.Delivery {
	body := `{"id":"` + id + `","event":"transcription.success","payload":` + payload + `,"custom_metadata":{"team":"raw"}}`
	return store.Delivery{
		DedupeKey: "job:" + id + ":" + api.EventTranscriptionSuccess, Route: "job",
		Kind: api.CallbackJobSuccess, Event: api.EventTranscriptionSuccess, JobID: id,
		PartitionKey: id, Body: []byte(body), ReceivedAt: baseTime,
	}
}

// The stored record's result is the callback's payload byte for byte, unknown members and all,
// and the job.succeeded event carries it (compacted, as events are encoded); subtitles are
// still rendered from it.
func TestJobResultStoredByteForByte(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, r := startOn(t, handlers.Config{Subtitles: handlers.SubtitleRendering{
		Dir: dir, Profile: subtitles.DefaultProfile(), Formats: []subtitles.Format{subtitles.SRT},
	}})
	evs := collectEvents(t, r.p)
	applyAll(t, s, r.p, rawDelivery("job-raw", rawPayload))

	rec := getJob(t, s, "job-raw")
	if string(rec.Job.Result) != rawPayload {
		t.Errorf("stored result\n%s\nwant the payload as sent\n%s", rec.Job.Result, rawPayload)
	}
	if rec.Job.Status != api.StatusDone || string(rec.Job.CustomMetadata) != `{"team":"raw"}` {
		t.Errorf("record %s", jsonOf(t, rec.Job))
	}

	ev := evs.wait(t, "job-raw", api.EventJobSucceeded, 1)[0]
	var data struct {
		ID     string          `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(rawPayload)); err != nil {
		t.Fatal(err)
	}
	if data.ID != "job-raw" || string(data.Result) != compact.String() {
		t.Errorf("job.succeeded data %s\nwant the payload %s", ev.Data, compact.String())
	}
	subs := evs.wait(t, "job-raw", api.EventSubtitlesReady, 1)[0]
	var ready sinks.SubtitlesReadyData
	if err := json.Unmarshal(subs.Data, &ready); err != nil || len(ready.Files) != 1 ||
		!bytes.Contains([]byte(ready.Files[0].Content), []byte("a &lt;b>")) {
		t.Errorf("subtitles.ready %s, %v", subs.Data, err)
	}
}

// BenchmarkPipelineJobResult2h applies the 2-hour result's callback (20,000 words, 1.7 MB)
// through the pipeline with subtitles (SRT and WebVTT) and one sink: decoded, rendered,
// stored, its events queued. alloc/body is what the Go heap allocates for it over the body's
// size (everything the pipeline does for one result, the store's Go side included).
func BenchmarkPipelineJobResult2h(b *testing.B) {
	benchJobResult(b, 20000, 2*time.Hour, "")
}

// BenchmarkPipelineJobResult2hWhen is BenchmarkPipelineJobResult2h with a when on the sink,
// the example: the event's data decoded for the expression, once per event.
func BenchmarkPipelineJobResult2hWhen(b *testing.B) {
	benchJobResult(b, 20000, 2*time.Hour, `event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0`)
}

// BenchmarkPipelineJobResult60k is BenchmarkPipelineJobResult2h with 60,000 words
// (a 6-hour result), the long result of issue 22.
func BenchmarkPipelineJobResult60k(b *testing.B) {
	benchJobResult(b, 60000, 6*time.Hour, "")
}

func benchJobResult(b *testing.B, words int, audio time.Duration, when string) {
	res := apitest.Result(1, audio, words)
	payload, err := json.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	spec := sinks.Spec{Name: "files", Kind: sinks.KindFile, Dir: b.TempDir()}
	if when != "" {
		if spec.Filter.When, err = sinkexpr.CompileWhen(when); err != nil {
			b.Fatal(err)
		}
	}
	s, r := startOn(b, handlers.Config{
		Subtitles: handlers.SubtitleRendering{Dir: b.TempDir(), Profile: subtitles.DefaultProfile(),
			Formats: []subtitles.Format{subtitles.SRT, subtitles.VTT}},
		Sinks: []sinks.Spec{spec},
	})
	body := int64(len(rawDelivery("x", string(payload)).Body))
	var before, after runtime.MemStats
	b.ReportAllocs()
	b.SetBytes(body)
	b.ResetTimer()
	var total uint64
	for i := 0; i < b.N; i++ {
		d := rawDelivery(fmt.Sprintf("job-%d", i), string(payload))
		runtime.ReadMemStats(&before)
		ingest(b, s, r.p, d)
		// Waiting on the backlog's count, not on the row: reading the row back would copy
		// its body each time.
		for n := int64(1); n > 0; time.Sleep(time.Millisecond) {
			if n, err = s.InboxBacklog(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		total += after.TotalAlloc - before.TotalAlloc
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/float64(b.N)/float64(body), "alloc/body")
}
