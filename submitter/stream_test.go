package submitter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coder/websocket"

	"github.com/scribehook/scribehook/api"
)

// frame is one client frame as the test server saw it.
type frame struct {
	typ  websocket.MessageType
	data []byte
}

// liveServer stands in for the service's live socket: it acknowledges each audio frame,
// answers stop_recording like the service (ack, end_recording, post_final_transcript,
// end_session) and closes with closeCode. closeAfter > 0 makes it close after that many
// frames instead.
type liveServer struct {
	*httptest.Server
	mu         sync.Mutex
	frames     []frame
	query      string
	closeCode  websocket.StatusCode
	closeAfter int
}

func newLiveServer(t *testing.T, closeCode websocket.StatusCode, closeAfter int) *liveServer {
	t.Helper()
	ls := &liveServer{closeCode: closeCode, closeAfter: closeAfter}
	ls.Server = httptest.NewServer(http.HandlerFunc(ls.serve))
	t.Cleanup(ls.Close)
	return ls
}

func (ls *liveServer) url() string {
	return "ws" + strings.TrimPrefix(ls.URL, "http") + "/v2/live?token=tok-secret-42"
}

func (ls *liveServer) serve(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	ls.query = r.URL.RawQuery
	ls.mu.Unlock()
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	send := func(typ string, data string) {
		msg := fmt.Sprintf(`{"session_id":"s1","created_at":"2026-11-20T10:00:00.000Z","type":%q,"data":%s}`, typ, data)
		_ = conn.Write(ctx, websocket.MessageText, []byte(msg))
	}
	send("start_session", "null")
	var offset int
	for n := 1; ; n++ {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		ls.mu.Lock()
		ls.frames = append(ls.frames, frame{typ, data})
		ls.mu.Unlock()
		if ls.closeAfter > 0 && n == ls.closeAfter {
			_ = conn.Close(ls.closeCode, "")
			return
		}
		if typ == websocket.MessageText && bytes.Contains(data, []byte(`"stop_recording"`)) {
			send("stop_recording", `{"recording_duration":1,"recording_left_to_process":0}`)
			send("end_recording", `{"recording_duration":1}`)
			send("post_final_transcript", `{"transcription":{"full_transcript":"hello"}}`)
			send("end_session", "null")
			_ = conn.Close(ls.closeCode, "")
			return
		}
		size := len(data)
		if typ == websocket.MessageText {
			var m api.AudioChunkMessage
			_ = json.Unmarshal(data, &m)
			size = len(m.Data.Chunk)
		}
		send("audio_chunk", fmt.Sprintf(`{"byte_range":[%d,%d]}`, offset, offset+size))
		offset += size
	}
}

func (ls *liveServer) got() ([]frame, string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return slices.Clone(ls.frames), ls.query
}

func audioBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func TestStreamLiveBinaryChunksStopAndOrderedMessages(t *testing.T) {
	ls := newLiveServer(t, websocket.StatusNormalClosure, 0)
	c, s := newTestClient(t, ls.URL)
	audio := audioBytes(3*3200 + 1000)
	var types []string
	var ranges []string
	err := c.StreamLive(context.Background(), ls.url(), bytes.NewReader(audio), StreamOptions{SampleRate: 16000, BitDepth: 16, Channels: 1},
		func(m api.LiveMessage) {
			types = append(types, string(m.Type))
			if m.Type == api.MessageAudioChunk {
				var d api.AudioChunkAckData
				_ = m.DecodeData(&d)
				ranges = append(ranges, fmt.Sprint(d.ByteRange))
			}
		})
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	frames, query := ls.got()
	if query != "token=tok-secret-42" {
		t.Fatalf("query = %q", query)
	}
	var sizes []int
	var sent []byte
	for _, f := range frames[:len(frames)-1] {
		if f.typ != websocket.MessageBinary {
			t.Fatalf("audio frame of type %v", f.typ)
		}
		sizes = append(sizes, len(f.data))
		sent = append(sent, f.data...)
	}
	if want := []int{3200, 3200, 3200, 1000}; !slices.Equal(sizes, want) {
		t.Fatalf("frame sizes = %v, want %v", sizes, want)
	}
	if !bytes.Equal(sent, audio) {
		t.Fatal("audio bytes differ")
	}
	last := frames[len(frames)-1]
	if last.typ != websocket.MessageText || string(last.data) != `{"type":"stop_recording"}` {
		t.Fatalf("last frame = %v %s", last.typ, last.data)
	}
	wantTypes := []string{"start_session", "audio_chunk", "audio_chunk", "audio_chunk", "audio_chunk",
		"stop_recording", "end_recording", "post_final_transcript", "end_session"}
	if !slices.Equal(types, wantTypes) {
		t.Fatalf("messages = %v, want %v", types, wantTypes)
	}
	if want := []string{"[0 3200]", "[3200 6400]", "[6400 9600]", "[9600 10600]"}; !slices.Equal(ranges, want) {
		t.Fatalf("ack ranges = %v", ranges)
	}
	if len(s.got()) != 0 {
		t.Fatalf("slept %v without realtime pacing", s.got())
	}
}

