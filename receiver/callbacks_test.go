package receiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/store"
)

const (
	jobID     = "0f4e7a55-4b8d-4c7e-9f0d-2f3b5b7b9a11"
	sessionID = "3b1e5c2a-8f7d-4d1a-9c1b-5e6f7a8b9c0d"
)

// successBody is a transcription.success callback carrying the full result of a real job
// record from api's test data.
func successBody(t *testing.T, id string) []byte {
	t.Helper()
	var job struct {
		Result         json.RawMessage `json:"result"`
		CustomMetadata json.RawMessage `json:"custom_metadata"`
	}
	testjson.FullJob(t, &job)
	if len(job.Result) < 1000 {
		t.Fatalf("test data result is too small to be real: %s", job.Result)
	}
	return testjson.Marshal(t, map[string]any{
		"id": id, "event": api.EventTranscriptionSuccess, "payload": job.Result, "custom_metadata": job.CustomMetadata,
	})
}

func errorBody(t *testing.T, id string) []byte {
	return testjson.Marshal(t, map[string]any{
		"id": id, "event": api.EventTranscriptionError,
		"error": map[string]any{"code": 500, "message": "audio unreachable"}, "custom_metadata": map[string]any{"user": "a"},
	})
}

// liveBody wraps a live message the way live callbacks do.
func liveBody(t *testing.T, session string, msg map[string]any) []byte {
	t.Helper()
	msg["session_id"] = session
	if _, ok := msg["created_at"]; !ok {
		msg["created_at"] = "2026-11-20T11:59:00.000Z"
	}
	return testjson.Marshal(t, map[string]any{"id": session, "event": "live." + msg["type"].(string), "payload": msg})
}

func transcript(id string, final bool, text string) map[string]any {
	return map[string]any{"type": "transcript", "data": map[string]any{
		"id": id, "is_final": final,
		"utterance": map[string]any{"start": 0.1, "end": 0.9, "confidence": 0.9, "channel": 0, "words": []any{}, "text": text, "language": "en"},
	}}
}

