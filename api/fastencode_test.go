package api

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The reference encoding of a transcription is the general one the hand encoder replaced:
// encodeKeeping at every level, through encoding/json. The ref types mirror the model's with
// that MarshalJSON.

type refWord Word

func (w refWord) MarshalJSON() ([]byte, error) {
	type plain Word
	return encodeKeeping(plain(w), w.Extra)
}

type refUtterance struct {
	Start      float64   `json:"start"`
	End        float64   `json:"end"`
	Confidence float64   `json:"confidence"`
	Channel    int       `json:"channel"`
	Words      []refWord `json:"words"`
	Text       string    `json:"text"`
	Language   string    `json:"language,omitempty"`
	Speaker    *int      `json:"speaker,omitempty"`
	Extra      Extra     `json:"-"`
}

func (u refUtterance) MarshalJSON() ([]byte, error) {
	type plain refUtterance
	if u.Words == nil {
		u.Words = []refWord{}
	}
	return encodeKeeping(plain(u), u.Extra)
}

type refTranscription struct {
	FullTranscript string            `json:"full_transcript"`
	Languages      []string          `json:"languages"`
	Utterances     []refUtterance    `json:"utterances"`
	Sentences      []Addon[[]string] `json:"sentences,omitzero"`
	Subtitles      []Subtitle        `json:"subtitles,omitzero"`
	Extra          Extra             `json:"-"`
}

func (t refTranscription) MarshalJSON() ([]byte, error) {
	type plain refTranscription
	if t.Languages == nil {
		t.Languages = []string{}
	}
	if t.Utterances == nil {
		t.Utterances = []refUtterance{}
	}
	return encodeKeeping(plain(t), t.Extra)
}

func refOf(t Transcription) refTranscription {
	r := refTranscription{FullTranscript: t.FullTranscript, Languages: t.Languages, Sentences: t.Sentences,
		Subtitles: t.Subtitles, Extra: t.Extra}
	if t.Utterances != nil {
		r.Utterances = []refUtterance{}
	}
	for _, u := range t.Utterances {
		ru := refUtterance{Start: u.Start, End: u.End, Confidence: u.Confidence, Channel: u.Channel, Text: u.Text,
			Language: u.Language, Speaker: u.Speaker, Extra: u.Extra}
		if u.Words != nil {
			ru.Words = []refWord{}
		}
		for _, w := range u.Words {
			ru.Words = append(ru.Words, refWord(w))
		}
		r.Utterances = append(r.Utterances, ru)
	}
	return r
}

// checkEncoding compares the hand encoding of t with the reference, as a parent encoder
// (json.Marshal of a pointer to it) writes them: the same bytes, or both an error.
func checkEncoding(t *testing.T, tr Transcription) {
	t.Helper()
	got, gotErr := json.Marshal(&tr)
	want, wantErr := json.Marshal(refOf(tr))
	if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("hand encoding:\n%s (%v)\nreference:\n%s (%v)", got, gotErr, want, wantErr)
	}
	// Its own MarshalJSON, without a parent compacting it, is already that.
	if own, err := tr.MarshalJSON(); gotErr == nil && len(tr.Extra) == 0 && (err != nil || !bytes.Equal(own, got)) {
		t.Fatalf("MarshalJSON:\n%s (%v)\njson.Marshal:\n%s", own, err, got)
	}
}

var encodeSeeds = []string{
	`{}`, `{"utterances":null,"languages":null}`,
	`{"full_transcript":"a <b> & \"c\" \\ \u2028\u2029 \u0001\b\f\n\r\t é 日本","languages":["en","fr"],"utterances":[]}`,
	`{"utterances":[{"start":0,"end":1e-7,"confidence":1e21,"channel":-3,"words":null,"text":"x"}]}`,
	`{"utterances":[{"start":-0,"end":123456789.123,"confidence":0.000001,"channel":0,"text":"","language":"de","speaker":0,
	  "words":[{"word":"a","start":1.5,"end":2,"confidence":0.25},{"word":"b","start":3,"end":4,"confidence":1,"extra":{ "k" : [1, 2] }}]}]}`,
	`{"utterances":[{"start":1,"end":2,"confidence":0.5,"channel":1,"words":[],"text":"t","custom":"<&>"}],"sentences":[{"success":true}],"subtitles":[{"format":"srt","subtitles":"1\n"}]}`,
	`{"full_transcript":"x","zzz":{"a" :  1},"aaa":"<"}`,
	`{"subtitles":[],"sentences":[]}`,
}

func TestTranscriptionEncodingMatchesReference(t *testing.T) {
	for _, s := range encodeSeeds {
		var tr Transcription
		if err := json.Unmarshal([]byte(s), &tr); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		checkEncoding(t, tr)
	}
	// Invalid UTF-8 and values encoding/json refuses.
	speaker := 7
	checkEncoding(t, Transcription{FullTranscript: "bad \xff\xfe utf8 \xe2\x80", Utterances: []Utterance{{
		Speaker: &speaker, Words: []Word{{Word: "\xc3"}}, Text: "\x7f",
	}}})
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		checkEncoding(t, Transcription{Utterances: []Utterance{{Words: []Word{{Start: f}}}}})
		checkEncoding(t, Transcription{Utterances: []Utterance{{End: f}}})
	}
}

// FuzzTranscriptionEncoding checks the hand encoding of any transcription that decodes against
// the reference.
func FuzzTranscriptionEncoding(f *testing.F) {
	for _, s := range encodeSeeds {
		f.Add([]byte(s))
	}
	names, _ := filepath.Glob(filepath.Join("testdata", "job_*.json"))
	for _, name := range names {
		var j Job
		if b, err := os.ReadFile(name); err != nil || json.Unmarshal(b, &j) != nil {
			f.Fatalf("%s does not read as a job", name)
		}
		if j.Result != nil && j.Result.Transcription != nil {
			b, _ := json.Marshal(refOf(*j.Result.Transcription))
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var tr Transcription
		if json.Unmarshal(data, &tr) != nil {
			return
		}
		checkEncoding(t, tr)
		// Every string as a word and a text too, and every float of the input as a time.
		for i := range tr.Utterances {
			for _, w := range tr.Utterances[i].Words {
				checkEncoding(t, Transcription{FullTranscript: w.Word, Utterances: []Utterance{{Text: w.Word,
					Start: w.End, End: w.Confidence, Words: []Word{{Word: w.Word, Start: w.Confidence}}}}})
			}
		}
	})
}
