package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/api"
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

// benchNamespace makes every generated id a function of the seed and an index, so two runs with
// the same seed send the same bytes.
var benchNamespace = uuid.MustParse("8d0f7a52-31c4-4f0e-9b5e-6a1f3e2c9d47")

func benchID(seed uint64, what string, n int) string {
	return uuid.NewSHA1(benchNamespace, fmt.Appendf(nil, "%d/%s/%d", seed, what, n)).String()
}

// baseTime is the created_at of the first generated message: fixed, so bodies are the same on
// every run.
var baseTime = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// vocabulary gives English-like words of natural lengths; the text only has to look like
// speech to the subtitle segmenter.
var vocabulary = strings.Fields(`the a to and of in that is it you we for on this with be
	have are was not but they at so what can do just about if there all like would one will our
	know think going people time meeting project week really need because more work team then
	said get make right also some how data next call customer update release question good
	today yesterday tomorrow budget design review plan support issue number report change agree
	everyone thanks morning product market quarter sales level point first last new important
	maybe sure okay yes well actually probably different problem system service transcript`)

// words is a deterministic word source.
type words struct{ r *rand.Rand }

func newWords(seed uint64, stream string) *words {
	h := sha256.Sum256([]byte(stream))
	return &words{rand.New(rand.NewPCG(seed, uint64(h[0])|uint64(h[1])<<8|uint64(h[2])<<16|uint64(h[3])<<24))}
}

func (w *words) word() string { return vocabulary[w.r.IntN(len(vocabulary))] }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// utterance makes n timed words from start, returning the utterance and its end.
func (w *words) utterance(start float64, n, speaker int) api.Utterance {
	u := api.Utterance{Start: round3(start), Channel: 0, Language: "en", Speaker: &speaker}
	t := start
	texts := make([]string, 0, n)
	conf := 0.0
	for i := 0; i < n; i++ {
		word := w.word()
		if i == 0 {
			word = strings.ToUpper(word[:1]) + word[1:]
		}
		if i == n-1 {
			word += "."
		} else if w.r.IntN(9) == 0 {
			word += ","
		}
		// About 3 words a second with the gaps: a little faster than 20,000 words in two
		// hours, so preRecordedResult only ever has to stretch the pauses.
		dur := 0.08 + 0.035*float64(len(word)) + 0.04*w.r.Float64()
		c := round3(0.8 + 0.2*w.r.Float64())
		u.Words = append(u.Words, api.Word{Word: " " + word, Start: round3(t), End: round3(t + dur), Confidence: c})
		texts = append(texts, word)
		conf += c
		t += dur + 0.01 + 0.05*w.r.Float64()
	}
	u.End = u.Words[len(u.Words)-1].End
	u.Confidence = round3(conf / float64(n))
	u.Text = strings.Join(texts, " ")
	return u
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
			u := src[s].utterance(clock[s], 4+src[s].r.IntN(12), uttN%2)
			clock[s] = u.End + 0.3 + src[s].r.Float64()
			pending[s] = &u
			// The partial carries the first words the engine had at that point.
			utt = u
			k := max(1, len(u.Words)*2/3)
			utt.Words = u.Words[:k]
			utt.End = utt.Words[k-1].End
			var texts []string
			for _, w := range utt.Words {
				texts = append(texts, strings.TrimSpace(w.Word))
			}
			utt.Text = strings.Join(texts, " ")
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
// words: two speakers taking turns, utterances of 4–30 words, pauses between them, the whole
// spread evenly over the audio.
func preRecordedResult(seed uint64, jobID string, audio time.Duration, wordCount int) *api.Result {
	w := newWords(seed, jobID)
	secs := audio.Seconds()
	var utts []api.Utterance
	var texts []string
	t := 0.5
	left := wordCount
	speaker := 0
	for left > 0 {
		n := min(left, 4+w.r.IntN(27))
		u := w.utterance(t, n, speaker)
		utts = append(utts, u)
		texts = append(texts, u.Text)
		left -= n
		speaker = 1 - speaker
		t = u.End + 0.3 + 0.7*w.r.Float64()
	}
	// Stretch the timeline so the words fill the audio's length, as 20,000 words fill two hours.
	if end := utts[len(utts)-1].End; end > 0 && end < secs-1 {
		k := (secs - 1) / end
		for i := range utts {
			u := &utts[i]
			// Words keep their natural durations; only the gaps between utterances grow.
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

// preRecordedCallbacks generates n job success callbacks of one shape, each for its own job.
func preRecordedCallbacks(seed uint64, n int, shape string) ([]callback, error) {
	audio, count := time.Minute, 150
	if shape == shapePre2h {
		audio, count = 2*time.Hour, 20000
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
