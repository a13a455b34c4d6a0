package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/testjson"
)

// seedJobs adds a part of each testdata job record to the corpus, then seeds.
func seedJobs(f *testing.F, part func(*api.Job) [][]byte, seeds ...string) {
	f.Helper()
	for _, j := range api.TestdataJobs(f) {
		for _, p := range part(&j) {
			f.Add(p)
		}
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
}

// requestParams is the part of a job record that seeds a request fuzzer: the request_params
// of a job of kind.
func requestParams(kind api.JobKind) func(*api.Job) [][]byte {
	return func(j *api.Job) [][]byte {
		if j.Kind != kind || len(j.RequestParams) == 0 || string(j.RequestParams) == "null" {
			return nil
		}
		return [][]byte{j.RequestParams}
	}
}

// checkValidationError fails unless err is a non-empty ValidationErrors of well-formed
// sentences.
func checkValidationError(t *testing.T, err error) {
	t.Helper()
	var ve api.ValidationErrors
	if !errors.As(err, &ve) || len(ve) == 0 || !errors.Is(err, api.ErrValidation) {
		t.Fatalf("not a non-empty ValidationErrors: %#v", err)
	}
	for _, e := range ve {
		if e.Field == "" || e.Message == "" || !strings.HasPrefix(e.Sentence(), e.Field+" ") {
			t.Fatalf("malformed violation %#v", e)
		}
	}
}

// reencode checks that v encodes, that the encoding decodes into a value that encodes to the
// same bytes, and that decoding those bytes again gives an equal value: after one encoding,
// the value is a fixed point. It returns the decoded value. (The first decode may differ from
// the second in raw members' spacing and in an empty list that omitempty drops, hence no
// comparison with the input itself.)
func reencode[T any](t *testing.T, v *T) *T {
	t.Helper()
	b1, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	v2 := new(T)
	if err := json.Unmarshal(b1, v2); err != nil {
		t.Fatalf("decode own encoding %s: %v", b1, err)
	}
	b2, err := json.Marshal(v2)
	if err != nil {
		t.Fatalf("encode again: %v", err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
	}
	v3 := new(T)
	if err := json.Unmarshal(b2, v3); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v2, v3) {
		t.Fatalf("decoded values differ:\n%#v\n%#v", v2, v3)
	}
	return v2
}

// validRequest decodes data as a request and validates it, having called inspect first (the
// accessors that must not panic on any request that decodes). A request that does not decode,
// or does not validate (with a well-formed error), gives nil. A valid one must stay valid
// through its encoding: validRequest returns the request decoded from that encoding.
func validRequest[R any, P interface {
	*R
	Validate() error
}](t *testing.T, data []byte, inspect func(P)) P {
	t.Helper()
	r := P(new(R))
	if json.Unmarshal(data, r) != nil {
		return nil
	}
	if inspect != nil {
		inspect(r)
	}
	if err := r.Validate(); err != nil {
		checkValidationError(t, err)
		return nil
	}
	r2 := P(reencode(t, (*R)(r)))
	if err := r2.Validate(); err != nil {
		t.Fatalf("valid request invalid after encoding: %v", err)
	}
	return r2
}

func FuzzPreRecordedRequest(f *testing.F) {
	seedJobs(f, requestParams(api.KindPreRecorded),
		`{"audio_url":"https://example.com/a.wav"}`,
		`{"audio_url":"https://example.com/a.wav","language":"fr","language_config":{"languages":["en"]}}`,
		`{"audio_url":"http://h/a","detect_language":true,"enable_code_switching":true,"code_switching_config":{"languages":["en","fr"]}}`,
		`{"audio_url":"http://h/a","callback_url":"http://h/cb","callback_config":{"method":"PUT"}}`,
		`{"AUDIO_URL":"x","audio_url":"http://h/a","Language":"en"}`,
		`{"audio_url":"http://h/a","custom_vocabulary":["a",{"value":"b","intensity":0.5,"x":1}],"custom_metadata":{"k":"v"}}`,
		`{"audio_url":"http://h/a","subtitles_config":{"formats":["srt"],"minimum_duration":1,"maximum_duration":2}}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		r2 := validRequest[api.PreRecordedRequest](t, data, nil)
		if r2 == nil {
			return
		}
		// Normalize keeps a valid request valid and is idempotent.
		var n api.PreRecordedRequest
		if err := json.Unmarshal(testjson.Marshal(t, r2), &n); err != nil {
			t.Fatal(err)
		}
		n.Normalize()
		if err := n.Validate(); err != nil {
			t.Fatalf("valid request invalid after Normalize: %v\n%s", err, testjson.Marshal(t, n))
		}
		once := testjson.Marshal(t, n)
		n.Normalize()
		if twice := testjson.Marshal(t, n); !bytes.Equal(once, twice) {
			t.Fatalf("Normalize not idempotent:\n%s\n%s", once, twice)
		}
	})
}

func FuzzLiveRequest(f *testing.F) {
	seedJobs(f, requestParams(api.KindLive),
		`{}`,
		`{"encoding":"wav/alaw","sample_rate":8000}`,
		`{"encoding":"wav/ulaw","bit_depth":16}`,
		`{"channels":9,"endpointing":0.001,"pre_processing":{"speech_threshold":2}}`,
		`{"realtime_processing":{"translation":true,"translation_config":{"target_languages":["fr"]}},"callback":true,"callback_config":{"url":"https://h/x","receive_errors":false}}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		r2 := validRequest(t, data, func(r *api.LiveRequest) {
			_ = r.Settings()
			_ = r.MessagesConfig.WebSocketCategories()
			_ = r.CallbackConfig.CallbackCategories()
		})
		if r2 == nil {
			return
		}
		d := r2.WithDefaults()
		if err := d.Validate(); err != nil {
			t.Fatalf("valid request invalid with defaults: %v", err)
		}
		if d.Settings() != r2.Settings() {
			t.Fatalf("WithDefaults changed the settings: %+v vs %+v", d.Settings(), r2.Settings())
		}
		s := r2.Settings()
		if s.BytesPerSecond() <= 0 {
			t.Fatalf("valid settings with %d bytes per second", s.BytesPerSecond())
		}
	})
}

