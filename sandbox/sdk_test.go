package sandbox_test

// What the official JavaScript SDK (@gladiaio/sdk 2.1.0) needs of the service, checked here in
// Go; e2e/sdk runs the SDK itself (scripts/sdk-test.sh).

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/submitter"
)

func TestLiveAcceptsTheServiceModelNames(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ body, want string }{
		{`{"model":"solaria-1"}`, "solaria-1"},
		{`{}`, "solaria-1"}, // the default, named in the record
		{`{"model":"<default_model>"}`, "<default_model>"},
	} {
		status, body, _ := e.raw("POST", "/v2/live", testKey, "application/json", []byte(tc.body))
		if status != http.StatusCreated {
			t.Fatalf("%s: create = %d %s", tc.body, status, body)
		}
		var created api.CreateLiveResponse
		decodeJSON(t, body, &created)
		job, err := e.client.GetLive(context.Background(), created.ID)
		if err != nil {
			t.Fatal(err)
		}
		var params struct{ Model string }
		decodeJSON(t, job.RequestParams, &params)
		if params.Model != tc.want {
			t.Errorf("%s: request_params.model = %q, want %q", tc.body, params.Model, tc.want)
		}
	}
	status, body, _ := e.raw("POST", "/v2/live", testKey, "application/json", []byte(`{"model":"whisper-large"}`))
	env := checkEnvelope(t, status, body, 400, "/v2/live", "")
	if want := []string{`model must be one of solaria-1, <default_model> (got "whisper-large")`}; !reflect.DeepEqual(env.ValidationErrors, want) {
		t.Errorf("validation_errors = %q, want %q", env.ValidationErrors, want)
	}
}

// withTrailer is a WAV file with a LIST chunk after its samples, which the decoder never reads:
// the file served back must have it too.
func withTrailer(wav []byte) []byte {
	out := append([]byte(nil), wav...)
	out = append(out, "LIST\x08\x00\x00\x00INFOabcd"...)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

func getFile(t *testing.T, e *env, path string) (int, []byte, http.Header) {
	t.Helper()
	return e.raw("GET", path, testKey, "", nil)
}

func TestPreRecordedFileIsTheOriginalBytes(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *sandboxConfig) { c.TempDir = dir })
	wav := withTrailer(speechLike(t, 1.5, [][2]float64{{0.3, 1.2}}, 16000))

	// From a fetched audio_url: the bytes the URL served, kept on disk, not in the record.
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: e.files.put("/calls/monday.wav", wav)})
	if err != nil {
		t.Fatal(err)
	}
	job := e.waitJob(created.ID, api.KindPreRecorded)
	if job.Status != api.StatusDone {
		t.Fatalf("job = %s", job.Status)
	}
	status, body, h := getFile(t, e, "/v2/pre-recorded/"+created.ID+"/file")
	if status != 200 || !bytes.Equal(body, wav) || h.Get("Content-Type") != "audio/wav" ||
		h.Get("Content-Disposition") != `attachment; filename="monday.wav"` {
		t.Fatalf("file = %d %q %q, %d bytes (want %d)", status, h.Get("Content-Type"), h.Get("Content-Disposition"), len(body), len(wav))
	}
	if n := countFiles(t, dir); n != 1 {
		t.Fatalf("%d files kept, want the one copy", n)
	}

	// From an upload: the uploaded bytes, from the moment the job exists.
	up := upload(t, e, "hello.wav", wav)
	fromUpload, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: up.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	status, body, h = getFile(t, e, "/v2/pre-recorded/"+fromUpload.ID+"/file")
	if status != 200 || !bytes.Equal(body, wav) || h.Get("Content-Type") != "audio/wav" {
		t.Fatalf("file of upload job = %d %q, %d bytes", status, h.Get("Content-Type"), len(body))
	}
	e.waitJob(fromUpload.ID, api.KindPreRecorded)

	// Unknown, of the other kind, deleted: 404 with the envelope; the copy goes with its job.
	status, body, _ = getFile(t, e, "/v2/pre-recorded/no-such-job/file")
	checkEnvelope(t, status, body, 404, "/v2/pre-recorded/no-such-job/file", "pre-recorded job no-such-job not found")
	status, body, _ = getFile(t, e, "/v2/live/"+created.ID+"/file")
	checkEnvelope(t, status, body, 404, "/v2/live/"+created.ID+"/file", "live session "+created.ID+" not found")
	if status, body, _ := e.raw("DELETE", "/v2/pre-recorded/"+created.ID, testKey, "", nil); status != 202 {
		t.Fatalf("delete = %d %s", status, body)
	}
	status, body, _ = getFile(t, e, "/v2/pre-recorded/"+created.ID+"/file")
	checkEnvelope(t, status, body, 404, "/v2/pre-recorded/"+created.ID+"/file", "pre-recorded job "+created.ID+" not found")
	if n := countFiles(t, dir); n != 1 {
		t.Errorf("%d files left after the delete, want the upload, which its job holds", n)
	}
	status, body, _ = e.raw("GET", "/v2/pre-recorded/"+fromUpload.ID+"/file", "", "", nil)
	checkEnvelope(t, status, body, 401, "/v2/pre-recorded/"+fromUpload.ID+"/file", "")
}

