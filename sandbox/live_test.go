package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/submitter"
)

// liveRun creates a session with req, streams audio and returns the messages the socket sent.
func liveRun(t *testing.T, e *env, req api.LiveRequest, audio []byte, opts submitter.StreamOptions) (api.CreateLiveResponse, []api.LiveMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := e.client.CreateLive(ctx, req, "eu-west")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []api.LiveMessage
	if err := e.client.StreamLive(ctx, created.URL, bytes.NewReader(audio), opts, func(m api.LiveMessage) {
		msgs = append(msgs, m)
	}); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return created, msgs
}

func types(msgs []api.LiveMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Type)
		if m.Type == api.MessageTranscript {
			if m.TranscriptIsFinal() {
				out[i] = "transcript(final)"
			} else {
				out[i] = "transcript(partial)"
			}
		}
	}
	return out
}

// collapse removes consecutive repeats so an order can be compared as a pattern.
func collapse(ts []string) []string {
	var out []string
	for _, t := range ts {
		if len(out) == 0 || out[len(out)-1] != t {
			out = append(out, t)
		}
	}
	return out
}

func TestLiveCreateAnswers201WithTokenURL(t *testing.T) {
	e := newEnv(t, nil)
	status, body, _ := e.raw("POST", "/v2/live?region=us-west", testKey, "application/json", []byte(`{"sample_rate":16000}`))
	if status != http.StatusCreated {
		t.Fatalf("create = %d %s", status, body)
	}
	var created api.CreateLiveResponse
	decodeJSON(t, body, &created)
	wantPrefix := "ws://" + strings.TrimPrefix(e.svc.URL, "http://") + "/v2/live?token="
	if !strings.HasPrefix(created.URL, wantPrefix) || len(created.URL) != len(wantPrefix)+64 || time.Since(created.CreatedAt.Time) > time.Minute {
		t.Fatalf("created = %+v", created)
	}
	job, err := e.client.GetLive(context.Background(), created.ID)
	if err != nil || job.Status != api.StatusQueued || job.Kind != api.KindLive {
		t.Fatalf("live job = %+v %v", job, err)
	}
	if _, err := e.client.GetPreRecorded(context.Background(), created.ID); !submitter.IsStatus(err, 404) {
		t.Errorf("live id on the pre-recorded endpoint = %v, want 404", err)
	}
}