// payloadKey is the live dedupe key computed independently: sha256 of the compacted payload.
func payloadKey(t *testing.T, body []byte) string {
	t.Helper()
	var env struct {
		ID      string          `json:"id"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, env.Payload); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return "live:" + env.ID + ":" + hex.EncodeToString(sum[:])
}

func TestCallbackShapes(t *testing.T) {
	h := newHarness(t)
	type want struct {
		kind     api.CallbackKind
		event    string
		job      string
		msgType  api.MessageType
		category api.MessageCategory
		dedupe   string // "" means: the live key computed from the body
	}
	cases := []struct {
		name   string
		body   []byte
		header map[string]string
		want   want
	}{
		{"job success with a real result", successBody(t, jobID), nil,
			want{api.CallbackJobSuccess, "transcription.success", jobID, "", "", "job:" + jobID + ":transcription.success"}},
		{"job error", errorBody(t, "7d2c8a10-1111-4c7e-9f0d-2f3b5b7b9a11"), nil,
			want{api.CallbackJobError, "transcription.error", "7d2c8a10-1111-4c7e-9f0d-2f3b5b7b9a11", "", "", "job:7d2c8a10-1111-4c7e-9f0d-2f3b5b7b9a11:transcription.error"}},
		{"live partial transcript", liveBody(t, sessionID, transcript("u1", false, "hel")), nil,
			want{api.CallbackLiveMessage, "live.transcript", sessionID, api.MessageTranscript, api.CategoryPartialTranscripts, ""}},
		{"live final transcript", liveBody(t, sessionID, transcript("u1", true, "hello")), nil,
			want{api.CallbackLiveMessage, "live.transcript", sessionID, api.MessageTranscript, api.CategoryFinalTranscripts, ""}},
		{"live speech start", liveBody(t, sessionID, map[string]any{"type": "speech_start", "data": map[string]any{"time": 0.1, "channel": 0}}), nil,
			want{api.CallbackLiveMessage, "live.speech_start", sessionID, api.MessageSpeechStart, api.CategorySpeechEvents, ""}},
		{"live failed translation add-on", liveBody(t, sessionID, map[string]any{"type": "translation", "error": map[string]any{"message": "translation failed"}, "data": nil}), nil,
			want{api.CallbackLiveMessage, "live.translation", sessionID, api.MessageTranslation, api.CategoryErrors, ""}},
		{"live audio chunk ack", liveBody(t, sessionID, map[string]any{"type": "audio_chunk", "acknowledged": true, "error": nil, "data": map[string]any{"byte_range": []int{0, 3199}, "time_range": []float64{0, 0.1}}}), nil,
			want{api.CallbackLiveMessage, "live.audio_chunk", sessionID, api.MessageAudioChunk, api.CategoryAcknowledgments, ""}},
		{"live post summarization", liveBody(t, sessionID, map[string]any{"type": "post_summarization", "error": nil, "data": map[string]any{"results": "A greeting."}}), nil,
			want{api.CallbackLiveMessage, "live.post_summarization", sessionID, api.MessagePostSummarization, api.CategoryPostProcessingEvents, ""}},
		{"live end session", liveBody(t, sessionID, map[string]any{"type": "end_session"}), nil,
			want{api.CallbackLiveMessage, "live.end_session", sessionID, api.MessageEndSession, api.CategoryLifecycleEvents, ""}},
		{"account webhook without id header", []byte(`{"event":"transcription.success","payload":{"id":"` + jobID + `"}}`), nil,
			want{api.CallbackAccountWebhook, "transcription.success", jobID, "", "", "webhook:transcription.success:" + jobID}},
		{"account webhook with svix-id", []byte(`{"event":"live.start_session","payload":{"id":"` + sessionID + `"}}`), map[string]string{"svix-id": "msg_2ab"},
			want{api.CallbackAccountWebhook, "live.start_session", sessionID, "", "", "webhook:partner:msg_2ab"}},
	}
	seen := map[int64]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hd := map[string]string{"User-Agent": "service-callbacks/1.0"}
			for k, v := range tc.header {
				hd[k] = v
			}
			a := h.ack(h.post(testRouteToken, tc.body, hd))
			if a.Status != "stored" || a.ID <= 0 || seen[a.ID] {
				t.Fatalf("ack %+v, want a new stored row", a)
			}
			seen[a.ID] = true
			row, err := h.store.InboxRow(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if w.dedupe == "" {
				w.dedupe = payloadKey(t, tc.body)
			}
			got := want{row.Kind, row.Event, row.JobID, row.MessageType, row.Category, row.DedupeKey}
			if got != w {
				t.Errorf("stored\n got %+v\nwant %+v", got, w)
			}
			if row.PartitionKey != w.job || row.Route != "partner" || row.Quarantine != "" {
				t.Errorf("partition %q route %q quarantine %q", row.PartitionKey, row.Route, row.Quarantine)
			}
			if !bytes.Equal(row.Body, tc.body) {
				t.Errorf("body not stored as received")
			}
			if row.Headers["user-agent"] != "service-callbacks/1.0" || row.Headers["content-type"] != "application/json" {
				t.Errorf("headers %v", row.Headers)
			}
			if !row.ReceivedAt.Equal(testNow) {
				t.Errorf("received_at %v", row.ReceivedAt)
			}
		})
	}
	// Every new row was announced with its partition, in order.
	calls := h.notified.list()
	if len(calls) != len(cases) {
		t.Fatalf("notified %d times, want %d", len(calls), len(cases))
	}
	for i, c := range calls {
		if c.partition != cases[i].want.job {
			t.Errorf("notification %d: partition %q, want %q", i, c.partition, cases[i].want.job)
		}
	}
}

func TestCallbackPUTAndDuplicate(t *testing.T) {
	h := newHarness(t)
	body := successBody(t, jobID)
	first := h.ack(h.do(http.MethodPut, "/v1/callbacks/"+testRouteToken, body, map[string]string{"Content-Type": "application/json"}))
	if first.Status != "stored" {
		t.Fatalf("first %+v", first)
	}
	// A retry, and the same live message re-sent with other whitespace, are duplicates.
	second := h.ack(h.post(testRouteToken, body, nil))
	if second != (ackBody{Status: "duplicate", ID: first.ID}) {
		t.Errorf("second %+v, want duplicate of %d", second, first.ID)
	}
	live := liveBody(t, sessionID, transcript("u9", true, "again"))
	a := h.ack(h.post(testRouteToken, live, nil))
	var indented bytes.Buffer
	if err := json.Indent(&indented, live, "", "  "); err != nil {
		t.Fatal(err)
	}
	b := h.ack(h.post(testRouteToken, indented.Bytes(), nil))
	if b != (ackBody{Status: "duplicate", ID: a.ID}) {
		t.Errorf("re-indented live message %+v, want duplicate of %d", b, a.ID)
	}
	if rows := h.inbox(); len(rows) != 2 {
		t.Errorf("inbox has %d rows, want 2", len(rows))
	}
	if n := len(h.notified.list()); n != 2 {
		t.Errorf("notified %d times, want 2 (duplicates are not announced)", n)
	}
}

func TestJobTokens(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	otherJob := "11111111-2222-4333-8444-555555555555"

	bound := h.jobToken(jobID, api.KindPreRecorded)
	a := h.ack(h.post(bound, successBody(t, jobID), nil))
	row, err := h.store.InboxRow(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Route != "job" || row.JobID != jobID {
		t.Errorf("route %q job %q", row.Route, row.JobID)
	}

	// Rejections store nothing: a fresh harness keeps the inbox empty for the check.
	h2 := newHarness(t)
	unknown, _ := store.NewToken()
	revoked := h2.jobToken(jobID, api.KindPreRecorded)
	if err := h2.store.RevokeToken(ctx, store.HashToken(revoked)); err != nil {
		t.Fatal(err)
	}
	other := h2.jobToken(otherJob, api.KindPreRecorded)
	otherLive := h2.jobToken(otherJob, api.KindLive)
	liveTok := h2.jobToken(sessionID, api.KindLive)
	preTok := h2.jobToken(jobID, api.KindPreRecorded)
	expired := h2.jobTokenAt(jobID, api.KindPreRecorded, testNow.Add(-DefaultTokenTTL-time.Second))
	for _, tc := range []struct {
		name, token, msg string
		body             []byte
	}{
		{"unknown", unknown, "unknown callback token", successBody(t, jobID)},
		{"revoked", revoked, "callback token is revoked", successBody(t, jobID)},
		{"bound to another job", other, "token is for another job", successBody(t, jobID)},
		{"live message for another session", otherLive, "token is for another job", liveBody(t, sessionID, transcript("u1", true, "x"))},
		// A token serves its job's kind of callbacks only.
		{"pre-recorded token, live message", preTok, "token of a pre-recorded job cannot send a live.message callback", liveBody(t, jobID, transcript("u1", true, "x"))},
		{"live token, job result", liveTok, "token of a live job cannot send a job.success callback", successBody(t, sessionID)},
		{"job token, account webhook", preTok, "token of a pre-recorded job cannot send a account.webhook callback",
			[]byte(`{"event":"transcription.success","payload":{"id":"` + jobID + `"}}`)},
		{"expired (minted 7 days and 1 s ago)", expired, "callback token has expired", successBody(t, jobID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h2.post(tc.token, tc.body, nil)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			m := r.json(t)
			if m["error"] != tc.msg || m["status"] != float64(401) {
				t.Errorf("body %s, want error %q", r.body, tc.msg)
			}
		})
	}
	h2.assertNothingStored()

	// An unbound token is bound by its first delivery, then refuses other jobs.
	unbound := h.jobToken("", api.KindLive)
	h.ack(h.post(unbound, liveBody(t, sessionID, map[string]any{"type": "start_session"}), nil))
	tok, err := h.store.LookupToken(ctx, store.HashToken(unbound))
	if err != nil {
		t.Fatal(err)
	}
	if tok.JobID != sessionID {
		t.Errorf("token bound to %q, want %q", tok.JobID, sessionID)
	}
	if r := h.post(unbound, successBody(t, otherJob), nil); r.status != http.StatusUnauthorized {
		t.Errorf("after binding, another job: status %d", r.status)
	}
	h.ack(h.post(unbound, liveBody(t, sessionID, map[string]any{"type": "end_session"}), nil))
}

func TestSignatures(t *testing.T) {
	h := newHarness(t)
	body := []byte(`{"event":"transcription.success","payload":{"id":"` + jobID + `"}}`)
	okCases := []struct {
		name   string
		header map[string]string
		dedupe string
	}{
		{"webhook headers", signHeaders("webhook", testKey1, "msg_1", testNow, body), "webhook:account:msg_1"},
		{"svix headers", signHeaders("svix", testKey1, "msg_2", testNow.Add(-4*time.Minute), body), "webhook:account:msg_2"},
		{"rotated second secret", signHeaders("webhook", testKey2, "msg_3", testNow.Add(4*time.Minute), body), "webhook:account:msg_3"},
	}
	for _, tc := range okCases {
		t.Run(tc.name, func(t *testing.T) {
			a := h.ack(h.post(testSignedToken, body, tc.header))
			row, err := h.store.InboxRow(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != "stored" || row.DedupeKey != tc.dedupe || row.Route != "account" {
				t.Errorf("ack %+v, dedupe %q route %q", a, row.DedupeKey, row.Route)
			}
			for k := range row.Headers {
				if strings.HasSuffix(k, "-signature") {
					t.Errorf("signature header %s stored", k)
				}
			}
			if row.Headers[strings.Split(tc.name, " ")[0]+"-id"] == "" && row.Headers["webhook-id"] == "" && row.Headers["svix-id"] == "" {
				t.Errorf("id header not kept: %v", row.Headers)
			}
		})
	}

	h2 := newHarness(t)
	wrong := signHeaders("webhook", []byte("not our key"), "msg_4", testNow, body)
	tampered := signHeaders("webhook", testKey1, "msg_5", testNow, body)
	tampered["webhook-id"] = "msg_6" // the id is signed too
	badCases := []struct {
		name   string
		header map[string]string
		msg    string
	}{
		{"wrong signature", wrong, "signature mismatch"},
		{"tampered id", tampered, "signature mismatch"},
		{"stale timestamp", signHeaders("webhook", testKey1, "msg_7", testNow.Add(-6*time.Minute), body), "timestamp too old"},
		{"future timestamp", signHeaders("svix", testKey1, "msg_8", testNow.Add(6*time.Minute), body), "timestamp too new"},
		{"missing headers", nil, "missing signature headers (webhook-id, webhook-timestamp, webhook-signature)"},
		{"missing signature", map[string]string{"webhook-id": "msg_9", "webhook-timestamp": "1"}, "missing webhook-signature header"},
	}
	for _, tc := range badCases {
		t.Run(tc.name, func(t *testing.T) {
			r := h2.post(testSignedToken, body, tc.header)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if m := r.json(t); m["error"] != tc.msg {
				t.Errorf("error %q, want %q", m["error"], tc.msg)
			}
		})
	}
	h2.assertNothingStored()
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestContentEncoding(t *testing.T) {
	h := newHarness(t)
	body := successBody(t, jobID)
	zipped := gzipped(t, body)
	// Signed over the compressed bytes, as they travel.
	hd := signHeaders("webhook", testKey1, "msg_gz", testNow, zipped)
	hd["Content-Encoding"] = "gzip"
	a := h.ack(h.post(testSignedToken, zipped, hd))
	row, err := h.store.InboxRow(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(row.Body, body) || row.Kind != api.CallbackJobSuccess {
		t.Errorf("gzip body stored as %q (kind %q)", row.Body[:min(len(row.Body), 40)], row.Kind)
	}
	if _, ok := row.Headers["content-encoding"]; ok {
		t.Errorf("content-encoding kept for a decoded body")
	}

	// An encoding we cannot undo is kept raw in quarantine, with its header.
	r := h.ack(h.post(testRouteToken, []byte("\x1b\x00brotli?"), map[string]string{"Content-Encoding": "br"}))
	if r.Status != "quarantined" {
		t.Fatalf("br: %+v", r)
	}
	q := h.quarantined()
	if len(q) != 1 || q[0].Reason != `unsupported content-encoding "br"` || q[0].Headers["content-encoding"] != "br" || string(q[0].Body) != "\x1b\x00brotli?" {
		t.Errorf("quarantine %+v", q)
	}
}

func TestBodyLimits(t *testing.T) {
	const limit = 4096
	h := newHarness(t, withConfig(func(c *Config) { c.BodyLimit = limit }))
	big := append([]byte(`{"id":"x","event":"transcription.error","error":{"message":"`), bytes.Repeat([]byte("a"), limit)...)
	big = append(big, `"}}`...)
	for _, tc := range []struct {
		name   string
		body   []byte
		header map[string]string
		msg    string
	}{
		{"raw body over the limit", big, nil, "request body exceeds 4096 bytes"},
		// Far over the limit: the client is still writing when the 413 comes (see linger.go).
		{"body of 8 MiB", bytes.Repeat([]byte("a"), 8<<20), nil, "request body exceeds 4096 bytes"},
		{"gzip that inflates over the limit", gzipped(t, big), map[string]string{"Content-Encoding": "gzip"}, "decoded request body exceeds 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.post(testRouteToken, tc.body, tc.header)
			if r.status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if m := r.json(t); m["error"] != tc.msg || m["status"] != float64(413) {
				t.Errorf("body %s", r.body)
			}
		})
	}
	h.assertNothingStored()
}

func TestQuarantine(t *testing.T) {
	h := newHarness(t)
	tok := h.jobToken(jobID, api.KindPreRecorded)
	cases := []struct {
		name   string
		body   []byte
		reason string
	}{
		{"malformed JSON", []byte(`{"id":"` + jobID + `","event":`), "not a JSON object"},
		{"JSON of no known shape", []byte(`{"hello":"world"}`), "event is missing"},
		{"unknown live message type", liveBody(t, jobID, map[string]any{"type": "audio_preprocessed"}), `unknown live message type "audio_preprocessed"`},
		{"not JSON at all", []byte("plain text"), "not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := h.ack(h.post(tok, tc.body, map[string]string{"Content-Type": "text/plain"}))
			if a.Status != "quarantined" || a.ID <= 0 {
				t.Fatalf("ack %+v", a)
			}
			rows := h.quarantined()
			if len(rows) == 0 || rows[0].ID != a.ID {
				t.Fatalf("quarantine newest %+v, want id %d", rows, a.ID)
			}
			q := rows[0]
			if !strings.Contains(q.Reason, tc.reason) || q.Route != "job" || !bytes.Equal(q.Body, tc.body) || q.Headers["content-type"] != "text/plain" {
				t.Errorf("row %+v (reason %q)", q, q.Reason)
			}
		})
	}
	// The same unreadable body again is kept once.
	again := h.ack(h.post(tok, cases[0].body, nil))
	if !strings.Contains(string(again.Status), "duplicate") {
		t.Errorf("repeat: %+v", again)
	}
	if n := len(h.quarantined()); n != len(cases) {
		t.Errorf("%d quarantined, want %d", n, len(cases))
	}
	if len(h.inbox()) != 0 || len(h.notified.list()) != 0 {
		t.Errorf("quarantined deliveries reached the inbox or the notifier")
	}
}

func TestIngestFailure(t *testing.T) {
	// A real Batcher over a closed SQLite store: our own failure to commit.
	h := newHarness(t, withConfig(func(c *Config) {
		c.Ingester = store.NewBatcher(newClosedStore(t), store.BatcherOptions{})
	}))
	r := h.post(testRouteToken, successBody(t, jobID), nil)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("status %d retry-after %q: %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if m := r.json(t); m["error"] != "delivery not stored, retry later" || m["status"] != float64(503) {
		t.Errorf("body %s", r.body)
	}
	if !strings.Contains(h.logs.String(), "job_id="+jobID) {
		t.Errorf("failure not logged with job_id: %s", h.logs.String())
	}
	h.assertNothingStored()
	if len(h.notified.list()) != 0 {
		t.Errorf("a failed delivery was announced")
	}
}

// The ack written by hand is what the JSON encoder gives for it.
func TestAckBodyJSON(t *testing.T) {
	for _, status := range []string{outcomeStored, outcomeDuplicate, outcomeQuarantined} {
		for _, id := range []int64{0, 1, -7, 1 << 62} {
			a := ackBody{Status: status, ID: id}
			got, err := marshalPlain(a)
			want, werr := plainjson.Marshal(a)
			if err != nil || werr != nil || string(got) != string(want) {
				t.Errorf("%+v: %s (%v), the encoder gives %s (%v)", a, got, err, want, werr)
			}
		}
	}
}