func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{
		"",
		"offset=0&limit=20",
		"offset=-1&limit=0",
		"limit=abc&offset=1&offset=2",
		"status=done,error&status=queued&kind=live",
		"date=2024-03-01&before_date=2024-03-02T00:00:00Z&after_date=2024-02-01",
		"after_date=2024-03-02&before_date=2024-03-01",
		"custom_metadata=%7B%22user%22%3A%22a%22%7D",
		"custom_metadata=%7B+%22a%22+%3A+%5B1%2C+2%5D+%7D",
		"custom_metadata=%5B%5D",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	job := &api.Job{Status: api.StatusDone, Kind: api.KindLive, CustomMetadata: json.RawMessage(`{"user":"a","n":1}`)}
	f.Fuzz(func(t *testing.T, raw string, live bool) {
		v, _ := url.ParseQuery(raw) // what did parse is still a query
		q, err := api.ParseListQuery(v, live)
		if err != nil {
			checkValidationError(t, err)
			return
		}
		if err := q.Validate(live); err != nil {
			t.Fatalf("parsed query does not validate: %v", err)
		}
		_ = q.Matches(job)
		back, err := api.ParseListQuery(q.Values(), live)
		if err != nil || !reflect.DeepEqual(back, q) {
			t.Fatalf("Values round trip: %+v, %v; want %+v", back, err, q)
		}
		v2, err := url.ParseQuery(q.Values().Encode())
		if err != nil {
			t.Fatal(err)
		}
		if back, err := api.ParseListQuery(v2, live); err != nil || !reflect.DeepEqual(back, q) {
			t.Fatalf("encoded round trip %q: %+v, %v; want %+v", q.Values().Encode(), back, err, q)
		}
	})
}