func TestLiveDefaultFlagsEndToEnd(t *testing.T) {
	e := newEnv(t, nil)
	wav := speechLike(t, 4, [][2]float64{{0.5, 1.6}, {2.3, 3.3}}, 16000)
	req := api.LiveRequest{
		Endpointing:    api.Float(0.3),
		Callback:       api.Bool(true),
		CallbackConfig: &api.LiveCallbackConfig{URL: e.hooks.url("/live")},
		CustomMetadata: json.RawMessage(`{"room":"r1"}`),
	}
	created, msgs := liveRun(t, e, req, pcm16(wav), submitter.StreamOptions{})

	// WebSocket defaults: no partials, no lifecycle; finals, speech events, acks, post-processing.
	got := collapse(types(msgs))
	want := []string{"audio_chunk", "speech_start", "audio_chunk", "speech_end", "transcript(final)", "audio_chunk",
		"speech_start", "audio_chunk", "speech_end", "transcript(final)", "audio_chunk",
		"stop_recording", "post_transcript", "post_final_transcript"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("socket messages:\n got %v\nwant %v", got, want)
	}
	// Acknowledgments cover the stream without gaps: 40 chunks of 3200 bytes, 0.1 s each.
	var acks []api.AudioChunkAckData
	for _, m := range msgs {
		if m.SessionID != created.ID {
			t.Fatalf("session_id = %q", m.SessionID)
		}
		if m.Type == api.MessageAudioChunk {
			var d api.AudioChunkAckData
			if err := m.DecodeData(&d); err != nil || m.Acknowledged == nil || !*m.Acknowledged || m.HasError() {
				t.Fatalf("ack = %+v %v", m, err)
			}
			acks = append(acks, d)
		}
	}
	if len(acks) != 40 {
		t.Fatalf("acks = %d, want 40", len(acks))
	}
	for i, a := range acks {
		wantBytes := [2]int64{int64(i) * 3200, int64(i+1) * 3200}
		if a.ByteRange != wantBytes || a.TimeRange[0] != float64(i)/10 || a.TimeRange[1] != float64(i+1)/10 {
			t.Fatalf("ack %d = %+v, want bytes %v", i, a, wantBytes)
		}
	}
	var stop api.StopRecordingAckData
	var finals []api.TranscriptData
	for _, m := range msgs {
		switch {
		case m.Type == api.MessageStopRecording:
			_ = m.DecodeData(&stop)
		case m.Type == api.MessageTranscript:
			var d api.TranscriptData
			_ = m.DecodeData(&d)
			finals = append(finals, d)
		}
	}
	if stop.RecordingDuration != 4 || stop.RecordingLeftToProcess != 0 {
		t.Errorf("stop_recording ack = %+v", stop)
	}
	if len(finals) != 2 || finals[0].ID == finals[1].ID || finals[0].Utterance.Start < 0.4 || finals[1].Utterance.End > 3.5 {
		t.Errorf("finals = %+v", finals)
	}

	// The job record holds every message, lifecycle ones included, as JSON strings.
	job := e.waitJob(created.ID, api.KindLive)
	if job.Status != api.StatusDone || len(job.Result) == 0 || job.File == nil || job.File.AudioDuration != 4 {
		t.Fatalf("live job = %s %+v", job.Status, job.File)
	}
	var recorded []string
	for _, s := range apitest.MustResult(&job).Messages {
		var m api.LiveMessage
		decodeJSON(t, []byte(s), &m)
		recorded = append(recorded, string(m.Type))
	}
	if recorded[0] != "start_session" || recorded[1] != "start_recording" || recorded[len(recorded)-2] != "post_final_transcript" || recorded[len(recorded)-1] != "end_session" {
		t.Errorf("result.messages types = %v", recorded)
	}
	if !slices.Contains(recorded, "end_recording") || apitest.MustResult(&job).Transcription == nil || len(apitest.MustResult(&job).Transcription.Utterances) != 2 {
		t.Errorf("result = %v / %+v", recorded, apitest.MustResult(&job).Transcription)
	}
	params, _ := job.LiveParams()
	if params == nil || params.CustomMetadata != nil || string(job.CustomMetadata) != `{"room":"r1"}` {
		t.Errorf("request_params %s custom_metadata %s", job.RequestParams, job.CustomMetadata)
	}

	// Callback defaults: finals, pre/realtime/post processing and lifecycle; not speech events,
	// acks or errors.
	hooks := e.hooks.waitFor(t, "end_session callback", func(h []hook) bool {
		return len(h) > 0 && bytes.Contains(h[len(h)-1].Body, []byte(`"live.end_session"`))
	})
	var events []string
	for _, h := range hooks {
		var cb api.LiveCallback
		decodeJSON(t, h.Body, &cb)
		if h.Method != "POST" || cb.ID != created.ID || cb.Event != "live."+string(cb.Payload.Type) || cb.Payload.SessionID != created.ID {
			t.Fatalf("callback = %s %+v", h.Method, cb)
		}
		c, err := api.ClassifyCallback(h.Body)
		if err != nil || c.Kind != api.CallbackLiveMessage {
			t.Fatalf("classify = %+v %v", c, err)
		}
		events = append(events, cb.Event)
	}
	wantEvents := []string{"live.start_session", "live.start_recording", "live.transcript", "live.transcript",
		"live.end_recording", "live.post_transcript", "live.post_final_transcript", "live.end_session"}
	if !reflect.DeepEqual(events, wantEvents) {
		t.Errorf("callback events:\n got %v\nwant %v", events, wantEvents)
	}
	// The payload is the exact WebSocket message.
	for _, h := range hooks {
		var cb struct {
			Payload json.RawMessage `json:"payload"`
		}
		decodeJSON(t, h.Body, &cb)
		if !containsMessage(apitest.MustResult(&job).Messages, cb.Payload) {
			t.Errorf("callback payload is not one of the session's messages: %s", truncate(cb.Payload))
		}
	}
}