func TestPreRecordedFileOfAFailedFetchIs404(t *testing.T) {
	e := newEnv(t, nil)
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: e.files.srv.URL + "/missing.wav"})
	if err != nil {
		t.Fatal(err)
	}
	if job := e.waitJob(created.ID, api.KindPreRecorded); job.Status != api.StatusError {
		t.Fatalf("job = %s", job.Status)
	}
	status, body, _ := getFile(t, e, "/v2/pre-recorded/"+created.ID+"/file")
	env := checkEnvelope(t, status, body, 404, "/v2/pre-recorded/"+created.ID+"/file", "")
	if !strings.Contains(env.Message, "has no audio file") {
		t.Errorf("message = %q", env.Message)
	}
}

// countFiles counts the files under dir (the sandbox's directory is one level down).
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range entries {
		sub, err := os.ReadDir(dir + "/" + d.Name())
		if err != nil {
			t.Fatal(err)
		}
		n += len(sub)
	}
	return n
}

func TestLiveFileIsAWAVOfWhatWasStreamed(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *sandboxConfig) { c.TempDir = dir })
	wav := speechLike(t, 2, [][2]float64{{0.4, 1.5}}, 16000)
	created, _ := liveRun(t, e, api.LiveRequest{Endpointing: api.Float(0.3)}, pcm16(wav), submitter.StreamOptions{})
	if job := e.waitJob(created.ID, api.KindLive); job.File == nil || job.File.Filename != "live-"+created.ID+".wav" {
		t.Fatalf("live job file = %+v", job.File)
	}
	status, body, h := getFile(t, e, "/v2/live/"+created.ID+"/file")
	if status != 200 || h.Get("Content-Type") != "audio/wav" {
		t.Fatalf("live file = %d %q %s", status, h.Get("Content-Type"), truncate(body))
	}
	// 16-bit samples come back unchanged, after a plain header.
	if !bytes.Equal(body, wav) {
		t.Fatalf("live file: %d bytes, want the %d streamed with a 44-byte header", len(body), len(wav))
	}

	// A WAV header sent at the start of an 8 kHz stereo stream is replaced by the sandbox's own,
	// which says the same.
	stereo := make([][]float32, 2)
	for c := range stereo {
		stereo[c] = make([]float32, 4000)
		for i := range stereo[c] {
			stereo[c][i] = float32(i%50-25) / 100 * float32(c+1)
		}
	}
	var sent bytes.Buffer
	if err := audio.Encode16(&sent, stereo, 8000); err != nil {
		t.Fatal(err)
	}
	created2, _ := liveRun(t, e, api.LiveRequest{SampleRate: api.Int(8000), Channels: api.Int(2)}, sent.Bytes(), submitter.StreamOptions{SampleRate: 8000, Channels: 2})
	status, body, _ = getFile(t, e, "/v2/live/"+created2.ID+"/file")
	got, err := audio.DecodeBytes(body, audio.Limits{})
	if status != 200 || err != nil || got.SampleRate != 8000 || got.Channels != 2 || got.Frames() != 4000 || !bytes.Equal(body, sent.Bytes()) {
		t.Fatalf("stereo live file = %d %v, %d bytes (want %d)", status, err, len(body), sent.Len())
	}

	// A session that never connected has an empty recording; unknown and deleted are 404.
	never, err := e.client.CreateLive(context.Background(), api.LiveRequest{SampleRate: api.Int(48000)}, "")
	if err != nil {
		t.Fatal(err)
	}
	status, body, _ = getFile(t, e, "/v2/live/"+never.ID+"/file")
	if h, err := audio.ParseHeader(body); status != 200 || err != nil || len(body) != 44 || h.Format.SampleRate != 48000 {
		t.Errorf("file of a session never connected = %d %v %d bytes", status, err, len(body))
	}
	status, body, _ = getFile(t, e, "/v2/live/nope/file")
	checkEnvelope(t, status, body, 404, "/v2/live/nope/file", "live session nope not found")
	status, body, _ = getFile(t, e, "/v2/pre-recorded/"+created.ID+"/file")
	checkEnvelope(t, status, body, 404, "/v2/pre-recorded/"+created.ID+"/file", "pre-recorded job "+created.ID+" not found")
	for _, id := range []string{created.ID, created2.ID, never.ID} {
		if status, body, _ := e.raw("DELETE", "/v2/live/"+id, testKey, "", nil); status != 202 {
			t.Fatalf("delete = %d %s", status, body)
		}
	}
	status, body, _ = getFile(t, e, "/v2/live/"+created.ID+"/file")
	checkEnvelope(t, status, body, 404, "/v2/live/"+created.ID+"/file", "live session "+created.ID+" not found")
	if n := countFiles(t, dir); n != 0 {
		t.Errorf("%d recordings left after the deletes", n)
	}
}