func FuzzClassifyCallback(f *testing.F) {
	api.SeedTestdata(f, "callback_*.json")
	api.SeedTestdata(f, "webhook_*.json")
	for _, s := range []string{
		`{"event":"transcription.error","payload":{"id":"x"}}`,
		`{"id":"x","event":"transcription.error","error":{"code":500,"message":"m"}}`,
		`{"id":null,"event":"live.end_session","payload":{"id":"s"}}`,
		`{"id":"s","event":"live.end_session","payload":{"type":"end_session"}}`,
		`{"id":"s","event":"live.x","payload":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := api.ClassifyCallback(body)
		// Exactly what the straightforward implementation gives, error text included.
		refC, refPayload, refErr := apitest.ReferenceClassifyCallback(body)
		if c != refC || fmt.Sprint(err) != fmt.Sprint(refErr) {
			t.Fatalf("classified as %+v, %v; the reference gives %+v, %v", c, err, refC, refErr)
		}
		if _, payload, _ := api.ClassifyCallbackPayload(body); err == nil && !bytes.Equal(payload, refPayload) {
			t.Fatalf("payload %q, the reference's %q", payload, refPayload)
		}
		if err != nil {
			if !errors.Is(err, api.ErrUnclassified) || c != (api.Classified{}) {
				t.Fatalf("error %v with %+v", err, c)
			}
			return
		}
		if c.Event == "" || c.JobID == "" {
			t.Fatalf("classified without event or id: %+v", c)
		}
		switch c.Kind {
		case api.CallbackJobSuccess, api.CallbackJobError, api.CallbackAccountWebhook:
			if c.MessageType != "" {
				t.Fatalf("message type on %+v", c)
			}
		case api.CallbackLiveMessage:
			if c.MessageType == "" || !strings.HasPrefix(c.Event, "live.") {
				t.Fatalf("live message %+v", c)
			}
		default:
			t.Fatalf("unknown kind %+v", c)
		}
		// Classification is a function of the JSON value, not of its spelling.
		var v any
		if json.Unmarshal(body, &v) == nil {
			if again, err := api.ClassifyCallback(testjson.Marshal(t, v)); err != nil || again != c {
				t.Fatalf("re-encoded body classified as %+v, %v; was %+v", again, err, c)
			}
		}
	})
}

func FuzzLiveMessage(f *testing.F) {
	seedJobs(f, func(j *api.Job) [][]byte {
		r, err := j.DecodeResult()
		if err != nil || r == nil {
			return nil
		}
		var out [][]byte
		for _, m := range r.Messages {
			out = append(out, []byte(m))
		}
		return out
	},
		`{"session_id":"s","created_at":"2024-03-01T10:00:00.000Z","type":"translation","error":{"message":"x"},"data":null}`,
		`{"session_id":"s","created_at":"2024-03-01T10:00:00.123456Z","type":"audio_chunk","acknowledged":false,"error":null}`,
		`{"type":"error","error":"plain"}`,
		`{"type":"transcript","data":{"is_final":true},"Type":"x","DATA":1}`,
		`{"created_at":"2024-03-01 10:00:00+02:00","type":"speaker_change","extra":[1,2]}`,
		`{"type":"transcript","acknowledged":true,"ACKNOWLEDGED":null,"data":null,"error":null,"session_id":null,"created_at":null}`,
		`{"type":"transcript","type":null,"Type":"speech_start","data":{"is_final":true},"Data":[]}`,
		`{"type":"audio_chunk","acknowledged":false,"acknowledged":1}`,
		`{"ty\u0070e":"x","type":"transcript"}`,
		// post_chapterization with sentences in both forms, named_entity_recognition.
		`{"session_id":"s","type":"post_chapterization","error":null,"data":{"results":[{"headline":"h","sentences":"One.\nTwo."}]}}`,
		`{"session_id":"s","type":"post_chapterization","error":null,"data":{"results":[{"sentences":[{"sentence":"One.","start":0,"end":1,"words":[{"word":"One.","start":0,"end":1,"confidence":1}]}]}]}}`,
		`{"session_id":"s","type":"named_entity_recognition","error":null,"data":{"utterance_id":"u","results":[{"entity_type":"NAME_GIVEN","text":"Sasha","start":1,"end":2}]}}`,
		`{"session_id":"s","type":"post_final_transcript","data":{"chapterization":{"results":[{"sentences":"a"}]},"named_entity_recognition":{"entity":"[]"}}}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m api.LiveMessage
		err := json.Unmarshal(data, &m)
		// DecodeLiveMessageHead is the message's Head, and fails with the message's error.
		head, herr := api.DecodeLiveMessageHead(data)
		if fmt.Sprint(herr) != fmt.Sprint(err) || (err == nil && !reflect.DeepEqual(head, m.Head())) {
			t.Fatalf("head %+v, %v; the message gives %+v, %v", head, herr, m.Head(), err)
		}
		// Of valid JSON, the one-scan reading gives the same.
		if json.Valid(data) {
			vhead, verr := api.DecodeValidLiveMessageHead(data)
			if fmt.Sprint(verr) != fmt.Sprint(herr) || !reflect.DeepEqual(vhead, head) {
				t.Fatalf("valid head %+v, %v; DecodeLiveMessageHead gives %+v, %v", vhead, verr, head, herr)
			}
		}
		if err != nil {
			return
		}
		cats := api.MessageCategories(&m)
		c, ok := api.Category(&m)
		if ok != (len(cats) > 0) || (ok && c != cats[0]) || (ok && !c.Valid()) {
			t.Fatalf("Category %q %v vs MessageCategories %q", c, ok, cats)
		}
		_ = m.ErrorMessage()
		checkTypedData(t, &m)
		m2 := reencode(t, &m)
		if got := api.MessageCategories(m2); !reflect.DeepEqual(got, cats) {
			t.Fatalf("categories changed by encoding: %q -> %q", cats, got)
		}
		// Wrapped in a live callback, the message classifies as itself.
		// (under its own session: a message of another session is refused, see below)
		sid := "s"
		if m2.SessionID != "" {
			sid = m2.SessionID
		}
		body := testjson.Marshal(t, api.LiveCallback{ID: sid, Event: api.LiveEvent(m2.Type), Payload: *m2})
		cl, err := api.ClassifyCallback(body)
		if m2.Type == "" {
			if err == nil {
				t.Fatalf("message without type classified: %+v", cl)
			}
			return
		}
		if err != nil || cl.Kind != api.CallbackLiveMessage || cl.MessageType != m2.Type || cl.JobID != sid {
			t.Fatalf("wrapped message classified as %+v, %v", cl, err)
		}
		if sid != "s" {
			other := testjson.Marshal(t, api.LiveCallback{ID: "s", Event: api.LiveEvent(m2.Type), Payload: *m2})
			if _, err := api.ClassifyCallback(other); !errors.Is(err, api.ErrUnclassified) {
				t.Fatalf("message of session %q classified under session s: %v", sid, err)
			}
		}
		var back api.LiveCallback
		if err := json.Unmarshal(body, &back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(testjson.Marshal(t, back.Payload), testjson.Marshal(t, m2)) {
			t.Fatalf("payload changed in the callback")
		}
	})
}