func containsMessage(all []string, payload []byte) bool {
	var want any
	if json.Unmarshal(payload, &want) != nil {
		return false
	}
	for _, s := range all {
		var got any
		if json.Unmarshal([]byte(s), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

func TestLiveAllFlagsOnWithWAVHeaderAndJSONChunks(t *testing.T) {
	e := newEnv(t, nil)
	on := api.Bool(true)
	all := api.MessagesConfig{
		ReceivePartialTranscripts: on, ReceiveFinalTranscripts: on, ReceiveSpeechEvents: on,
		ReceivePreProcessingEvents: on, ReceiveRealtimeProcessingEvents: on, ReceivePostProcessingEvents: on,
		ReceiveAcknowledgments: on, ReceiveErrors: on, ReceiveLifecycleEvents: on,
	}
	off := api.Bool(false)
	none := api.MessagesConfig{
		ReceivePartialTranscripts: off, ReceiveFinalTranscripts: off, ReceiveSpeechEvents: off,
		ReceivePreProcessingEvents: off, ReceiveRealtimeProcessingEvents: off, ReceivePostProcessingEvents: off,
		ReceiveAcknowledgments: off, ReceiveErrors: off, ReceiveLifecycleEvents: on,
	}
	req := api.LiveRequest{
		SampleRate:     api.Int(8000),
		Endpointing:    api.Float(0.3),
		MessagesConfig: &all,
		RealtimeProcessing: &api.RealtimeProcessing{
			Translation:       on,
			TranslationConfig: &api.TranslationConfig{TargetLanguages: []string{"fr", "de"}},
		},
		PostProcessing: &api.PostProcessing{Summarization: on, Chapterization: on},
		Callback:       on,
		CallbackConfig: &api.LiveCallbackConfig{URL: e.hooks.url("/l2"), MessagesConfig: none},
	}
	// A WAV file with its header, at 8 kHz, sent as base64 JSON chunks.
	wav := speechLike(t, 2.5, [][2]float64{{0.4, 1.8}}, 8000)
	created, msgs := liveRun(t, e, req, wav, submitter.StreamOptions{SampleRate: 8000, JSONChunks: true})
	ts := types(msgs)
	// start_session is not sent on the socket (the SDKs make their own): start_recording opens.
	if ts[0] != "start_recording" || ts[len(ts)-1] != "end_session" || slices.Contains(ts, "start_session") {
		t.Fatalf("lifecycle order: %v", ts)
	}
	pos := func(s string) int {
		for i, v := range ts {
			if v == s {
				return i
			}
		}
		return -1
	}
	firstPartial, firstFinal := pos("transcript(partial)"), pos("transcript(final)")
	if firstPartial < 0 || firstFinal < 0 || firstPartial > firstFinal {
		t.Fatalf("partials then final expected: %v", ts)
	}
	// Partials and the final of one utterance share the id.
	var partialID, finalID string
	for _, m := range msgs {
		if m.Type == api.MessageTranscript {
			var d api.TranscriptData
			_ = m.DecodeData(&d)
			if d.IsFinal {
				finalID = d.ID
			} else if partialID == "" {
				partialID = d.ID
			}
		}
	}
	if partialID == "" || partialID != finalID {
		t.Errorf("partial id %q final id %q", partialID, finalID)
	}
	// One translation message a target language, failed (no model) and so also in errors.
	var translations []string
	for _, m := range msgs {
		if m.Type == api.MessageTranslation {
			var d api.TranslationData
			_ = m.DecodeData(&d)
			translations = append(translations, d.TargetLanguage)
			if !m.HasError() || !strings.Contains(m.ErrorMessage(), "model") {
				t.Errorf("translation error = %s", m.Error)
			}
			if c, _ := api.Category(&m); c != api.CategoryErrors {
				t.Errorf("failed translation category = %s", c)
			}
		}
	}
	if !reflect.DeepEqual(translations, []string{"fr", "de"}) {
		t.Errorf("translations = %v", translations)
	}
	order := []string{"stop_recording", "end_recording", "post_transcript", "post_chapterization", "post_summarization", "post_final_transcript", "end_session"}
	last := -1
	for _, s := range order {
		p := pos(s)
		if p <= last {
			t.Fatalf("%s at %d, after %d: %v", s, p, last, ts)
		}
		last = p
	}
	// The 8 kHz WAV header was skipped: the first ack covers the header bytes, time from zero,
	// and the recording is 2.5 s.
	for _, m := range msgs {
		if m.Type == api.MessageStopRecording {
			var d api.StopRecordingAckData
			_ = m.DecodeData(&d)
			if d.RecordingDuration != 2.5 {
				t.Errorf("recording_duration = %v", d.RecordingDuration)
			}
		}
	}
	// Callbacks: only lifecycle events were switched on.
	hooks := e.hooks.waitFor(t, "lifecycle callbacks", func(h []hook) bool { return len(h) >= 4 })
	time.Sleep(100 * time.Millisecond)
	var events []string
	for _, h := range e.hooks.all() {
		var cb api.LiveCallback
		decodeJSON(t, h.Body, &cb)
		events = append(events, cb.Event)
	}
	if !reflect.DeepEqual(events, []string{"live.start_session", "live.start_recording", "live.end_recording", "live.end_session"}) {
		t.Errorf("callback events = %v (%d hooks)", events, len(hooks))
	}
	job := e.waitJob(created.ID, api.KindLive)
	if apitest.MustResult(&job).Summarization == nil || apitest.MustResult(&job).Chapterization == nil {
		t.Fatalf("post-processing missing from the result")
	}
	checkChapters(t, msgs, job.Result)
}

// checkChapters checks that post_chapterization carries, as its results array, exactly the
// chapters of the result's chapterization, whose results is the object {"chapters": [...]}, and
// that chapter sentences are objects.
func checkChapters(t *testing.T, msgs []api.LiveMessage, result json.RawMessage) {
	t.Helper()
	var raw struct {
		Chapterization struct {
			Results map[string]json.RawMessage `json:"results"`
		} `json:"chapterization"`
	}
	decodeJSON(t, result, &raw)
	chapters, ok := raw.Chapterization.Results["chapters"]
	if !ok || len(raw.Chapterization.Results) != 1 {
		t.Fatalf("chapterization results %v: want the object {chapters}", raw.Chapterization.Results)
	}
	for _, m := range msgs {
		if m.Type != api.MessagePostChapterization {
			continue
		}
		if want := `{"results":` + string(chapters) + `}`; string(m.Data) != want {
			t.Errorf("post_chapterization data\n got %s\nwant %s", m.Data, want)
		}
		if string(m.Error) != "null" {
			t.Errorf("post_chapterization error %s", m.Error)
		}
		var d struct {
			Results []struct {
				Sentences []map[string]json.RawMessage `json:"sentences"`
			} `json:"results"`
		}
		decodeJSON(t, m.Data, &d)
		if len(d.Results) == 0 || len(d.Results[0].Sentences) == 0 {
			t.Fatalf("no chapter sentences: %s", m.Data)
		}
		for _, s := range d.Results[0].Sentences {
			if len(s) != 4 || s["sentence"] == nil || s["start"] == nil || s["end"] == nil || s["words"] == nil {
				t.Errorf("chapter sentence %v: want {sentence, start, end, words}", s)
			}
		}
		return
	}
	t.Error("no post_chapterization message")
}

func TestLiveTokenIsRefusedWhenWrongOrReused(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	wsBase := "ws://" + strings.TrimPrefix(e.svc.URL, "http://")
	_, resp, err := websocket.Dial(ctx, wsBase+"/v2/live?token=deadbeef", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v %v", resp, err)
	}
	created, _ := liveRun(t, e, api.LiveRequest{}, pcm16(speechLike(t, 1, nil, 16000)), submitter.StreamOptions{})
	_ = created
	_, resp, err = websocket.Dial(ctx, created.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("reused token: %v %v", resp, err)
	}
}

func TestLiveBadClientMessagesAreErrors(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, c := openLive(t, ctx, e)
	send := func(s string) {
		if err := c.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	send(`not json`)
	send(`{"type":"audio_chunk","data":{"chunk":"@@@"}}`)
	send(`{"type":"dance"}`)
	send(`{"type":"stop_recording"}`)
	var got []api.LiveMessage
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("close = %v", err)
			}
			break
		}
		var m api.LiveMessage
		decodeJSON(t, b, &m)
		got = append(got, m)
	}
	if len(got) < 3 {
		t.Fatalf("messages = %v", types(got))
	}
	if got[0].Type != api.MessageError || !strings.Contains(got[0].ErrorMessage(), "not JSON") {
		t.Errorf("first = %s %s", got[0].Type, got[0].Error)
	}
	if got[1].Type != api.MessageAudioChunk || got[1].Acknowledged == nil || *got[1].Acknowledged || !strings.Contains(got[1].ErrorMessage(), "base64") {
		t.Errorf("second = %+v", got[1])
	}
	if cat, _ := api.Category(&got[1]); cat != api.CategoryErrors {
		t.Errorf("nack category = %s", cat)
	}
	if got[2].Type != api.MessageError || !strings.Contains(got[2].ErrorMessage(), `"dance"`) {
		t.Errorf("third = %s %s", got[2].Type, got[2].Error)
	}
}

// openLive creates a live session with the default settings and connects to it; the socket
// is dropped at the end of the test.
func openLive(t *testing.T, ctx context.Context, e *env) (api.CreateLiveResponse, *websocket.Conn) {
	t.Helper()
	created, err := e.client.CreateLive(ctx, api.LiveRequest{}, "")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(ctx, created.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return created, c
}

// readUntilClose reads messages until the server closes the socket.
func readUntilClose(t *testing.T, ctx context.Context, c *websocket.Conn) ([]api.LiveMessage, error) {
	t.Helper()
	var got []api.LiveMessage
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return got, err
		}
		var m api.LiveMessage
		decodeJSON(t, b, &m)
		got = append(got, m)
	}
}

