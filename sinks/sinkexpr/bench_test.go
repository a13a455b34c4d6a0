package sinkexpr_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

// benchWhen measures one when over a fresh event each time, as the pipeline pays it once per
// event: the data decoded, then the expression run.
func benchWhen(b *testing.B, src, typ string, data []byte) {
	p, err := sinkexpr.CompileWhen(src)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ev := sinkexpr.NewEvent(sinkexpr.Input{ID: "e1", Type: typ, JobID: "j1", Data: data})
		if _, err := p.Match(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWhenLive: a when over a live final's text (the example config's).
func BenchmarkWhenLive(b *testing.B) {
	benchWhen(b, `event.data.data.utterance.text.lowerAscii().contains("refund")`, "live.transcript", []byte(finalData))
}

// BenchmarkWhenResult2h: the example over a 2-hour result (20,000 words, 1.7 MB).
func BenchmarkWhenResult2h(b *testing.B) {
	res, err := json.Marshal(map[string]any{"id": "j1", "status": "done", "result": apitest.Result(1, 2*time.Hour, 20000)})
	if err != nil {
		b.Fatal(err)
	}
	benchWhen(b, `event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0`, "job.succeeded", res)
}

// BenchmarkWhenCostLimit: the slowest a when can be, a program that runs into the cost limit
// (every pair of a 2-hour result's utterances compared).
func BenchmarkWhenCostLimit(b *testing.B) {
	res, err := json.Marshal(map[string]any{"id": "j1", "status": "done", "result": apitest.Result(1, 2*time.Hour, 20000)})
	if err != nil {
		b.Fatal(err)
	}
	p, err := sinkexpr.CompileWhen(`event.data.result.transcription.utterances.all(u, event.data.result.transcription.utterances.all(v, v.text != u.text + "x"))`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ev := sinkexpr.NewEvent(sinkexpr.Input{ID: "e1", Type: "job.succeeded", JobID: "j1", Data: res})
		if _, err := p.Match(context.Background(), ev); err == nil {
			b.Fatal("the program ran within the cost limit")
		}
	}
}

// One pass over every word of a 2-hour result fits in the cost limit.
func TestCostLimitFitsAWordPass(t *testing.T) {
	res, err := json.Marshal(map[string]any{"id": "j1", "status": "done", "result": apitest.Result(1, 2*time.Hour, 20000)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sinkexpr.CompileWhen(`event.data.result.transcription.utterances.all(u, u.words.all(w, w.word != "zzz"))`)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := p.Match(context.Background(), sinkexpr.NewEvent(sinkexpr.Input{Type: "job.succeeded", Data: res}))
	if !ok || err != nil {
		t.Fatalf("Match = %v, %v", ok, err)
	}
}