func TestStreamLiveJSONChunks(t *testing.T) {
	ls := newLiveServer(t, websocket.StatusNormalClosure, 0)
	c, _ := newTestClient(t, ls.URL)
	audio := audioBytes(1600 + 10) // 8 kHz 16-bit mono: 1600 bytes per 100 ms
	err := c.StreamLive(context.Background(), ls.url(), bytes.NewReader(audio), StreamOptions{SampleRate: 8000, JSONChunks: true}, nil)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	frames, _ := ls.got()
	if len(frames) != 3 {
		t.Fatalf("frames = %d, want 2 chunks and stop", len(frames))
	}
	var sent []byte
	for i, f := range frames[:2] {
		var m struct {
			Type string `json:"type"`
			Data struct {
				Chunk string `json:"chunk"`
			} `json:"data"`
		}
		if f.typ != websocket.MessageText || json.Unmarshal(f.data, &m) != nil || m.Type != "audio_chunk" {
			t.Fatalf("frame %d = %s", i, f.data)
		}
		var chunk []byte
		if err := json.Unmarshal([]byte(`"`+m.Data.Chunk+`"`), &chunk); err != nil {
			t.Fatalf("frame %d chunk is not base64: %v", i, err)
		}
		sent = append(sent, chunk...)
	}
	if !bytes.Equal(sent, audio) || len(frames[0].data) <= 1600 {
		t.Fatalf("sent %d bytes", len(sent))
	}
}

func TestStreamLiveRealtimePacing(t *testing.T) {
	ls := newLiveServer(t, websocket.StatusNormalClosure, 0)
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var waits []time.Duration
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sleeper := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		now = now.Add(d + 7*time.Millisecond) // sending costs time; pacing must absorb it
		return ctx.Err()
	}
	c, _ := newTestClient(t, ls.URL, WithClock(clock), WithSleeper(sleeper))
	err := c.StreamLive(context.Background(), ls.url(), bytes.NewReader(audioBytes(4*3200)), StreamOptions{Realtime: true}, nil)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	want := []time.Duration{100 * time.Millisecond, 93 * time.Millisecond, 93 * time.Millisecond}
	if !slices.Equal(waits, want) {
		t.Fatalf("waits = %v, want %v", waits, want)
	}
}

func TestStreamLiveAbnormalCloseIsAnError(t *testing.T) {
	ls := newLiveServer(t, websocket.StatusInternalError, 0)
	c, _ := newTestClient(t, ls.URL)
	err := c.StreamLive(context.Background(), ls.url(), bytes.NewReader(audioBytes(3200)), StreamOptions{}, nil)
	if websocket.CloseStatus(err) != websocket.StatusInternalError {
		t.Fatalf("err = %v, want close status 1011", err)
	}
}

func TestStreamLiveEarlyNormalCloseIsAnError(t *testing.T) {
	ls := newLiveServer(t, websocket.StatusNormalClosure, 1)
	c, _ := newTestClient(t, ls.URL)
	// An endless source: the client must stop because the server went away.
	src := io.MultiReader(bytes.NewReader(audioBytes(3200)), neverEnding{})
	err := c.StreamLive(context.Background(), ls.url(), src, StreamOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), "before stop_recording") {
		t.Fatalf("err = %v", err)
	}
}

type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) { time.Sleep(time.Millisecond); return len(p), nil }

func TestStreamLiveAudioSourceError(t *testing.T) {
	ls := newLiveServer(t, websocket.StatusNormalClosure, 0)
	c, _ := newTestClient(t, ls.URL)
	boom := errors.New("disk on fire")
	src := io.MultiReader(bytes.NewReader(audioBytes(3200)), iotest.ErrReader(boom))
	err := c.StreamLive(context.Background(), ls.url(), src, StreamOptions{}, nil)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "read audio: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamLiveDialErrorHidesToken(t *testing.T) {
	c, _ := newTestClient(t, "http://127.0.0.1:1")
	err := c.StreamLive(context.Background(), strings.Replace(refusedURL(t), "http", "ws", 1)+"/v2/live?token=tok-secret-42",
		bytes.NewReader(nil), StreamOptions{}, nil)
	if err == nil || strings.Contains(err.Error(), "tok-secret-42") || !strings.Contains(err.Error(), "REDACTED") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamLiveCancel(t *testing.T) {
	ls := newLiveServer(t, websocket.StatusNormalClosure, 0)
	c, _ := newTestClient(t, ls.URL, WithSleeper(sleepContext))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.StreamLive(ctx, ls.url(), bytes.NewReader(audioBytes(100*3200)), StreamOptions{Realtime: true}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}

func TestChunkSize(t *testing.T) {
	cases := []struct {
		o    StreamOptions
		want int
	}{
		{StreamOptions{}, 3200},
		{StreamOptions{SampleRate: 16000, BitDepth: 16, Channels: 1}, 3200},
		{StreamOptions{SampleRate: 8000, BitDepth: 8}, 800},
		{StreamOptions{SampleRate: 48000, BitDepth: 24, Channels: 2}, 28800},
		{StreamOptions{SampleRate: 44100}, 8820},
		{StreamOptions{SampleRate: 44100, Channels: 2, ChunkDuration: 33 * time.Millisecond}, 5820},
		{StreamOptions{ChunkDuration: 20 * time.Millisecond}, 640},
	}
	for _, tc := range cases {
		if got := tc.o.ChunkSize(); got != tc.want {
			t.Errorf("%+v: ChunkSize = %d, want %d", tc.o, got, tc.want)
		}
	}
}

func TestStreamLiveRefusesOversizedFrames(t *testing.T) {
	c, _ := newTestClient(t, "http://127.0.0.1:1")
	err := c.StreamLive(context.Background(), "ws://127.0.0.1:1/", bytes.NewReader(nil),
		StreamOptions{SampleRate: 48000, BitDepth: 32, Channels: 8, ChunkDuration: time.Second}, nil)
	if err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("err = %v", err)
	}
}
