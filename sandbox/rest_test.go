package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/submitter"
)

var requestIDPattern = regexp.MustCompile(`^G-[0-9a-f]{8}$`)

// checkEnvelope asserts the error envelope of provider-facts.md.
func checkEnvelope(t *testing.T, status int, body []byte, wantStatus int, wantPath, wantMessage string) api.ErrorResponse {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status = %d, want %d; body %s", status, wantStatus, body)
	}
	var raw map[string]any
	decodeJSON(t, body, &raw)
	for _, k := range []string{"timestamp", "path", "request_id", "statusCode", "message"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("error envelope lacks %q: %s", k, body)
		}
	}
	var e api.ErrorResponse
	decodeJSON(t, body, &e)
	if e.StatusCode != wantStatus || e.Path != wantPath || !requestIDPattern.MatchString(e.RequestID) {
		t.Errorf("envelope = %+v, want statusCode %d path %s and a G- request id", e, wantStatus, wantPath)
	}
	if time.Since(e.Timestamp.Time) > time.Minute {
		t.Errorf("timestamp %v is not now", e.Timestamp)
	}
	if wantMessage != "" && e.Message != wantMessage {
		t.Errorf("message = %q, want %q", e.Message, wantMessage)
	}
	return e
}

func TestErrorCodesAndEnvelope(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.MaxBodyBytes = 4096 })
	valid := testjson.Marshal(t, api.PreRecordedRequest{AudioURL: "https://example.com/a.wav"})
	cases := []struct {
		name        string
		method      string
		path        string
		key         string
		body        []byte
		wantStatus  int
		wantMessage string
	}{
		{"missing key", "GET", "/v2/pre-recorded", "", nil, 401, "missing API key: send it in the x-service-key header"},
		{"wrong key", "POST", "/v2/pre-recorded", "nope", valid, 401, "invalid API key"},
		{"wrong key on live", "POST", "/v2/live", "nope", []byte(`{}`), 401, "invalid API key"},
		{"unknown pre-recorded id", "GET", "/v2/pre-recorded/" + uuid.NewString(), testKey, nil, 404, ""},
		{"unknown live id", "GET", "/v2/live/" + uuid.NewString(), testKey, nil, 404, ""},
		{"unknown transcription id", "GET", "/v2/transcription/nope", testKey, nil, 404, "job nope not found"},
		{"delete unknown", "DELETE", "/v2/pre-recorded/nope", testKey, nil, 404, "pre-recorded job nope not found"},
		{"unknown route", "GET", "/v3/whatever", testKey, nil, 404, "Cannot GET /v3/whatever"},
		{"body too large", "POST", "/v2/pre-recorded", testKey, []byte(`{"audio_url":"https://e.com/a.wav","context_prompt":"` + strings.Repeat("x", 5000) + `"}`), 413, "request body exceeds 4096 bytes"},
		{"malformed json", "POST", "/v2/pre-recorded", testKey, []byte(`{"audio_url":`), 400, ""},
		{"empty body", "POST", "/v2/pre-recorded", testKey, nil, 400, "request body is empty: a JSON object is required"},
		{"wrong type", "POST", "/v2/pre-recorded", testKey, []byte(`{"audio_url":"https://e.com/a.wav","diarization":"yes"}`), 422, ""},
		{"wrong type live", "POST", "/v2/live", testKey, []byte(`{"channels":"two"}`), 422, ""},
		{"invalid region", "POST", "/v2/live?region=mars", testKey, []byte(`{}`), 422, ""},
		{"bad list query", "GET", "/v2/pre-recorded?limit=0", testKey, nil, 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := e.raw(tc.method, tc.path, tc.key, "application/json", tc.body)
			path := tc.path
			if i := strings.IndexByte(path, '?'); i >= 0 {
				path = path[:i]
			}
			checkEnvelope(t, status, body, tc.wantStatus, path, tc.wantMessage)
		})
	}
}