func TestLiveReconnectResumesTheSession(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pcm := pcm16(speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000)) // 32000 bytes
	created, first := openLive(t, ctx, e)
	// While a socket is attached, a second one is refused.
	if _, resp, err := websocket.Dial(ctx, created.URL, nil); err == nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("second socket: %v", err)
	}
	if err := first.Write(ctx, websocket.MessageBinary, pcm[:16000]); err != nil {
		t.Fatal(err)
	}
	_, b, err := first.Read(ctx) // the first ack
	if err != nil {
		t.Fatal(err)
	}
	var ack api.LiveMessage
	decodeJSON(t, b, &ack)
	first.CloseNow() // the network drops: no close frame

	var second *websocket.Conn
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		second, _, err = websocket.Dial(ctx, created.URL, nil)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	defer second.CloseNow()
	if err := second.Write(ctx, websocket.MessageBinary, pcm[16000:]); err != nil {
		t.Fatal(err)
	}
	if err := second.Write(ctx, websocket.MessageText, []byte(`{"type":"stop_recording"}`)); err != nil {
		t.Fatal(err)
	}
	msgs, err := readUntilClose(t, ctx, second)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("close = %v", err)
	}
	// The second socket's ack continues the byte and time ranges of the first; no second
	// start_session.
	var d api.AudioChunkAckData
	if msgs[0].Type != api.MessageAudioChunk || msgs[0].DecodeData(&d) != nil || d.ByteRange != [2]int64{16000, 32000} || d.TimeRange != [2]float64{0.5, 1} {
		t.Fatalf("first message after reconnect = %s %s", msgs[0].Type, msgs[0].Data)
	}
	job := e.waitJob(created.ID, api.KindLive)
	starts := 0
	for _, s := range apitest.MustResult(&job).Messages {
		if strings.Contains(s, `"type":"start_session"`) {
			starts++
		}
	}
	if job.Status != api.StatusDone || apitest.MustResult(&job).Metadata.AudioDuration != 1 || starts != 1 {
		t.Errorf("job = %s, duration %v, start_session ×%d", job.Status, apitest.MustResult(&job).Metadata.AudioDuration, starts)
	}
}

func TestLiveSessionEndsAtItsMaximumDuration(t *testing.T) {
	e := newEnv(t, func(c *sandboxConfig) { c.MaxLiveDuration = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	created, c := openLive(t, ctx, e)
	pcm := pcm16(speechLike(t, 2, nil, 16000))
	for off := 0; off < len(pcm); off += 3200 {
		if err := c.Write(ctx, websocket.MessageBinary, pcm[off:off+3200]); err != nil {
			break // the server may close first
		}
	}
	msgs, err := readUntilClose(t, ctx, c)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("close = %v", err)
	}
	var limitErr bool
	for _, m := range msgs {
		if m.Type == api.MessageError && strings.Contains(m.ErrorMessage(), "maximum duration of 1s") {
			limitErr = true
		}
	}
	job := e.waitJob(created.ID, api.KindLive)
	if !limitErr || apitest.MustResult(&job).Metadata.AudioDuration != 1 {
		t.Errorf("limit error %v, duration %v", limitErr, apitest.MustResult(&job).Metadata.AudioDuration)
	}
}
