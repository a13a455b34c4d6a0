package sandbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/sandbox"
)

// wireJSON is a live message as sent, without its session_id and created_at (which vary), in
// a canonical spelling (members sorted) for comparison with a literal.
func wireJSON(t *testing.T, b []byte) string {
	t.Helper()
	var m map[string]json.RawMessage
	decodeJSON(t, b, &m)
	delete(m, "session_id")
	delete(m, "created_at")
	return canonicalJSON(t, m)
}

func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		var x any
		decodeJSON(t, []byte(s), &x)
		v = x
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	decodeJSON(t, b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

// nextOfType reads messages until one of type typ, and returns it as sent.
func nextOfType(t *testing.T, ctx context.Context, c *websocket.Conn, typ string) []byte {
	t.Helper()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		var head struct {
			Type string `json:"type"`
		}
		decodeJSON(t, b, &head)
		if head.Type == typ {
			return b
		}
	}
}

// TestLiveAudioChunkAcknowledgments sends client messages in turn on one session and checks
// the exact acknowledgment of each: an empty chunk, JSON or binary, is an empty range (pipecat's
// keepalive); a chunk member that is missing or not base64 is refused.
func TestLiveAudioChunkAcknowledgments(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, c := openLive(t, ctx, e)
	tenth := base64.StdEncoding.EncodeToString(make([]byte, 3200)) // 100 ms at 16 kHz, 16-bit
	ack := func(from, to int, start, end float64) string {
		b, _ := json.Marshal(map[string]any{"type": "audio_chunk", "acknowledged": true, "error": nil,
			"data": map[string]any{"byte_range": []int{from, to}, "time_range": []float64{start, end}}})
		return string(b)
	}
	nack := func(msg string) string {
		b, _ := json.Marshal(map[string]any{"type": "audio_chunk", "acknowledged": false, "error": map[string]string{"message": msg}})
		return string(b)
	}
	cases := []struct {
		name   string
		binary bool
		send   string
		want   string
	}{
		{"empty JSON chunk first", false, `{"type":"audio_chunk","data":{"chunk":""}}`, ack(0, 0, 0, 0)},
		{"a tenth of a second", false, `{"type":"audio_chunk","data":{"chunk":"` + tenth + `"}}`, ack(0, 3200, 0, 0.1)},
		{"empty JSON chunk (keepalive)", false, `{"type":"audio_chunk","data":{"chunk":""}}`, ack(3200, 3200, 0.1, 0.1)},
		{"empty binary frame", true, ``, ack(3200, 3200, 0.1, 0.1)},
		{"no chunk member", false, `{"type":"audio_chunk","data":{}}`, nack("audio_chunk needs data.chunk with base64 audio")},
		{"no data", false, `{"type":"audio_chunk"}`, nack("audio_chunk needs data.chunk with base64 audio")},
		{"chunk null", false, `{"type":"audio_chunk","data":{"chunk":null}}`, nack("audio_chunk needs data.chunk with base64 audio")},
		{"chunk not a string", false, `{"type":"audio_chunk","data":{"chunk":3}}`, nack("audio_chunk needs data.chunk with base64 audio")},
		{"not base64", false, `{"type":"audio_chunk","data":{"chunk":"@@@"}}`, nack("data.chunk is not valid base64: illegal base64 data at input byte 0")},
		{"audio goes on after refusals", true, string(make([]byte, 1600)), ack(3200, 4800, 0.1, 0.15)},
	}
	for _, tc := range cases {
		typ := websocket.MessageText
		if tc.binary {
			typ = websocket.MessageBinary
		}
		if err := c.Write(ctx, typ, []byte(tc.send)); err != nil {
			t.Fatal(err)
		}
		if got, want := wireJSON(t, nextOfType(t, ctx, c, "audio_chunk")), canonicalJSON(t, tc.want); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}
}