func TestValidationListsEveryViolation(t *testing.T) {
	e := newEnv(t, nil)
	body := []byte(`{
		"audio_url": "ftp://example.com/a.wav",
		"language": "xx",
		"subtitles": true,
		"subtitles_config": {"formats": ["srt", "ass"], "maximum_rows_per_caption": 9},
		"callback": true,
		"callback_config": {"url": "https://example.com/cb", "method": "PATCH"},
		"summarization": true,
		"summarization_config": {"type": "haiku"},
		"diarization_config": {"number_of_speakers": 0}
	}`)
	status, resp, _ := e.raw("POST", "/v2/pre-recorded", testKey, "application/json", body)
	env := checkEnvelope(t, status, resp, 400, "/v2/pre-recorded", "invalid request parameters")
	if len(env.ValidationErrors) != 7 {
		t.Fatalf("validation_errors = %d %q, want 7", len(env.ValidationErrors), env.ValidationErrors)
	}
	for _, field := range []string{"audio_url", "language", "subtitles_config.formats[1]", "subtitles_config.maximum_rows_per_caption",
		"callback_config.method", "summarization_config.type", "diarization_config.number_of_speakers"} {
		found := false
		for _, s := range env.ValidationErrors {
			if strings.HasPrefix(s, field+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no sentence names %s: %q", field, env.ValidationErrors)
		}
	}
	// The same through the client: a typed error carrying the list.
	_, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: "not a url"})
	var apiErr *submitter.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || len(apiErr.ValidationErrors) != 1 || !requestIDPattern.MatchString(apiErr.RequestID) {
		t.Fatalf("client error = %#v", err)
	}

	live := []byte(`{"encoding":"wav/mp3","bit_depth":12,"sample_rate":22050,"channels":9,"endpointing":0,"maximum_duration_without_endpointing":61,"pre_processing":{"speech_threshold":1.5}}`)
	status, resp, _ = e.raw("POST", "/v2/live", testKey, "application/json", live)
	env = checkEnvelope(t, status, resp, 400, "/v2/live", "invalid request parameters")
	if len(env.ValidationErrors) != 7 {
		t.Fatalf("live validation_errors = %q, want 7", env.ValidationErrors)
	}
}

