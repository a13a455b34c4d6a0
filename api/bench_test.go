package api_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
)

// The 2-hour result of docs/benchmarks.md: 20,000 words over 7,200 s, about 1.7 MB.
var twoHour = sync.OnceValues(func() (callback, record []byte) {
	res := apitest.Result(1, 2*time.Hour, 20000)
	callback = apitest.JobCallbackBody("8d0f7a52-31c4-4f0e-9b5e-6a1f3e2c9d47", res)
	record, err := json.Marshal(apitest.JobRecord("8d0f7a52-31c4-4f0e-9b5e-6a1f3e2c9d47", res))
	if err != nil {
		panic(err)
	}
	return callback, record
})

// benchDecode measures decoding body into a new T, as the pipeline decodes each body.
func benchDecode[T any](b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var v T
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJobCallback2h decodes the 2-hour transcription.success callback into the wire
// model, as a user of the api types would (the pipeline reads a view of it instead, its result
// left raw: handlers' BenchmarkPipelineJobResult2h).
func BenchmarkDecodeJobCallback2h(b *testing.B) {
	body, _ := twoHour()
	benchDecode[api.JobCallback](b, body)
}

// BenchmarkDecodeJob2h decodes the job record holding the 2-hour result (a record from the
// service, a job.succeeded event's data): its result is kept raw, a copy.
func BenchmarkDecodeJob2h(b *testing.B) {
	_, record := twoHour()
	benchDecode[api.Job](b, record)
}

// BenchmarkEncodeJob2h encodes the job record holding the 2-hour result as the store and the
// job.succeeded event do (api.EncodeJob: its result spliced in as held).
func BenchmarkEncodeJob2h(b *testing.B) {
	_, record := twoHour()
	var j api.Job
	if err := json.Unmarshal(record, &j); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(record)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := api.EncodeJob(&j, true); err != nil {
			b.Fatal(err)
		}
	}
}

var liveBodies = sync.OnceValue(func() [][]byte { return apitest.LiveCallbackBodies(1, 256) })

// BenchmarkDecodeLiveCallback decodes live transcript callbacks (partials and finals of about
// 950 bytes) as api.LiveCallback, as the pipeline does for each live delivery.
func BenchmarkDecodeLiveCallback(b *testing.B) {
	bodies := liveBodies()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var cb api.LiveCallback
		if err := json.Unmarshal(bodies[i%len(bodies)], &cb); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkClassifyCallbackLive classifies live transcript callbacks.
func BenchmarkClassifyCallbackLive(b *testing.B) {
	bodies := liveBodies()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := api.ClassifyCallback(bodies[i%len(bodies)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkClassifyCallback2h classifies the 2-hour transcription.success callback.
func BenchmarkClassifyCallback2h(b *testing.B) {
	body, _ := twoHour()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := api.ClassifyCallback(body); err != nil {
			b.Fatal(err)
		}
	}
}