// TestLiveClientCloseCodes: closing with 1000 or 1001 (the SDKs' end_session, after
// stop_recording or without it) ends the recording at once and the job is done; a drop or
// another code leaves the session waiting for the client to resume (here for an hour).
func TestLiveClientCloseCodes(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.LiveResumeWindow = time.Hour })
	cases := []struct {
		name     string
		stop     bool
		close    func(c *websocket.Conn) error
		finished bool
	}{
		{"1001 after stop_recording", true, func(c *websocket.Conn) error { return c.Close(websocket.StatusGoingAway, "Aborted") }, true},
		{"1001 alone", false, func(c *websocket.Conn) error { return c.Close(websocket.StatusGoingAway, "Aborted") }, true},
		{"1000 alone", false, func(c *websocket.Conn) error { return c.Close(websocket.StatusNormalClosure, "") }, true},
		{"dropped, no close frame", false, func(c *websocket.Conn) error { return c.CloseNow() }, false},
		{"4000", false, func(c *websocket.Conn) error { return c.Close(websocket.StatusCode(4000), "") }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			created, c := openLive(t, ctx, e)
			if err := c.Write(ctx, websocket.MessageBinary, make([]byte, 3200)); err != nil {
				t.Fatal(err)
			}
			nextOfType(t, ctx, c, "audio_chunk")
			if tc.stop {
				if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"stop_recording"}`)); err != nil {
					t.Fatal(err)
				}
			}
			_ = tc.close(c)
			if !tc.finished {
				time.Sleep(300 * time.Millisecond)
				job, err := e.client.GetLive(ctx, created.ID)
				if err != nil || job.Status != api.StatusProcessing {
					t.Fatalf("status %s, %v: want processing, waiting for a resume", job.Status, err)
				}
				return
			}
			job := e.waitJob(created.ID, api.KindLive)
			var got []string
			for _, s := range apitest.MustResult(&job).Messages {
				switch w := wireJSON(t, []byte(s)); {
				case strings.Contains(w, `"type":"stop_recording"`), strings.Contains(w, `"type":"end_recording"`):
					got = append(got, w)
				}
			}
			want := []string{canonicalJSON(t, `{"type":"end_recording","data":{"recording_duration":0.1}}`)}
			if tc.stop {
				want = append([]string{canonicalJSON(t, `{"type":"stop_recording","acknowledged":true,"error":null,`+
					`"data":{"recording_duration":0.1,"recording_left_to_process":0}}`)}, want...)
			}
			if job.Status != api.StatusDone || !slices.Equal(got, want) {
				t.Errorf("status %s, messages\n got %q\nwant %q", job.Status, got, want)
			}
		})
	}
}

// TestLiveBadKeyAndToken: a bad key is refused by POST /v2/live with the error envelope of
// provider-facts.md and status 401, before any socket; a bad or spent token is refused at the
// WebSocket handshake with the same envelope and status, so no socket opens and there is no
// close code (the SDKs see a failed connection).
func TestLiveBadKeyAndToken(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	envelope := func(path, msg string) string {
		return canonicalJSON(t, map[string]any{"path": path, "statusCode": 401, "message": msg})
	}
	// without drops the varying members after checking them.
	without := func(b []byte, h http.Header) string {
		var m map[string]json.RawMessage
		decodeJSON(t, b, &m)
		var rid string
		decodeJSON(t, m["request_id"], &rid)
		if !regexp.MustCompile(`^G-[0-9a-f]{8}$`).MatchString(rid) || h.Get("x-request-id") != rid || m["timestamp"] == nil {
			t.Errorf("request_id %q (header %q), timestamp %s", rid, h.Get("x-request-id"), m["timestamp"])
		}
		delete(m, "request_id")
		delete(m, "timestamp")
		return canonicalJSON(t, m)
	}
	for _, c := range []struct{ name, key, want string }{
		{"wrong key", "not-the-key", envelope("/v2/live", "invalid API key")},
		{"no key", "", envelope("/v2/live", "missing API key: send it in the x-service-key header")},
	} {
		status, body, h := e.raw("POST", "/v2/live", c.key, "application/json", []byte(`{}`))
		if got := without(body, h); status != http.StatusUnauthorized || got != c.want {
			t.Errorf("%s: %d %s, want 401 %s", c.name, status, got, c.want)
		}
	}

	created, c := openLive(t, ctx, e)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"stop_recording"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := readUntilClose(t, ctx, c); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("close = %v", err)
	}
	base := strings.Replace(e.svc.URL, "http://", "ws://", 1) + "/v2/live?token="
	for _, c := range []struct{ name, url, want string }{
		{"wrong token", base + "deadbeef", envelope("/v2/live", "invalid or expired session token")},
		{"spent token", created.URL, envelope("/v2/live", "session token already used: the session has ended")},
	} {
		conn, resp, err := websocket.Dial(ctx, c.url, nil)
		if err == nil {
			_ = conn.CloseNow()
			t.Fatalf("%s: a socket opened", c.name)
		}
		body, _ := io.ReadAll(resp.Body)
		if got := without(body, resp.Header); resp.StatusCode != http.StatusUnauthorized || got != c.want {
			t.Errorf("%s: %d %s, want 401 %s", c.name, resp.StatusCode, got, c.want)
		}
	}
}
