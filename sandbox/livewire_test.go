package sandbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
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
