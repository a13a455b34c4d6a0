package api

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/scribehook/scribehook/internal/plainjson"
)

// The reference of each hand encoding is the general encoding it replaced, level by level:
// Word, Utterance, Transcription, Result and Job are each compared with encodeKeeping of their
// own fields (encodeGeneral, generalResult, generalJob), in which the children are encoded by
// their own MarshalJSON, compared with their general encoding in turn. Where every level
// matches, the whole record is what encodeKeeping at every level gives.

// generalResult and generalJob are the encodings appendResult and appendJob replaced.
func generalResult(r *Result) ([]byte, error) {
	type plain Result
	return encodeKeeping(plain(*r), r.Extra)
}

func generalJob(j *Job) ([]byte, error) {
	type plain Job
	p := plain(*j)
	if len(p.RequestParams) == 0 {
		p.RequestParams = json.RawMessage("null")
	}
	return encodeKeeping(p, j.Extra)
}

// copied is what marshal (json.Marshal or plainjson.Marshal) writes when the bytes of a
// MarshalJSON that gave b and err are copied into its output.
func copied(marshal func(any) ([]byte, error), b []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return marshal(json.RawMessage(b))
}

// sameEncoding fails unless got and want are the same bytes, or both an error.
func sameEncoding(t *testing.T, what string, got []byte, gotErr error, want []byte, wantErr error) {
	t.Helper()
	if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("%s:\n%s (%v)\nreference:\n%s (%v)", what, got, gotErr, want, wantErr)
	}
}

// checkLevel compares v's encoding by a parent encoder (json.Marshal of a pointer to it) with
// its general encoding copied the same way.
func checkLevel(t *testing.T, what string, v json.Marshaler, general func() ([]byte, error)) {
	t.Helper()
	got, gotErr := json.Marshal(v)
	b, err := general()
	want, wantErr := copied(json.Marshal, b, err)
	sameEncoding(t, what, got, gotErr, want, wantErr)
}

