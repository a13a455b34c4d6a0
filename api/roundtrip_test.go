package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/testjson"
)

// normalized decodes JSON into plain Go values for comparison that ignores member order,
// spacing, escapes and number spelling (2.0 and 2).
func normalized(t testing.TB, b []byte) any {
	t.Helper()
	return decodeJSON[any](t, b)
}

func assertSameJSON(t testing.TB, got, want []byte) {
	t.Helper()
	if !reflect.DeepEqual(normalized(t, got), normalized(t, want)) {
		t.Errorf("JSON differs\n got %s\nwant %s", compact(t, got), compact(t, want))
	}
}

func compact(t testing.TB, b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// roundTrip decodes b into a fresh *T and encodes it again.
func roundTrip[T any](t testing.TB, b []byte) (*T, []byte) {
	t.Helper()
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return v, out
}

func TestJobRoundTripFull(t *testing.T) {
	in := readTestdata(t, "job_done_full.json")
	job, out := roundTrip[Job](t, in)
	// Everything round-trips but the callback URLs' last segment, which may be a token.
	assertSameJSON(t, out, bytes.ReplaceAll(in, []byte(`"https://hooks.example.com/cb"`), []byte(`"https://hooks.example.com/[token]"`)))
	if !strings.Contains(string(out), "123456789012345678901234567890") {
		t.Errorf("custom_metadata lost precision: %s", job.CustomMetadata)
	}

	// Unknown members of the record and its file land in Extra; the result is kept as the
	// bytes it came as, unknown members at every level included.
	if len(job.Extra) != 1 || len(job.File.Extra) != 1 {
		t.Errorf("record extra %v, file extra %v: want one unknown member each", job.Extra, job.File.Extra)
	}
	if len(job.Result) == 0 || !bytes.Contains(in, job.Result) {
		t.Errorf("result is not the bytes it came as: %.200s", job.Result)
	}
	for _, member := range []string{`"err_new":"e"`} {
		if !bytes.Contains(out, []byte(member)) {
			t.Errorf("round trip lost %s", member)
		}
	}

	// request_params decodes into the request type, keeps its unknown members at every level,
	// validates, and encodes back to the same JSON.
	params, err := job.PreRecordedParams()
	if err != nil {
		t.Fatal(err)
	}
	if err := params.Validate(); err != nil {
		t.Errorf("request_params do not validate: %v", err)
	}
	enc, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, enc, job.RequestParams)
	if len(params.Extra) != 1 || len(params.LanguageConfig.Extra) != 1 || len(params.CustomVocabularyConfig.Vocabulary[1].Extra) != 1 ||
		len(params.CustomSpellingConfig.Extra) != 1 || len(params.AudioToLLMConfig.Extra) != 1 ||
		len(params.StructuredDataExtractionConfig.Extra) != 1 || len(params.CodeSwitchingConfig.Extra) != 1 {
		t.Errorf("request_params lost unknown members: %s", enc)
	}
	// Normalizing a request that already carries its replacements changes nothing.
	norm := *params
	norm.Normalize()
	assertSameJSON(t, testjson.Marshal(t, norm), enc)
}

// TestJobRoundTripLead checks the lead's sample record. One loss is documented rather than
// hidden: a null that stands for an absent optional member (error_code here) is written back
// as absent. The result is kept raw, so its nulls stay.
func TestJobRoundTripLead(t *testing.T) {
	in := readTestdata(t, "job_done.json")
	job, out := roundTrip[Job](t, in)

	want := normalized(t, in).(map[string]any)
	delete(want, "error_code")
	if got := normalized(t, out); !reflect.DeepEqual(got, any(want)) {
		t.Errorf("round trip\n got %s\nwant %s", out, testjson.Marshal(t, want))
	}
	if string(job.Extra["top_new"]) != `"kept"` || !bytes.Contains(job.Result, []byte(`"brand_new_addon"`)) {
		t.Errorf("extras: %v, result %.200s", job.Extra, job.Result)
	}
	// Big numbers in raw members survive exactly.
	if !strings.Contains(string(out), "12345678901234567890") {
		t.Errorf("custom_metadata lost precision: %s", out)
	}
}