func upload(t *testing.T, e *env, name string, data []byte) rawUpload {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, _ := mw.CreateFormFile("audio", name)
	_, _ = part.Write(data)
	_ = mw.Close()
	status, body, _ := e.raw("POST", "/v2/upload", testKey, mw.FormDataContentType(), buf.Bytes())
	if status != http.StatusCreated {
		t.Fatalf("upload = %d %s", status, body)
	}
	var up rawUpload
	decodeJSON(t, body, &up)
	return up
}

// rawUpload decodes the upload answer as a client would, with every member it has.
type rawUpload struct {
	AudioURL      string         `json:"audio_url"`
	AudioMetadata map[string]any `json:"audio_metadata"`
}

func TestUploadMetadataAndTheJobKeepsItsName(t *testing.T) {
	e := newEnv(t, nil)
	stereo := [][]float32{make([]float32, 12000), make([]float32, 12000)}
	for i := range stereo[0] {
		stereo[0][i] = float32(i%40-20) / 40
	}
	var wav bytes.Buffer
	if err := audio.Encode16(&wav, stereo, 8000); err != nil {
		t.Fatal(err)
	}
	up := upload(t, e, "hello.wav", wav.Bytes())
	id, _ := up.AudioMetadata["id"].(string)
	want := map[string]any{
		"id": id, "filename": "hello.wav", "extension": "wav", "size": float64(wav.Len()),
		"audio_duration": 1.5, "number_of_channels": float64(2),
	}
	if id == "" || !reflect.DeepEqual(up.AudioMetadata, want) {
		t.Fatalf("audio_metadata = %v, want %v", up.AudioMetadata, want)
	}
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: up.AudioURL})
	if err != nil {
		t.Fatal(err)
	}
	job := e.waitJob(created.ID, api.KindPreRecorded)
	if job.Status != api.StatusDone || job.File == nil || job.File.Filename != "hello.wav" || job.File.ID != id ||
		job.File.NumberOfChannels != 2 || job.File.AudioDuration != 1.5 || job.File.Source != up.AudioURL {
		t.Fatalf("job file = %s %+v", job.Status, job.File)
	}

	// Not WAV: accepted, with its name's extension and no duration (its job fails instead).
	other := upload(t, e, "Notes.TXT", []byte("not audio at all"))
	if m := other.AudioMetadata; m["extension"] != "txt" || m["audio_duration"] != float64(0) || m["number_of_channels"] != float64(0) || m["size"] != float64(16) {
		t.Errorf("audio_metadata of a text file = %v", m)
	}
}

