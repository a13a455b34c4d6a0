// Package apitest generates deterministic wire-model bodies for tests and benchmarks: live
// transcript callbacks like the sandbox sends and pre-recorded results of a given length. The
// load runs (bench/load/bodies.go) build their bodies from the same generator, so a benchmark of
// one package measures what the load runs send. It also holds the reference classification of
// callback bodies (ReferenceClassifyCallback), the oracle of api's and the receiver's
// differential tests.
package apitest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// BaseTime is the created_at of generated messages.
var BaseTime = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

var vocabulary = strings.Fields(`the a to and of in that is it you we for on this with be
	have are was not but they at so what can do just about if there all like would one will our
	know think going people time meeting project week really need because more work team then
	said get make right also some how data next call customer update release question good
	today yesterday tomorrow budget design review plan support issue number report change agree
	everyone thanks morning product market quarter sales level point first last new important
	maybe sure okay yes well actually probably different problem system service transcript`)

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// Utterance makes n timed words from start, drawn from r. bench/load draws its utterances the
// same way from its own streams, and can call this instead of a copy (words.utterance).
func Utterance(r *rand.Rand, start float64, n, speaker int) api.Utterance {
	u := api.Utterance{Start: round3(start), Channel: 0, Language: "en", Speaker: &speaker}
	t := start
	texts := make([]string, 0, n)
	conf := 0.0
	for i := 0; i < n; i++ {
		word := vocabulary[r.IntN(len(vocabulary))]
		if i == 0 {
			word = strings.ToUpper(word[:1]) + word[1:]
		}
		if i == n-1 {
			word += "."
		} else if r.IntN(9) == 0 {
			word += ","
		}
		dur := 0.08 + 0.035*float64(len(word)) + 0.04*r.Float64()
		c := round3(0.8 + 0.2*r.Float64())
		u.Words = append(u.Words, api.Word{Word: " " + word, Start: round3(t), End: round3(t + dur), Confidence: c})
		texts = append(texts, word)
		conf += c
		t += dur + 0.01 + 0.05*r.Float64()
	}
	u.End = u.Words[len(u.Words)-1].End
	u.Confidence = round3(conf / float64(n))
	u.Text = strings.Join(texts, " ")
	return u
}

// Result is the result of a pre-recorded job of the given audio length with wordCount words:
// two speakers taking turns, utterances of 4–30 words, spread evenly over the audio.
// Result(seed, 2*time.Hour, 20000) encodes to about 1.7 MB, the 2-hour result of
// docs/benchmarks.md.
func Result(seed uint64, audio time.Duration, wordCount int) *api.Result {
	return ResultFrom(rand.New(rand.NewPCG(seed, 0x5c81be)), audio, wordCount)
}

// ResultFrom is Result drawing from r: bench/load's preRecordedResult is this with the stream
// of its job id (newWords(seed, jobID).r).
func ResultFrom(r *rand.Rand, audio time.Duration, wordCount int) *api.Result {
	secs := audio.Seconds()
	var utts []api.Utterance
	var texts []string
	t := 0.5
	left := wordCount
	speaker := 0
	for left > 0 {
		n := min(left, 4+r.IntN(27))
		u := Utterance(r, t, n, speaker)
		utts = append(utts, u)
		texts = append(texts, u.Text)
		left -= n
		speaker = 1 - speaker
		t = u.End + 0.3 + 0.7*r.Float64()
	}
	if end := utts[len(utts)-1].End; end > 0 && end < secs-1 {
		k := (secs - 1) / end
		for i := range utts {
			u := &utts[i]
			shift := round3(u.Start*k - u.Start)
			u.Start = round3(u.Start + shift)
			u.End = round3(u.End + shift)
			for j := range u.Words {
				u.Words[j].Start = round3(u.Words[j].Start + shift)
				u.Words[j].End = round3(u.Words[j].End + shift)
			}
		}
	}
	return &api.Result{
		Metadata: &api.Metadata{
			AudioDuration: round3(secs), NumberOfDistinctChannels: 1,
			BillingTime: round3(secs), TranscriptionTime: round3(secs / 20),
		},
		Transcription: &api.Transcription{
			FullTranscript: strings.Join(texts, " "),
			Languages:      []string{"en"},
			Utterances:     utts,
		},
	}
}