func TestJobRoundTripError(t *testing.T) {
	in := readTestdata(t, "job_error.json")
	job, out := roundTrip[Job](t, in)
	assertSameJSON(t, out, in)
	if job.File != nil || !isNull(job.RequestParams) || *job.ErrorCode != 500 || job.Status != StatusError {
		t.Errorf("decoded %+v", job)
	}
	if p, err := job.PreRecordedParams(); p != nil || err != nil {
		t.Errorf("PreRecordedParams of null = %v, %v", p, err)
	}
	if !strings.Contains(string(out), `"file":null`) || !strings.Contains(string(out), `"request_params":null`) {
		t.Errorf("null file and request_params must stay: %s", out)
	}
}

func TestLiveJobRecord(t *testing.T) {
	in := readTestdata(t, "job_live.json")
	job, out := roundTrip[Job](t, in)
	assertSameJSON(t, out, bytes.ReplaceAll(in, []byte(`"https://hooks.example.com/live"`), []byte(`"https://hooks.example.com/[token]"`)))
	result, err := job.DecodeResult()
	if err != nil {
		t.Fatal(err)
	}
	if job.Kind != KindLive || len(result.Messages) != 13 {
		t.Fatalf("kind %q, %d messages", job.Kind, len(result.Messages))
	}
	params, err := job.LiveParams()
	if err != nil {
		t.Fatal(err)
	}
	if err := params.Validate(); err != nil {
		t.Errorf("live request_params do not validate: %v", err)
	}
	assertSameJSON(t, testjson.Marshal(t, params), job.RequestParams)
	if string(params.Extra["live_param_new"]) != `"x"` {
		t.Errorf("live params extra %v", params.Extra)
	}
	ws := params.MessagesConfig.WebSocketCategories()
	cb := params.CallbackConfig.CallbackCategories()
	if !ws[CategoryPartialTranscripts] || !ws[CategorySpeechEvents] || ws[CategoryLifecycleEvents] {
		t.Errorf("websocket categories %v", ws)
	}
	if !cb[CategoryErrors] || !cb[CategoryLifecycleEvents] || cb[CategoryAcknowledgments] || !cb[CategoryFinalTranscripts] {
		t.Errorf("callback categories %v", cb)
	}

	wantTypes := []MessageType{
		MessageStartSession, MessageStartRecording, MessageAudioChunk, MessageSpeechStart, MessageTranscript,
		MessageTranscript, MessageTranslation, MessageSpeechEnd, MessageStopRecording, MessageEndRecording,
		MessagePostTranscript, MessagePostFinalTranscript, MessageEndSession,
	}
	wantCats := []MessageCategory{
		CategoryLifecycleEvents, CategoryLifecycleEvents, CategoryAcknowledgments, CategorySpeechEvents,
		CategoryPartialTranscripts, CategoryFinalTranscripts, CategoryRealtimeProcessingEvents, CategorySpeechEvents,
		CategoryAcknowledgments, CategoryLifecycleEvents, CategoryPostProcessingEvents, CategoryPostProcessingEvents,
		CategoryLifecycleEvents,
	}
	for i, s := range result.Messages {
		m, enc := roundTrip[LiveMessage](t, []byte(s))
		assertSameJSON(t, enc, []byte(s))
		if m.Type != wantTypes[i] {
			t.Errorf("message %d type %q, want %q", i, m.Type, wantTypes[i])
		}
		if c, ok := Category(m); !ok || c != wantCats[i] {
			t.Errorf("message %d (%s) category %q %v, want %q", i, m.Type, c, ok, wantCats[i])
		}
		if m.SessionID != job.ID {
			t.Errorf("message %d session %q", i, m.SessionID)
		}
	}
	var final TranscriptData
	m, _ := roundTrip[LiveMessage](t, []byte(result.Messages[5]))
	if err := m.DecodeData(&final); err != nil || !final.IsFinal || final.Utterance.Text != "hello" || final.ID != "u1" {
		t.Errorf("final transcript %+v, %v", final, err)
	}
	var post PostFinalTranscriptData
	m, _ = roundTrip[LiveMessage](t, []byte(result.Messages[11]))
	if err := m.DecodeData(&post); err != nil || post.Transcription.FullTranscript != "hello" {
		t.Errorf("post_final_transcript %+v, %v", post, err)
	}
}