func TestListFiltersOnBracketMetadata(t *testing.T) {
	e := newEnv(t, nil)
	wav := e.files.put("/a.wav", speechLike(t, 0.5, nil, 16000))
	create := func(meta string) string {
		t.Helper()
		c, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{AudioURL: wav, CustomMetadata: json.RawMessage(meta)})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	j1 := create(`{"team":"a","n":42,"flag":true,"tags":{"env":"prod","zone":"x"},"big":12345678901234567890}`)
	j2 := create(`{"team":"b","n":7}`)
	j3 := create(`{"team":"a","n":"42","empty":""}`)
	create(`{"other":1}`)
	list := func(query string) ([]string, api.Page) {
		t.Helper()
		status, body, _ := e.raw("GET", "/v2/pre-recorded?"+query, testKey, "", nil)
		if status != 200 {
			t.Fatalf("%s: %d %s", query, status, body)
		}
		var page api.Page
		decodeJSON(t, body, &page)
		var ids []string
		for _, j := range page.Items {
			ids = append(ids, j.ID)
		}
		return ids, page
	}
	sorted := func(ids ...string) []string { sort.Strings(ids); return ids }
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"custom_metadata[team]=a", []string{j1, j3}},
		{"custom_metadata%5Bteam%5D=b", []string{j2}},
		{"custom_metadata[n]=42", []string{j1, j3}},  // the number and the string
		{"custom_metadata[n]=42.0", []string{j1}},    // the number only
		{"custom_metadata[flag]=true", []string{j1}}, // the SDKs send String(true)
		{"custom_metadata[tags][env]=prod", []string{j1}},
		{"custom_metadata[big]=12345678901234567890", []string{j1}},
		{"custom_metadata[big]=12345678901234567891", nil},
		{"custom_metadata[empty]=", []string{j3}},
		{"custom_metadata[tags]=prod", nil},
		{"custom_metadata[team]=a&custom_metadata[n]=7", nil},
		{"custom_metadata[team]=a&custom_metadata=" + url.QueryEscape(`{"n":42}`), []string{j1}},
		{"custom_metadata[team]=a&status=queued&status=processing&status=done&status=error", []string{j1, j3}},
	} {
		got, _ := list(tc.query)
		if !reflect.DeepEqual(sorted(got...), sorted(tc.want...)) {
			t.Errorf("%s: got %v, want %v", tc.query, got, tc.want)
		}
	}

	// Paging keeps the bracket filter in its links, which a client follows as they are.
	first, page := list("custom_metadata[team]=a&limit=1")
	if len(first) != 1 || page.Next == nil || !strings.Contains(*page.Next, "custom_metadata%5Bteam%5D=a") ||
		!strings.Contains(page.First, "custom_metadata%5Bteam%5D=a") {
		t.Fatalf("first page = %v, next %v, first %s", first, page.Next, page.First)
	}
	u, _ := url.Parse(*page.Next)
	second, page2 := list(u.RawQuery)
	if len(second) != 1 || second[0] == first[0] || page2.Next != nil || !reflect.DeepEqual(sorted(first[0], second[0]), sorted(j1, j3)) {
		t.Fatalf("second page = %v next %v", second, page2.Next)
	}

	// The live list takes it too.
	live, err := e.client.CreateLive(context.Background(), api.LiveRequest{CustomMetadata: json.RawMessage(`{"room":"r1"}`)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CreateLive(context.Background(), api.LiveRequest{CustomMetadata: json.RawMessage(`{"room":"r2"}`)}, ""); err != nil {
		t.Fatal(err)
	}
	status, body, _ := e.raw("GET", "/v2/live?custom_metadata[room]=r1", testKey, "", nil)
	var livePage api.Page
	decodeJSON(t, body, &livePage)
	if status != 200 || len(livePage.Items) != 1 || livePage.Items[0].ID != live.ID {
		t.Errorf("live list = %d %s", status, truncate(body))
	}

	// Malformed names and contradictions are 400 with every violation.
	for query, want := range map[string][]string{
		"custom_metadata[team=a":                       {"custom_metadata[team must be custom_metadata[key]=value, with a non-empty key in brackets (custom_metadata[a][b] for a nested member)"},
		"custom_metadata[]=a&limit=0":                  {"limit must be between 1 and 100 (got 0)", "custom_metadata[] must be custom_metadata[key]=value, with a non-empty key in brackets (custom_metadata[a][b] for a nested member)"},
		"custom_metadata[a]=1&custom_metadata[a][b]=2": {"custom_metadata[a][b] names a member that another custom_metadata parameter makes an object, or the reverse"},
		"custom_metadata[a]=1&custom_metadata[a]=2":    {"custom_metadata[a] must be given at most once (got 2 different values)"},
	} {
		status, body, _ := e.raw("GET", "/v2/pre-recorded?"+query, testKey, "", nil)
		env := checkEnvelope(t, status, body, 400, "/v2/pre-recorded", "invalid request parameters")
		if !reflect.DeepEqual(env.ValidationErrors, want) {
			t.Errorf("%s: validation_errors = %q, want %q", query, env.ValidationErrors, want)
		}
	}
}

func TestLiveStartSessionGoesToCallbacksNotTheSocket(t *testing.T) {
	e := newEnv(t, nil)
	on := api.Bool(true)
	req := api.LiveRequest{
		Endpointing:    api.Float(0.3),
		MessagesConfig: &api.MessagesConfig{ReceiveLifecycleEvents: on},
		Callback:       on,
		CallbackConfig: &api.LiveCallbackConfig{URL: e.hooks.url("/lifecycle")}, // lifecycle on by default
	}
	created, msgs := liveRun(t, e, req, pcm16(speechLike(t, 1, [][2]float64{{0.2, 0.7}}, 16000)), submitter.StreamOptions{})
	var lifecycle []string
	for _, m := range msgs {
		if c, _ := api.Category(&m); c == api.CategoryLifecycleEvents {
			lifecycle = append(lifecycle, string(m.Type))
		}
	}
	if want := []string{"start_recording", "end_recording", "end_session"}; !reflect.DeepEqual(lifecycle, want) {
		t.Errorf("lifecycle on the socket = %v, want %v", lifecycle, want)
	}
	hooks := e.hooks.waitFor(t, "end_session callback", func(h []hook) bool {
		return len(h) > 0 && strings.Contains(string(h[len(h)-1].Body), `"live.end_session"`)
	})
	var events []string
	for _, h := range hooks {
		var cb api.LiveCallback
		decodeJSON(t, h.Body, &cb)
		if c, _ := api.Category(&cb.Payload); c == api.CategoryLifecycleEvents {
			events = append(events, cb.Event)
		}
	}
	if want := []string{"live.start_session", "live.start_recording", "live.end_recording", "live.end_session"}; !reflect.DeepEqual(events, want) {
		t.Errorf("lifecycle callbacks = %v, want %v", events, want)
	}
	job := e.waitJob(created.ID, api.KindLive)
	var first api.LiveMessage
	decodeJSON(t, []byte(apitest.MustResult(&job).Messages[0]), &first)
	if first.Type != api.MessageStartSession || first.SessionID != created.ID {
		t.Errorf("result.messages[0] = %s", apitest.MustResult(&job).Messages[0])
	}
}

func TestListDateBoundsAtTheRecordsPrecision(t *testing.T) {
	e := newEnv(t, nil)
	created, err := e.client.CreateLive(context.Background(), api.LiveRequest{CustomMetadata: json.RawMessage(`{"k":"bounds"}`)}, "")
	if err != nil {
		t.Fatal(err)
	}
	job, err := e.client.GetLive(context.Background(), created.ID)
	if err != nil {
		t.Fatal(err)
	}
	shown := job.CreatedAt.String() // what the record says, to the millisecond
	for _, bound := range []string{"after_date", "before_date"} {
		status, body, _ := e.raw("GET", "/v2/live?custom_metadata[k]=bounds&"+bound+"="+url.QueryEscape(shown), testKey, "", nil)
		var page api.Page
		decodeJSON(t, body, &page)
		if status != 200 || len(page.Items) != 0 {
			t.Errorf("%s=%s (the job's own created_at): %d, %d items; bounds are exclusive", bound, shown, status, len(page.Items))
		}
	}
}