// JobCallbackBody is the transcription.success callback of job id carrying res, encoded.
func JobCallbackBody(id string, res *api.Result) []byte {
	b, err := json.Marshal(api.JobCallback{
		ID: id, Event: api.EventTranscriptionSuccess, Payload: res,
		CustomMetadata: json.RawMessage(`{"bench":"fixture"}`),
	})
	if err != nil {
		panic(err)
	}
	return b
}

// JobRecord is the done job record of id with res, as the pipeline stores it and puts in a
// job.succeeded event.
func JobRecord(id string, res *api.Result) *api.Job {
	created := api.NewTime(BaseTime)
	completed := api.NewTime(BaseTime.Add(10 * time.Minute))
	return &api.Job{
		ID: id, RequestID: "G-" + id[:8], Version: api.RecordVersion, Status: api.StatusDone,
		CreatedAt: created, CompletedAt: &completed, Kind: api.KindPreRecorded,
		CustomMetadata: json.RawMessage(`{"bench":"fixture"}`),
		File: &api.File{ID: "f-" + id[:8], Filename: "audio.wav", Source: "https://example.com/audio.wav",
			AudioDuration: res.Metadata.AudioDuration, NumberOfChannels: 1},
		RequestParams: json.RawMessage(`{"audio_url":"https://example.com/audio.wav","diarization":true}`),
		Result:        api.RawResult(res),
	}
}

// Partial is the partial transcript that precedes the final u: its first two thirds of words
// (at least one), as the sandbox emits them.
func Partial(u api.Utterance) api.Utterance {
	k := max(1, len(u.Words)*2/3)
	p := u
	p.Words = u.Words[:k]
	p.End = p.Words[k-1].End
	texts := make([]string, 0, k)
	for _, w := range p.Words {
		texts = append(texts, strings.TrimSpace(w.Word))
	}
	p.Text = strings.Join(texts, " ")
	return p
}

// LiveCallbackBodies generates n live transcript callbacks of one session, a partial then its
// final per utterance, as the sandbox sends them (about 950 bytes each on average).
func LiveCallbackBodies(seed uint64, n int) [][]byte { return LiveCallbackBodiesWords(seed, n, 4, 15) }

// LiveCallbackBodiesWords is LiveCallbackBodies with utterances of minWords to maxWords words
// (4 to 15 there); 1 to 2 makes callbacks of about 480 bytes on average, nearly all envelope.
func LiveCallbackBodiesWords(seed uint64, n, minWords, maxWords int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 0x11fe))
	session := fmt.Sprintf("0a1b2c3d-0000-4000-8000-%012d", seed)
	out := make([][]byte, 0, n)
	clock := 0.0
	var final api.Utterance
	for i := 0; i < n; i++ {
		isFinal := i%2 == 1
		utt := final
		if !isFinal {
			final = Utterance(r, clock, minWords+r.IntN(maxWords-minWords+1), i/2%2)
			clock = final.End + 0.3 + r.Float64()
			utt = Partial(final)
		}
		data, err := json.Marshal(api.TranscriptData{ID: fmt.Sprintf("%s/u%d", session, i/2), IsFinal: isFinal, Utterance: utt})
		if err != nil {
			panic(err)
		}
		msg := api.LiveMessage{
			SessionID: session,
			CreatedAt: api.NewTime(BaseTime.Add(time.Duration(utt.End * float64(time.Second)))),
			Type:      api.MessageTranscript,
			Data:      data,
		}
		body, err := json.Marshal(api.LiveCallback{ID: session, Event: api.LiveEvent(api.MessageTranscript), Payload: msg})
		if err != nil {
			panic(err)
		}
		out = append(out, body)
	}
	return out
}

// MustResult is j's result decoded (nil when it has none); it panics when the result does not
// decode.
func MustResult(j *api.Job) *api.Result {
	r, err := j.DecodeResult()
	if err != nil {
		panic(err)
	}
	return r
}