func TestPreRecordedLifecycleAndCallback(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.ProcessingDelay = 150 * time.Millisecond })
	wav := speechLike(t, 4, [][2]float64{{0.5, 1.5}, {2.2, 3.4}}, 16000)
	audioURL := e.files.put("/calls/a.wav", wav)
	ctx := context.Background()
	before := time.Now().UTC().Add(-time.Second)
	created, err := e.client.CreatePreRecorded(ctx, api.PreRecordedRequest{
		AudioURL:          audioURL,
		Callback:          api.Bool(true),
		CallbackConfig:    &api.CallbackConfig{URL: e.hooks.url("/cb/1"), Method: "PUT"},
		CustomMetadata:    json.RawMessage(`{"customer":"acme","n":7}`),
		Subtitles:         api.Bool(true),
		Sentences:         api.Bool(true),
		Translation:       api.Bool(true),
		TranslationConfig: &api.TranslationConfig{TargetLanguages: []string{"fr"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(created.ID); err != nil {
		t.Fatalf("id %q is not a UUID", created.ID)
	}
	if created.ResultURL != e.svc.URL+"/v2/pre-recorded/"+created.ID {
		t.Errorf("result_url = %q", created.ResultURL)
	}
	// queued → processing → done, observed by polling the sandbox.
	seen := map[api.JobStatus]bool{}
	var job api.Job
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		job, err = e.client.GetPreRecorded(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		seen[job.Status] = true
		if job.Status.Final() {
			break
		}
	}
	if !seen[api.StatusQueued] || !seen[api.StatusProcessing] || job.Status != api.StatusDone {
		t.Fatalf("states seen %v, final %s", seen, job.Status)
	}
	if job.Kind != api.KindPreRecorded || job.Version != 2 || !requestIDPattern.MatchString(job.RequestID) {
		t.Errorf("record = kind %s version %d request_id %s", job.Kind, job.Version, job.RequestID)
	}
	if job.CreatedAt.Before(before) || job.CompletedAt == nil || job.CompletedAt.Before(job.CreatedAt.Time) || job.ErrorCode != nil {
		t.Errorf("times: created %v completed %v error_code %v", job.CreatedAt, job.CompletedAt, job.ErrorCode)
	}
	if string(job.CustomMetadata) != `{"customer":"acme","n":7}` {
		t.Errorf("custom_metadata = %s", job.CustomMetadata)
	}
	if job.File == nil || job.File.Filename != "a.wav" || job.File.Source != audioURL || job.File.AudioDuration != 4 || job.File.NumberOfChannels != 1 {
		t.Errorf("file = %+v", job.File)
	}
	params, err := job.PreRecordedParams()
	if err != nil || params.AudioURL != audioURL || params.CustomMetadata != nil || !api.IsTrue(params.Subtitles) {
		t.Errorf("request_params = %s (%v)", job.RequestParams, err)
	}
	res := apitest.MustResult(&job)
	if res == nil || res.Metadata == nil || res.Transcription == nil {
		t.Fatalf("result = %+v", res)
	}
	if res.Metadata.AudioDuration != 4 || res.Metadata.BillingTime != 4 || res.Metadata.NumberOfDistinctChannels != 1 {
		t.Errorf("metadata = %+v", res.Metadata)
	}
	utts := res.Transcription.Utterances
	if len(utts) != 2 {
		t.Fatalf("utterances = %d, want one per voiced stretch (2)", len(utts))
	}
	for i, u := range utts {
		burst := [][2]float64{{0.5, 1.5}, {2.2, 3.4}}[i]
		if u.Start < burst[0]-0.1 || u.End > burst[1]+0.1 || len(u.Words) == 0 {
			t.Errorf("utterance %d = %.3f–%.3f with %d words, want inside %v", i, u.Start, u.End, len(u.Words), burst)
		}
	}
	if len(res.Transcription.Subtitles) != 1 || res.Transcription.Subtitles[0].Format != "srt" ||
		!strings.HasPrefix(res.Transcription.Subtitles[0].Subtitles, "1\n00:00:00,") {
		t.Errorf("subtitles = %+v", res.Transcription.Subtitles)
	}
	if res.Sentences == nil || !res.Sentences.Success || len(res.Sentences.Results) == 0 {
		t.Errorf("sentences = %+v", res.Sentences)
	}
	// An add-on without a model fails in its envelope while the job is done.
	if res.Translation == nil || res.Translation.Success || res.Translation.Error == nil || len(res.Translation.Results) != 1 {
		t.Errorf("translation = %+v", res.Translation)
	}

	hooks := e.hooks.waitFor(t, "job callback", func(h []hook) bool { return len(h) >= 1 })
	time.Sleep(100 * time.Millisecond)
	hooks = e.hooks.all()
	if len(hooks) != 1 {
		t.Fatalf("callbacks = %d, want exactly 1", len(hooks))
	}
	h := hooks[0]
	if h.Method != "PUT" || h.Path != "/cb/1" || h.Header.Get("Content-Type") != "application/json" {
		t.Errorf("callback request = %s %s %s", h.Method, h.Path, h.Header.Get("Content-Type"))
	}
	var body map[string]json.RawMessage
	decodeJSON(t, h.Body, &body)
	if len(body) != 4 || string(body["id"]) != `"`+created.ID+`"` || string(body["event"]) != `"transcription.success"` ||
		string(body["custom_metadata"]) != `{"customer":"acme","n":7}` {
		t.Errorf("callback body members = %s", truncate(h.Body))
	}
	// The payload is the full result, the same as result in GET.
	var payload, fromGet any
	decodeJSON(t, body["payload"], &payload)
	decodeJSON(t, job.Result, &fromGet)
	if !reflect.DeepEqual(payload, fromGet) {
		t.Errorf("callback payload differs from the GET result")
	}
	c, err := api.ClassifyCallback(h.Body)
	if err != nil || c.Kind != api.CallbackJobSuccess || c.JobID != created.ID {
		t.Errorf("classify = %+v %v", c, err)
	}
}

func TestSidecarWordsAreReturnedExactly(t *testing.T) {
	e := newEnv(t, nil)
	wav := speechLike(t, 3, [][2]float64{{0.2, 2.5}}, 16000)
	audioURL := e.files.put("/s/hello.wav", wav)
	e.files.put("/s/hello.wav.json", []byte(`{"utterances":[{"start":0.3,"end":1.9,"speaker":1,"channel":0,"words":[
		{"word":"hello","start":0.3,"end":0.7,"confidence":0.98},
		{"word":"sandbox","start":0.8,"end":1.4,"confidence":0.91},
		{"word":"world","start":1.5,"end":1.9,"confidence":0.88}]}]}`))
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: audioURL})
	if err != nil {
		t.Fatal(err)
	}
	job := e.waitJob(created.ID, api.KindPreRecorded)
	tr := apitest.MustResult(&job).Transcription
	if tr.FullTranscript != "hello sandbox world" || len(tr.Utterances) != 1 {
		t.Fatalf("transcript = %q (%d utterances)", tr.FullTranscript, len(tr.Utterances))
	}
	u := tr.Utterances[0]
	want := []api.Word{{Word: "hello", Start: 0.3, End: 0.7, Confidence: 0.98}, {Word: " sandbox", Start: 0.8, End: 1.4, Confidence: 0.91}, {Word: " world", Start: 1.5, End: 1.9, Confidence: 0.88}}
	if !reflect.DeepEqual(u.Words, want) || u.Start != 0.3 || u.End != 1.9 || u.Speaker == nil || *u.Speaker != 1 || u.Text != "hello sandbox world" {
		t.Errorf("utterance = %+v", u)
	}
}

func TestUndecodableAudioEndsInErrorWithCallback(t *testing.T) {
	e := newEnv(t, nil)
	cases := []struct {
		name     string
		data     []byte
		wantCode int
		wantMsg  string
	}{
		{"not audio", []byte("<html>hello</html>"), 422, "audio could not be decoded"},
		{"truncated header", []byte("RIFF\x10\x00\x00\x00WAVEfmt "), 422, "audio could not be decoded"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			audioURL := e.files.put("/bad/"+tc.name, tc.data)
			created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{
				AudioURL: audioURL, CallbackURL: e.hooks.url("/err"), CustomMetadata: json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`),
			})
			if err != nil {
				t.Fatal(err)
			}
			job := e.waitJob(created.ID, api.KindPreRecorded)
			if job.Status != api.StatusError || job.ErrorCode == nil || *job.ErrorCode != tc.wantCode || job.CompletedAt == nil || len(job.Result) > 0 {
				t.Fatalf("job = status %s code %v", job.Status, job.ErrorCode)
			}
			hooks := e.hooks.waitFor(t, "error callback", func(h []hook) bool {
				for _, x := range h {
					if bytes.Contains(x.Body, []byte(created.ID)) {
						return true
					}
				}
				return false
			})
			var cb api.JobCallback
			for _, x := range hooks {
				if bytes.Contains(x.Body, []byte(created.ID)) {
					if x.Method != "POST" {
						t.Errorf("deprecated callback_url used %s, want POST", x.Method)
					}
					decodeJSON(t, x.Body, &cb)
					var members map[string]json.RawMessage
					decodeJSON(t, x.Body, &members)
					if _, has := members["payload"]; has {
						t.Errorf("error callback has a payload: %s", x.Body)
					}
				}
			}
			if cb.Event != api.EventTranscriptionError || cb.Error == nil || cb.Error.Code != tc.wantCode || !strings.HasPrefix(cb.Error.Message, tc.wantMsg) {
				t.Errorf("callback = %+v", cb)
			}
		})
	}
	// An audio_url that answers 404 fails the job with 400.
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: e.files.srv.URL + "/missing.wav"})
	if err != nil {
		t.Fatal(err)
	}
	job := e.waitJob(created.ID, api.KindPreRecorded)
	if job.Status != api.StatusError || *job.ErrorCode != 400 {
		t.Errorf("missing audio: status %s code %v", job.Status, job.ErrorCode)
	}
}

func TestDeprecatedEndpointAndFieldsAreMapped(t *testing.T) {
	e := newEnv(t, nil)
	audioURL := e.files.put("/d/a.wav", speechLike(t, 2, [][2]float64{{0.3, 1.5}}, 16000))
	created, err := e.client.CreateTranscription(context.Background(), api.PreRecordedRequest{
		AudioURL:            audioURL,
		Language:            "fr",
		EnableCodeSwitching: api.Bool(true),
		CallbackURL:         e.hooks.url("/legacy"),
	})
	if err != nil {
		t.Fatal(err)
	}
	job := e.waitJob(created.ID, api.KindPreRecorded)
	var params map[string]any
	decodeJSON(t, job.RequestParams, &params)
	// Read back through the Go client, callback URLs come redacted (api.RedactRequestParams).
	legacy := api.RedactCallbackURL(e.hooks.url("/legacy"))
	want := map[string]any{
		"language":              "fr",
		"enable_code_switching": true,
		"callback_url":          legacy,
		"language_config":       map[string]any{"languages": []any{"fr"}, "code_switching": true},
		"callback":              true,
		"callback_config":       map[string]any{"url": legacy, "method": "POST"},
	}
	for k, v := range want {
		if !reflect.DeepEqual(params[k], v) {
			t.Errorf("request_params.%s = %#v, want %#v", k, params[k], v)
		}
	}
	if apitest.MustResult(&job).Transcription.Languages[0] != "fr" {
		t.Errorf("languages = %v", apitest.MustResult(&job).Transcription.Languages)
	}
	hooks := e.hooks.waitFor(t, "legacy callback", func(h []hook) bool { return len(h) == 1 })
	if hooks[0].Method != "POST" || hooks[0].Path != "/legacy" {
		t.Errorf("legacy callback = %s %s", hooks[0].Method, hooks[0].Path)
	}
	// The deprecated GET returns the same record.
	again, err := e.client.GetTranscription(context.Background(), created.ID)
	if err != nil || again.ID != job.ID || again.Status != api.StatusDone {
		t.Errorf("GET /v2/transcription/{id} = %+v %v", again.ID, err)
	}
}

func TestDeleteAnswers202ThenGone(t *testing.T) {
	e := newEnv(t, nil)
	audioURL := e.files.put("/x.wav", speechLike(t, 1, nil, 16000))
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: audioURL})
	if err != nil {
		t.Fatal(err)
	}
	e.waitJob(created.ID, api.KindPreRecorded)
	// A pre-recorded id is not a live session.
	if err := e.client.DeleteLive(context.Background(), created.ID); !submitter.IsStatus(err, 404) {
		t.Fatalf("delete as live = %v, want 404", err)
	}
	status, body, _ := e.raw("DELETE", "/v2/pre-recorded/"+created.ID, testKey, "", nil)
	if status != http.StatusAccepted || len(body) != 0 {
		t.Fatalf("delete = %d %s", status, body)
	}
	if _, err := e.client.GetPreRecorded(context.Background(), created.ID); !submitter.IsStatus(err, 404) {
		t.Fatalf("get after delete = %v, want 404", err)
	}
}

func TestUploadServesAudioURL(t *testing.T) {
	e := newEnv(t, nil)
	wav := speechLike(t, 2, [][2]float64{{0.4, 1.6}}, 16000)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, _ := mw.CreateFormFile("audio", "meeting.wav")
	part.Write(wav)
	mw.Close()
	status, body, _ := e.raw("POST", "/v2/upload", testKey, mw.FormDataContentType(), buf.Bytes())
	if status != http.StatusCreated {
		t.Fatalf("upload = %d %s", status, body)
	}
	var up sandbox.UploadResponse
	decodeJSON(t, body, &up)
	if !strings.HasPrefix(up.AudioURL, e.svc.URL+"/v2/files/") || up.AudioMetadata.Filename != "meeting.wav" || up.AudioMetadata.Size != int64(len(wav)) {
		t.Fatalf("upload response = %+v", up)
	}
	// The audio_url carries its token: it is read without the key, as bytes.
	resp, err := http.Get(up.AudioURL)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET audio_url = %v %v", resp, err)
	}
	resp.Body.Close()
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: up.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	job := e.waitJob(created.ID, api.KindPreRecorded)
	if job.Status != api.StatusDone || job.File.Filename != "meeting.wav" || job.File.ID != up.AudioMetadata.ID || job.File.AudioDuration != 2 {
		t.Errorf("job from upload = %s %+v", job.Status, job.File)
	}
	status, body, _ = e.raw("POST", "/v2/upload", testKey, "application/json", []byte(`{}`))
	checkEnvelope(t, status, body, 400, "/v2/upload", "")
}

// An upload past MaxUploadBytes is a 413, whether the limit falls in the part's headers or in
// its file.
func TestUploadOverTheLimit(t *testing.T) {
	for _, limit := range []int64{50, 1000} {
		e := newEnv(t, func(c *sandbox.Config) { c.MaxUploadBytes = limit })
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		part, _ := mw.CreateFormFile("audio", "meeting.wav")
		part.Write(bytes.Repeat([]byte{1}, 5000))
		mw.Close()
		status, body, _ := e.raw("POST", "/v2/upload", testKey, mw.FormDataContentType(), buf.Bytes())
		checkEnvelope(t, status, body, 413, "/v2/upload", fmt.Sprintf("upload exceeds %d bytes", limit))
	}
}