// checkTypedData decodes the data of the message types whose data has a typed reader that
// takes several forms (chapters, entities): whatever decodes must encode to a fixed point.
func checkTypedData(t *testing.T, m *api.LiveMessage) {
	t.Helper()
	switch m.Type {
	case api.MessagePostChapterization:
		var d api.ChapterizationData
		if m.DecodeData(&d) == nil {
			reencode(t, &d)
		}
	case api.MessageNamedEntityRecognition:
		var d api.NamedEntityData
		if m.DecodeData(&d) == nil {
			reencode(t, &d)
		}
	case api.MessagePostFinalTranscript:
		var d api.PostFinalTranscriptData
		if m.DecodeData(&d) == nil {
			reencode(t, &d)
		}
	}
}

// FuzzDecodeResult decodes results: the chapterization add-on in its object and array forms,
// chapter sentences as a string or an array, named entities in results or entity. Whatever
// decodes must encode, and its encoding must be a fixed point; encoding always writes the
// object form of chapters with sentences as an array.
func FuzzDecodeResult(f *testing.F) {
	seedJobs(f, func(j *api.Job) [][]byte {
		if len(j.Result) == 0 {
			return nil
		}
		return [][]byte{j.Result}
	},
		`{"chapterization":{"success":true,"is_empty":false,"exec_time":0,"error":null,"results":{"chapters":[]}}}`,
		`{"chapterization":{"success":true,"results":[{"headline":"h","keywords":["k"],"sentences":"One.\nTwo.","text":"One. Two."}]}}`,
		`{"chapterization":{"results":{"chapters":[{"sentences":[{"sentence":"One.","start":0,"end":1,"words":[{"word":"One.","start":0,"end":1,"confidence":1}]}]}]}}}`,
		`{"chapterization":{"results":null},"named_entity_recognition":{"results":null,"entity":null}}`,
		`{"named_entity_recognition":{"success":true,"results":[{"entity_type":"NAME_GIVEN","text":"Sasha","start":1.5,"end":1.9}]}}`,
		`{"named_entity_recognition":{"entity":"[{\"entity_type\":\"person\",\"text\":\"Zoë\"}]"}}`,
		`{"named_entity_recognition":{"entity":[{"entity_type":"person","text":"Zoë"}]}}`,
		`{"named_entity_recognition":{"entity":"free text"}}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := api.DecodeResult(data)
		if err != nil || r == nil {
			return
		}
		r2 := reencode(t, r)
		if c := r2.Chapterization; c != nil {
			b := testjson.Marshal(t, c.Results)
			if !bytes.HasPrefix(b, []byte(`{"chapters":[`)) || bytes.Contains(b, []byte(`"sentences":"`)) {
				t.Fatalf("chapters not written in the object form: %s", b)
			}
		}
	})
}