// checkEncoding compares the hand encoding of tr, of each of its utterances and of each of
// their words with the reference.
func checkEncoding(t *testing.T, tr Transcription) {
	t.Helper()
	checkLevel(t, "transcription", &tr, tr.encodeGeneral)
	// Its own MarshalJSON, without a parent compacting it, is already that.
	got, gotErr := json.Marshal(&tr)
	if own, err := tr.MarshalJSON(); gotErr == nil && len(tr.Extra) == 0 && (err != nil || !bytes.Equal(own, got)) {
		t.Fatalf("MarshalJSON:\n%s (%v)\njson.Marshal:\n%s", own, err, got)
	}
	for i := range tr.Utterances {
		u := &tr.Utterances[i]
		checkLevel(t, "utterance", u, u.encodeGeneral)
		for j := range u.Words {
			checkLevel(t, "word", &u.Words[j], u.Words[j].encodeGeneral)
		}
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
	for _, j := range TestdataJobs(f) {
		if j.Result != nil && j.Result.Transcription != nil {
			b, _ := json.Marshal(j.Result.Transcription)
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

// checkJobEncoding compares every way a record is encoded (json.Marshal, the plain encoder,
// EncodeJob both ways; the result alone both ways, and its transcription) with the reference.
func checkJobEncoding(t *testing.T, j Job) {
	t.Helper()
	general, generalErr := generalJob(&j)
	want, wantErr := copied(json.Marshal, general, generalErr)
	got, err := json.Marshal(j)
	sameEncoding(t, "json.Marshal", got, err, want, wantErr)
	got, err = EncodeJob(&j, true)
	sameEncoding(t, "EncodeJob(escapeHTML)", got, err, want, wantErr)
	want, wantErr = copied(plainjson.Marshal, general, generalErr)
	got, err = plainjson.Marshal(j)
	sameEncoding(t, "plain encoder", got, err, want, wantErr)
	got, err = EncodeJob(&j, false)
	sameEncoding(t, "EncodeJob(plain)", got, err, want, wantErr)
	if r := j.Result; r != nil {
		general, generalErr = generalResult(r)
		want, wantErr = copied(json.Marshal, general, generalErr)
		got, err = json.Marshal(r)
		sameEncoding(t, "result", got, err, want, wantErr)
		want, wantErr = copied(plainjson.Marshal, general, generalErr)
		got, err = plainjson.Marshal(r)
		sameEncoding(t, "result, plain encoder", got, err, want, wantErr)
		if r.Transcription != nil {
			checkEncoding(t, *r.Transcription)
		}
	}
}

func TestJobEncodingMatchesReference(t *testing.T) {
	for _, j := range TestdataJobs(t) {
		checkJobEncoding(t, j)
		j.Extra = Extra{"zeta": json.RawMessage(` { "a" : "<&>" } `), "aa": nil}
		checkJobEncoding(t, j)
		if j.Result != nil {
			j.Result.Extra = Extra{"zz": json.RawMessage(`[ "<" ]`), "transcription": json.RawMessage(`1`)}
			checkJobEncoding(t, j)
		}
	}
	checkJobEncoding(t, Job{})
	checkJobEncoding(t, Job{Result: &Result{Messages: []string{}}, RequestParams: json.RawMessage(`{ "a": 1 }`)})
}

// FuzzJobEncoding checks the encoding of any record that decodes against the reference.
func FuzzJobEncoding(f *testing.F) {
	SeedTestdata(f, "job_*.json")
	f.Add([]byte(`{"id":"<x>","result":{"transcription":{"utterances":[{"words":[{"word":"&"}],"k":" <"}]},"q":{ }},"z":[ 1 ]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var j Job
		if json.Unmarshal(data, &j) != nil {
			return
		}
		checkJobEncoding(t, j)
	})
}

var decodeSeeds = []string{
	`{"start":1,"end":2.5,"confidence":0.9,"channel":0,"words":[{"word":"a","start":1,"end":2,"confidence":0.5}],"text":"a","language":"en","speaker":2}`,
	`{"start":-0,"channel":-1,"speaker":null,"words":null,"text":"q\"\u00e9 \ud800","language":""}`,
	`{"words":[],"words":[{"word":"b"}]}`, `{"words":[{"word":"a","start":1}],"words":[{"word":"b"}]}`,
	`{"channel":1.0}`, `{"channel":1e2}`, `{"channel":9223372036854775808}`, `{"speaker":"1"}`, `{"Text":"x"}`,
	`{"words":[null]}`, `{"words":[{"word":"a","x":1}]}`, `{"text":"a"} `, ` {"text":"a",}`, `{"text":"a"}}`,
	`{"full_transcript":"a b","languages":["en",null],"utterances":[{"text":"a"}]}`,
	`{"full_transcript":"a\nb","languages":["en"],"utterances":null,"languages":[]}`,
	`{"utterances":[{"text":"a"},{"words":[{"word":"w","start":0,"end":1,"confidence":1}]}],"sentences":[]}`,
	`{"utterances":[{"text":"a"}],"utterances":[{}]}`, `null`, `[]`, `{}`,
	`{"metadata":{"audio_duration":1},"transcription":{"full_transcript":"a","utterances":[]},"messages":["x"],"summarization":null}`,
	`{"transcription":null,"diarization":{"success":true,"results":[{"text":"a"}]},"chapterization":{"results":{ "a" : 1 }}}`,
	`{"transcription":{"utterances":[{"text":"a","k":1}]},"sentences":{"results":["s"]},"Messages":[]}`,
	`{"transcription":{},"transcription":{}}`, `{"metadata":[]}`, `{"metadata":{"audio_duration":"x"}}`, `{"x":1}`,
}

// checkDecoding compares UnmarshalJSON of an utterance, a transcription and a result (their
// fast decodings where they apply) with the general decoding, from the zero value.
func checkDecoding(t *testing.T, data []byte) {
	t.Helper()
	sameDecoding(t, "utterance", data, (*Utterance).UnmarshalJSON, func(u *Utterance) error {
		type plain Utterance
		return decodeKeeping(data, (*plain)(u), &u.Extra)
	})
	sameDecoding(t, "transcription", data, (*Transcription).UnmarshalJSON, func(tr *Transcription) error {
		type plain Transcription
		return decodeKeeping(data, (*plain)(tr), &tr.Extra)
	})
	sameDecoding(t, "result", data, (*Result).UnmarshalJSON, func(r *Result) error {
		type plain Result
		return decodeKeeping(data, (*plain)(r), &r.Extra)
	})
}

// sameDecoding fails unless unmarshal and general decode data into a new T alike: both fail,
// or both give the same value.
func sameDecoding[T any](t *testing.T, what string, data []byte, unmarshal func(*T, []byte) error, general func(*T) error) {
	t.Helper()
	var got, want T
	gotErr := unmarshal(&got, data)
	wantErr := general(&want)
	if (gotErr != nil) != (wantErr != nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%s from %q: %+v, %v; the general decoding gives %+v, %v", what, data, got, gotErr, want, wantErr)
	}
}

func TestFastDecodingMatchesGeneral(t *testing.T) {
	for _, s := range decodeSeeds {
		checkDecoding(t, []byte(s))
	}
}

// FuzzFastDecoding checks the fast decodings of utterances and transcriptions against the
// general one.
func FuzzFastDecoding(f *testing.F) {
	for _, s := range append(decodeSeeds, encodeSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecoding(t, data)
	})
}

var headSeeds = []string{
	`{"id":"x","event":"live.transcript","payload":{"type":"transcript"},"error":null}`,
	`{"ID":"a","Id":null,"EVENT":"e","event":null,"Payload":[1],"payload":{ },"error":{"code":1}}`,
	`{"id":"\u00e9\\"","event":"a\nb"}`, `{"id":5}`, `{"event":true}`, `{"id":"x"`, `[]`, `null`, `{}`, ` {"id" : "x" } `,
	`{"ſd":"x"}`, `{"i\u0064":"x"}`, `{"id":"x","id":"y"}`,
}

// checkCallbackHead compares the one-scan reading of an envelope with its decoding.
func checkCallbackHead(t *testing.T, body []byte) {
	t.Helper()
	got, ok := scanCallbackHead(body)
	if !ok {
		return
	}
	var want callbackSpans
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("%q scanned, but does not decode: %v", body, err)
	}
	if (got.ID == nil) != (want.ID == nil) || (got.ID != nil && *got.ID != *want.ID) || got.Event != want.Event ||
		!bytes.Equal(got.Payload, want.Payload) || !bytes.Equal(got.Error, want.Error) {
		t.Fatalf("%q: scanned %+v, decoded %+v", body, got, want)
	}
}

func TestCallbackHeadMatchesDecoding(t *testing.T) {
	for _, s := range headSeeds {
		checkCallbackHead(t, []byte(s))
	}
}

func FuzzCallbackHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkCallbackHead)
}