func TestUnknownMembersMatchCaseInsensitively(t *testing.T) {
	// encoding/json fills audio_url from "AUDIO_URL"; keeping it in Extra too would let it win
	// over the real field on the next decode.
	in := `{"AUDIO_URL":"https://a.example.com/","audio_url":"https://b.example.com/","Language_Config":{"LANGUAGES":["en"]},"other":1}`
	r, out := roundTrip[PreRecordedRequest](t, []byte(in))
	if r.AudioURL != "https://b.example.com/" || len(r.Extra) != 1 || r.LanguageConfig == nil || r.LanguageConfig.Extra != nil {
		t.Fatalf("decoded %+v extra %v", r, r.Extra)
	}
	want := `{"audio_url":"https://b.example.com/","language_config":{"languages":["en"]},"other":1}`
	if string(out) != want {
		t.Errorf("encoded %s\nwant    %s", out, want)
	}
	// Extra set by hand with a case variant of a known member does not shadow the field.
	r2 := PreRecordedRequest{AudioURL: "https://c.example.com/", Extra: Extra{"Audio_Url": json.RawMessage(`"x"`)}}
	if got := string(testjson.Marshal(t, r2)); got != `{"audio_url":"https://c.example.com/"}` {
		t.Errorf("encoded %s", got)
	}
	// The Kelvin sign folds to k like encoding/json folds it.
	var v VocabularyTerm
	if err := json.Unmarshal([]byte("{\"value\":\"a\",\"\u212aeep\":1,\"VALUE\":\"b\"}"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Value != "b" || len(v.Extra) != 1 {
		t.Errorf("term %+v", v)
	}
}

func TestCustomVocabularyForms(t *testing.T) {
	cases := []struct {
		in     string
		isList bool
		on     bool
	}{
		{`true`, false, true},
		{`false`, false, false},
		{`[]`, true, true},
		{`["Gladys",{"value":"Zoë","pronunciations":["zoe"],"intensity":0.5,"language":"fr"},{"value":"plain-object"}]`, true, true},
	}
	for _, tc := range cases {
		in := `{"audio_url":"https://e.example.com/","custom_vocabulary":` + tc.in + `}`
		r, out := roundTrip[PreRecordedRequest](t, []byte(in))
		if string(out) != in {
			t.Errorf("round trip %s\n        -> %s", in, out)
		}
		if r.CustomVocabulary.IsList != tc.isList || r.CustomVocabulary.Enabled != tc.on {
			t.Errorf("%s decoded as %+v", tc.in, r.CustomVocabulary)
		}
	}
	r, _ := roundTrip[PreRecordedRequest](t, []byte(`{"custom_vocabulary":["a",{"value":"b"}]}`))
	terms := r.CustomVocabulary.Terms
	if !terms[0].Plain || terms[0].Value != "a" || terms[1].Plain || terms[1].Value != "b" {
		t.Errorf("terms %+v", terms)
	}
	for _, bad := range []string{`"yes"`, `1`, `{}`, `[1]`, `[null]`} {
		var p PreRecordedRequest
		if err := json.Unmarshal([]byte(`{"custom_vocabulary":`+bad+`}`), &p); err == nil {
			t.Errorf("custom_vocabulary %s decoded without error", bad)
		}
	}
}

func TestVocabularyTermForms(t *testing.T) {
	for _, in := range []string{
		`"plain"`,
		`{"value":"obj"}`,
		`{"value":"full","pronunciations":["a","b"],"intensity":1,"language":"en"}`,
		`{"value":"extra","weight_v2":3}`,
	} {
		_, out := roundTrip[VocabularyTerm](t, []byte(in))
		if string(out) != in {
			t.Errorf("%s -> %s", in, out)
		}
	}
	// A plain term given more fields in Go becomes an object.
	term := VocabularyTerm{Value: "x", Plain: true, Intensity: Float(0.2)}
	if got := string(testjson.Marshal(t, term)); got != `{"value":"x","intensity":0.2}` {
		t.Errorf("got %s", got)
	}
}

func TestTimeParsing(t *testing.T) {
	want := time.Date(2023, 12, 28, 9, 4, 17, 210_000_000, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2023-12-28T09:04:17.210Z", want},
		{"2023-12-28T09:04:17.21Z", want},
		{"2023-12-28T11:04:17.210+02:00", want},
		{"2023-12-28T09:04:17.210", want},
		{"2023-12-28 09:04:17.210", want},
		{"2023-12-28 10:04:17.210+01:00", want},
		{"2023-12-28T09:04:17Z", want.Truncate(time.Second)},
		{"2023-12-28T09:04:17", want.Truncate(time.Second)},
		{"2023-12-28T09:04:17.123456789Z", time.Date(2023, 12, 28, 9, 4, 17, 123456789, time.UTC)},
		{"2023-12-28", time.Date(2023, 12, 28, 0, 0, 0, 0, time.UTC)},
		{"0000-01-01T00:00:00Z", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"9999-12-31T23:59:59Z", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
	} {
		got, err := ParseTime(tc.in)
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "28/12/2023", "2023-12-28T25:00:00Z", "2023-02-30", "yesterday", "2023-12-28T09:04:17+0200x",
		"0000-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}

	// Encoding: UTC, milliseconds, zero is null.
	var tm Time
	if err := json.Unmarshal([]byte(`"2023-12-28T11:04:17.2109+02:00"`), &tm); err != nil {
		t.Fatal(err)
	}
	if got := string(testjson.Marshal(t, tm)); got != `"2023-12-28T09:04:17.210Z"` {
		t.Errorf("encoded %s", got)
	}
	if tm.String() != "2023-12-28T09:04:17.210Z" || (Time{}).String() != "" {
		t.Errorf("String() %q %q", tm.String(), Time{}.String())
	}
	if got := string(testjson.Marshal(t, Time{})); got != "null" {
		t.Errorf("zero encoded %s", got)
	}
	tm = Now()
	if err := json.Unmarshal([]byte(`null`), &tm); err != nil || !tm.IsZero() {
		t.Errorf("null decoded to %v, %v", tm, err)
	}
	for _, bad := range []string{`12`, `"x"`, `true`} {
		if err := json.Unmarshal([]byte(bad), &tm); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}

func TestCallbackBodies(t *testing.T) {
	cases := []struct {
		file string
		want Classified
	}{
		{"callback_success.json", Classified{Kind: CallbackJobSuccess, Event: EventTranscriptionSuccess, JobID: "0f4e7a55-4b8d-4c7e-9f0d-2f3b5b7b9a11"}},
		{"callback_error.json", Classified{Kind: CallbackJobError, Event: EventTranscriptionError, JobID: "7d2c8a10-1111-4c7e-9f0d-2f3b5b7b9a11"}},
		{"callback_live.json", Classified{Kind: CallbackLiveMessage, Event: "live.transcript", JobID: "3b1e5c2a-8f7d-4d1a-9c1b-5e6f7a8b9c0d", MessageType: MessageTranscript}},
		// The same event name, two shapes: a live callback has a top-level id and a message.
		{"callback_live_start_session.json", Classified{Kind: CallbackLiveMessage, Event: EventLiveStartSession, JobID: "3b1e5c2a-8f7d-4d1a-9c1b-5e6f7a8b9c0d", MessageType: MessageStartSession}},
		// ... the thin account webhook only payload.id.
		{"webhook_live_start_session.json", Classified{Kind: CallbackAccountWebhook, Event: EventLiveStartSession, JobID: "3b1e5c2a-8f7d-4d1a-9c1b-5e6f7a8b9c0d"}},
		{"webhook_transcription_success.json", Classified{Kind: CallbackAccountWebhook, Event: EventTranscriptionSuccess, JobID: "0f4e7a55-4b8d-4c7e-9f0d-2f3b5b7b9a11"}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			body := readTestdata(t, tc.file)
			got, err := ClassifyCallback(body)
			if err != nil || got != tc.want {
				t.Fatalf("ClassifyCallback = %+v, %v; want %+v", got, err, tc.want)
			}
			switch got.Kind {
			case CallbackJobSuccess, CallbackJobError:
				cb, out := roundTrip[JobCallback](t, body)
				assertSameJSON(t, out, body)
				if got.Kind == CallbackJobSuccess && (cb.Payload == nil || cb.Payload.Transcription.FullTranscript != "hello world") {
					t.Errorf("payload %+v", cb.Payload)
				}
				if got.Kind == CallbackJobError && (cb.Error == nil || cb.Error.Code != 500 || cb.Payload != nil) {
					t.Errorf("error %+v", cb.Error)
				}
				if string(cb.CustomMetadata) != `{"user":"a"}` {
					t.Errorf("custom_metadata %s", cb.CustomMetadata)
				}
			case CallbackLiveMessage:
				cb, out := roundTrip[LiveCallback](t, body)
				assertSameJSON(t, out, body)
				if cb.Event != LiveEvent(cb.Payload.Type) || cb.Payload.SessionID != cb.ID {
					t.Errorf("live callback %+v", cb)
				}
			case CallbackAccountWebhook:
				wh, out := roundTrip[AccountWebhook](t, body)
				assertSameJSON(t, out, body)
				if wh.Payload.ID != got.JobID {
					t.Errorf("webhook %+v", wh)
				}
			}
		})
	}
}

func TestClassifyCallbackRejects(t *testing.T) {
	for _, body := range []string{
		``,
		`not json`,
		`[]`,
		`null`,
		`{}`,
		`{"id":"x"}`,
		`{"event":"transcription.success"}`,
		`{"event":"transcription.success","payload":{}}`,
		`{"event":"transcription.success","payload":{"id":""}}`,
		`{"event":"transcription.success","payload":[1]}`,
		`{"id":"","event":"transcription.success","payload":{}}`,
		`{"id":"x","event":"transcription.success"}`,
		`{"id":"x","event":"transcription.success","payload":null}`,
		`{"id":"x","event":"transcription.error"}`,
		`{"id":"x","event":"transcription.error","error":null}`,
		`{"id":"x","event":"live.transcript","payload":{"data":{}}}`,
		`{"id":"x","event":"live.transcript","payload":{"type":""}}`,
		`{"id":"x","event":"live.transcript","payload":{"type":7}}`,
		`{"id":"x","event":"something.else","payload":{"type":"transcript"}}`,
		// Keys that authorise, in another case: two readers could take two different jobs.
		`{"id":"mine","Id":"other","event":"transcription.error","error":{"code":500,"message":"x"}}`,
		`{"ID":"other","id":"mine","event":"transcription.error","error":{"code":500,"message":"x"}}`,
		`{"iD":"other","event":"transcription.error","error":{"code":500,"message":"x"}}`,
		`{"id":"mine","\u0049d":"other","event":"transcription.error","error":{"code":500,"message":"x"}}`,
		`{"event":"transcription.success","payload":{"id":"mine","Id":"other"}}`,
		`{"event":"transcription.success","payload":{"ID":"other","id":"mine"}}`,
		`{"id":"s1","event":"live.transcript","payload":{"type":"transcript","session_id":"s1","Session_ID":"s2"}}`,
		`{"id":"s1","event":"live.transcript","payload":{"type":"transcript","SESSION_ID":"s2"}}`,
		// A message of another session under this session's id.
		`{"id":"s1","event":"live.transcript","payload":{"type":"transcript","session_id":"s2"}}`,
		`{"id":"s1","event":"live.transcript","payload":{"type":"transcript","session_id":7}}`,
	} {
		c, err := ClassifyCallback([]byte(body))
		if err == nil || !errors.Is(err, ErrUnclassified) || c != (Classified{}) {
			t.Errorf("ClassifyCallback(%s) = %+v, %v", body, c, err)
		}
	}
	// Exact duplicates stay as they were: both decoders take the last.
	for body, id := range map[string]string{
		`{"id":"a","id":"b","event":"transcription.error","error":{"code":1,"message":"x"}}`:                   "b",
		`{"id":"s1","event":"live.transcript","payload":{"type":"transcript","session_id":"s1"}}`:              "s1",
		`{"id":"s1","event":"live.transcript","payload":{"type":"transcript","session_id":""}}`:                "s1",
		`{"id":"s1","event":"live.transcript","payload":{"type":"transcript","session_id":null}}`:              "s1",
		`{"event":"transcription.success","payload":{"id":"a","id":"b"}}`:                                      "b",
		`{"id":"x","event":"transcription.error","error":{"code":1,"message":"x"},"Identity":"not a variant"}`: "x",
	} {
		if c, err := ClassifyCallback([]byte(body)); err != nil || c.JobID != id {
			t.Errorf("ClassifyCallback(%s) = %+v, %v; want job %s", body, c, err, id)
		}
	}
}
