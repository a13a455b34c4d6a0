package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
)

// Body shapes the load tool sends.
const (
	shapeLive  = "live"   // one live transcript message (partial or final), as the sandbox sends
	shapePre1m = "pre-1m" // the result of a 1-minute pre-recorded job
	shapePre2h = "pre-2h" // the result of a 2-hour pre-recorded job, about 20,000 words
)

// callback is one generated delivery and what verification needs to find it again.
type callback struct {
	Body []byte
	// DedupeKey is the inbox key the receiver derives from the body; verification looks the
	// delivery up by it.
	DedupeKey string
	// JobID is the job or live session.
	JobID string
	// MsgKey identifies a live message inside sink events ("<utterance id>/<final>"); empty
	// for job results.
	MsgKey string
}

// meanBody is the mean body size of calls in bytes, for the runs' description lines.
func meanBody(calls []callback) int {
	size := 0
	for _, cl := range calls {
		size += len(cl.Body)
	}
	return size / max(1, len(calls))
}

// benchNamespace makes every generated id a function of the seed and an index, so two runs with
// the same seed send the same bytes.
var benchNamespace = uuid.MustParse("8d0f7a52-31c4-4f0e-9b5e-6a1f3e2c9d47")

func benchID(seed uint64, what string, n int) string {
	return uuid.NewSHA1(benchNamespace, fmt.Appendf(nil, "%d/%s/%d", seed, what, n)).String()
}

// baseTime is the created_at of the first generated message: fixed, so bodies are the same on
// every run.
var baseTime = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// words is a deterministic word source.
type words struct{ r *rand.Rand }

func newWords(seed uint64, stream string) *words {
	h := sha256.Sum256([]byte(stream))
	return &words{rand.New(rand.NewPCG(seed, uint64(h[0])|uint64(h[1])<<8|uint64(h[2])<<16|uint64(h[3])<<24))}
}

// liveCallbacks generates n live transcript callbacks spread over sessions: each utterance of a
// session gives a partial (the first words) then its final, as the sandbox emits them, so the
// messages of one session arrive in session order when sent in index order.
func liveCallbacks(seed uint64, n, sessions int) ([]callback, error) {
	if sessions < 1 {
		sessions = 1
	}
	ids := make([]string, sessions)
	src := make([]*words, sessions)
	clock := make([]float64, sessions)
	var pending = make([]*api.Utterance, sessions) // the final that follows a partial
	for s := range ids {
		ids[s] = benchID(seed, "session", s)
		src[s] = newWords(seed, ids[s])
	}
	out := make([]callback, 0, n)
	for i := 0; i < n; i++ {
		s := i % sessions
		seq := i / sessions
		uttN := seq / 2
		final := seq%2 == 1
		var utt api.Utterance
		if final && pending[s] != nil {
			utt = *pending[s]
		} else {
			u := apitest.Utterance(src[s].r, clock[s], 4+src[s].r.IntN(12), uttN%2)
			clock[s] = u.End + 0.3 + src[s].r.Float64()
			pending[s] = &u
			// The partial carries the first words the engine had at that point.
			utt = apitest.Partial(u)
			final = false
		}
		uttID := benchID(seed, ids[s]+"/utterance", uttN)
		data, err := json.Marshal(api.TranscriptData{ID: uttID, IsFinal: final, Utterance: utt})
		if err != nil {
			return nil, fmt.Errorf("encode transcript data: %w", err)
		}
		msg := api.LiveMessage{
			SessionID: ids[s],
			CreatedAt: api.NewTime(baseTime.Add(time.Duration(utt.End * float64(time.Second)))),
			Type:      api.MessageTranscript,
			Data:      data,
		}
		body, err := json.Marshal(api.LiveCallback{ID: ids[s], Event: api.LiveEvent(api.MessageTranscript), Payload: msg})
		if err != nil {
			return nil, fmt.Errorf("encode live callback: %w", err)
		}
		key, err := liveDedupeKey(ids[s], body)
		if err != nil {
			return nil, err
		}
		out = append(out, callback{Body: body, DedupeKey: key, JobID: ids[s], MsgKey: msgKey(uttID, final)})
	}
	return out, nil
}

func msgKey(utteranceID string, final bool) string {
	if final {
		return utteranceID + "/final"
	}
	return utteranceID + "/partial"
}

// liveDedupeKey is the receiver's dedupe key of a live callback: the session and the hash of
// the compacted payload (receiver/classify.go), computed the same way so that verification can
// find each delivery by its key.
func liveDedupeKey(session string, body []byte) (string, error) {
	var env struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return "", fmt.Errorf("live dedupe key: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, env.Payload); err != nil {
		return "", fmt.Errorf("live dedupe key: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return "live:" + session + ":" + hex.EncodeToString(sum[:]), nil
}

// preRecordedResult is the result of a job of the given audio length with about wordCount
// words (api/apitest's generator, seeded per job).
func preRecordedResult(seed uint64, jobID string, audio time.Duration, wordCount int) *api.Result {
	return apitest.ResultFrom(newWords(seed, jobID).r, audio, wordCount)
}

// preRecordedCallbacks generates n job success callbacks of one shape, each for its own job.
func preRecordedCallbacks(seed uint64, n int, shape string) ([]callback, error) {
	return preRecordedWords(seed, n, shape, 0, false)
}

// unknownWordMembers are members a service might add to every word: with -unknown, each word
// but the last of each utterance carries them (a result mostly made of what scribehook does
// not know, issue 22's 15 MiB body).
const unknownWordMembers = `,"x_engine":{"alternatives":[{"word":"alt","p":0.25},{"word":"other","p":0.125}],"lattice_id":"0f3c9a7e"}`

// preRecordedWords is preRecordedCallbacks with words words per result (0: the shape's), the
// audio as long as the shape's pace makes it (a 2-hour result has 20,000 words), and with
// unknown, members scribehook does not know in the words (unknownWordMembers).
func preRecordedWords(seed uint64, n int, shape string, words int, unknown bool) ([]callback, error) {
	audio, count := time.Minute, 150
	if shape == shapePre2h {
		audio, count = 2*time.Hour, 20000
	}
	if words > 0 {
		audio, count = time.Duration(int64(audio)*int64(words)/int64(count)), words
	}
	out := make([]callback, 0, n)
	for i := 0; i < n; i++ {
		id := benchID(seed, shape, i)
		body, err := json.Marshal(api.JobCallback{
			ID: id, Event: api.EventTranscriptionSuccess,
			Payload:        preRecordedResult(seed, id, audio, count),
			CustomMetadata: json.RawMessage(`{"bench":"` + shape + `"}`),
		})
		if err != nil {
			return nil, fmt.Errorf("encode job callback: %w", err)
		}
		if unknown {
			body = bytes.ReplaceAll(body, []byte(`},{"word":`), []byte(unknownWordMembers+`},{"word":`))
		}
		out = append(out, callback{Body: body, DedupeKey: "job:" + id + ":" + api.EventTranscriptionSuccess, JobID: id})
	}
	return out, nil
}

// makeCallbacks generates n callbacks of shape.
func makeCallbacks(seed uint64, shape string, n, sessions int) ([]callback, error) {
	switch shape {
	case shapeLive:
		return liveCallbacks(seed, n, sessions)
	case shapePre1m, shapePre2h:
		return preRecordedCallbacks(seed, n, shape)
	}
	return nil, fmt.Errorf("unknown body shape %q (live, pre-1m, pre-2h)", shape)
}
