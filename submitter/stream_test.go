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
// wsServer is a test service's HTTP server; url is its live endpoint as the service gives it.
type wsServer struct{ *httptest.Server }

func (s wsServer) url() string {
	return "ws" + strings.TrimPrefix(s.URL, "http") + "/v2/live?token=tok-secret-42"
}

// serveWS serves h until the test ends.
func serveWS(t *testing.T, h http.HandlerFunc) wsServer {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return wsServer{srv}
}

type liveServer struct {
	wsServer
	mu         sync.Mutex
	frames     []frame
	query      string
	closeCode  websocket.StatusCode
	closeAfter int
}

func newLiveServer(t *testing.T, closeCode websocket.StatusCode, closeAfter int) *liveServer {
	t.Helper()
	ls := &liveServer{closeCode: closeCode, closeAfter: closeAfter}
	ls.wsServer = serveWS(t, ls.serve)
	return ls
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

// resumeServer is a live session that survives its connections, like the service: a
// reconnection to the same URL continues the session. It drops the connection (no close
// frame) when it reads the frames numbered in dropAt, counting across connections, and
// discards those frames: what it never acknowledged, it never received.
type resumeServer struct {
	wsServer
	dropAt  map[int]bool
	noAcks  bool
	refuse  func(conn int) int // status refusing connection n (1-based); 0 accepts
	mu      sync.Mutex
	conns   int
	frames  int
	audio   []byte
	events  []string // "audio" or "stop", in the order the session applied them
	lastWas string
}

func newResumeServer(t *testing.T, dropAt ...int) *resumeServer {
	t.Helper()
	rs := &resumeServer{dropAt: map[int]bool{}}
	for _, n := range dropAt {
		rs.dropAt[n] = true
	}
	rs.wsServer = serveWS(t, rs.serve)
	return rs
}

func (rs *resumeServer) serve(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	rs.conns++
	n := rs.conns
	rs.mu.Unlock()
	if rs.refuse != nil {
		if status := rs.refuse(n); status != 0 {
			http.Error(w, "refused", status)
			return
		}
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	send := func(typ, data string) {
		msg := fmt.Sprintf(`{"session_id":"s1","created_at":"2026-11-20T10:00:00.000Z","type":%q,"data":%s}`, typ, data)
		_ = conn.Write(ctx, websocket.MessageText, []byte(msg))
	}
	if n == 1 {
		send("start_session", "null")
	}
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		rs.mu.Lock()
		rs.frames++
		if rs.dropAt[rs.frames] {
			rs.mu.Unlock()
			conn.CloseNow() // the network drops: no close frame, the frame is lost
			return
		}
		if typ == websocket.MessageText && bytes.Contains(data, []byte(`"stop_recording"`)) {
			rs.events = append(rs.events, "stop")
			rs.mu.Unlock()
			send("stop_recording", `{"recording_duration":1,"recording_left_to_process":0}`)
			send("end_session", "null")
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return
		}
		if typ == websocket.MessageText {
			var m api.AudioChunkMessage
			_ = json.Unmarshal(data, &m)
			data = m.Data.Chunk
		}
		start := len(rs.audio)
		rs.audio = append(rs.audio, data...)
		rs.events = append(rs.events, "audio")
		end := len(rs.audio)
		rs.mu.Unlock()
		if !rs.noAcks {
			send("audio_chunk", fmt.Sprintf(`{"byte_range":[%d,%d]}`, start, end))
		}
	}
}

func (rs *resumeServer) got() ([]byte, []string, int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.audio), slices.Clone(rs.events), rs.conns
}

// pipeAudio feeds audio through a pipe in uneven pieces: a source that cannot rewind, like
// stdin.
func pipeAudio(t *testing.T, audio []byte) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		for off, i := 0, 0; off < len(audio); i++ {
			n := min(len(audio)-off, 700+i*331%2900)
			if _, err := pw.Write(audio[off : off+n]); err != nil {
				return
			}
			off += n
		}
		pw.Close()
	}()
	t.Cleanup(func() { pr.Close() })
	return pr
}

func TestStreamLiveResumesAfterDrops(t *testing.T) {
	for _, jsonChunks := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonChunks), func(t *testing.T) {
			audio := audioBytes(12*3200 + 123)
			// Drops at the 3rd and 8th frames, and at the first stop_recording (frame 15: 13
			// audio frames plus the two lost ones).
			rs := newResumeServer(t, 3, 8, 16)
			c, sleeps := newTestClient(t, rs.URL)
			var types []string
			var mu sync.Mutex
			err := c.StreamLive(context.Background(), rs.url(), pipeAudio(t, audio), StreamOptions{JSONChunks: jsonChunks},
				func(m api.LiveMessage) {
					mu.Lock()
					types = append(types, string(m.Type))
					mu.Unlock()
				})
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			got, events, conns := rs.got()
			if !bytes.Equal(got, audio) {
				t.Fatalf("server received %d bytes, want the %d sent exactly once in order", len(got), len(audio))
			}
			if conns != 4 {
				t.Fatalf("connections = %d, want 4", conns)
			}
			if stops := slices.Index(events, "stop"); stops != len(events)-1 {
				t.Fatalf("events = %v: stop_recording must come once, last", events)
			}
			// Each reconnection followed progress, so each waits the first step of the back-off.
			if want := []time.Duration{250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond}; !slices.Equal(sleeps.got(), want) {
				t.Fatalf("back-off = %v, want %v", sleeps.got(), want)
			}
			if types[0] != "start_session" || types[len(types)-1] != "end_session" {
				t.Fatalf("messages = %v", types)
			}
		})
	}
}

func TestStreamLiveResumeWithRealtimePacing(t *testing.T) {
	audio := audioBytes(6 * 3200)
	rs := newResumeServer(t, 4)
	c, _ := newTestClient(t, rs.URL, WithSleeper(sleepContext))
	start := time.Now()
	if err := c.StreamLive(context.Background(), rs.url(), bytes.NewReader(audio), StreamOptions{Realtime: true}, nil); err != nil {
		t.Fatalf("stream: %v", err)
	}
	got, _, _ := rs.got()
	if !bytes.Equal(got, audio) {
		t.Fatalf("received %d bytes, want %d", len(got), len(audio))
	}
	// 500 ms of pacing plus one back-off step; resent audio is not paced a second time.
	if d := time.Since(start); d < 500*time.Millisecond || d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestStreamLiveResumeGivesUp(t *testing.T) {
	rs := newResumeServer(t, 2)
	rs.refuse = func(n int) int {
		if n > 1 {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	c, sleeps := newTestClient(t, rs.URL)
	err := c.StreamLive(context.Background(), rs.url(), bytes.NewReader(audioBytes(5*3200)), StreamOptions{Reconnects: 4}, nil)
	if err == nil || !strings.Contains(err.Error(), "4 reconnection attempts failed") || strings.Contains(err.Error(), "tok-secret-42") {
		t.Fatalf("err = %v", err)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
	if !slices.Equal(sleeps.got(), want) {
		t.Fatalf("back-off = %v, want %v", sleeps.got(), want)
	}
}

func TestStreamLiveResumeRefusedForGood(t *testing.T) {
	rs := newResumeServer(t, 2)
	rs.refuse = func(n int) int {
		if n > 1 {
			return http.StatusUnauthorized // the token is spent: the session ended
		}
		return 0
	}
	c, sleeps := newTestClient(t, rs.URL)
	err := c.StreamLive(context.Background(), rs.url(), bytes.NewReader(audioBytes(5*3200)), StreamOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), "refused the reconnection with status 401") {
		t.Fatalf("err = %v", err)
	}
	if len(sleeps.got()) != 1 {
		t.Fatalf("attempts = %v", sleeps.got())
	}
}

func TestStreamLiveResumeDisabled(t *testing.T) {
	rs := newResumeServer(t, 2)
	c, _ := newTestClient(t, rs.URL)
	err := c.StreamLive(context.Background(), rs.url(), bytes.NewReader(audioBytes(5*3200)), StreamOptions{Reconnects: -1}, nil)
	if err == nil || !(strings.HasPrefix(err.Error(), "read live message: ") || strings.HasPrefix(err.Error(), "send audio: ")) {
		t.Fatalf("err = %v", err)
	}
	if _, _, conns := rs.got(); conns != 1 {
		t.Fatalf("connections = %d", conns)
	}
}

func TestStreamLiveCannotResumeWithoutAcknowledgments(t *testing.T) {
	rs := newResumeServer(t, 12) // after more than a second of audio
	rs.noAcks = true
	// Each reading of the clock is ten seconds later: seconds of sending without an
	// acknowledgment.
	var mu sync.Mutex
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(10 * time.Second); return now }
	c, _ := newTestClient(t, rs.URL, WithClock(clock))
	err := c.StreamLive(context.Background(), rs.url(), bytes.NewReader(audioBytes(20*3200)), StreamOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), "acknowledged no audio") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamLiveCannotResumePastItsBuffer(t *testing.T) {
	rs := newResumeServer(t, 4)
	rs.noAcks = true
	c, _ := newTestClient(t, rs.URL)
	err := c.StreamLive(context.Background(), rs.url(), bytes.NewReader(audioBytes(6*3200)), StreamOptions{ResumeBuffer: 4000}, nil)
	if err == nil || !strings.Contains(err.Error(), "audio from byte 0 was never acknowledged and is no longer buffered") {
		t.Fatalf("err = %v", err)
	}
}

func TestResumeBufferLetsGoOfAcknowledgedBytes(t *testing.T) {
	s := &liveStream{opts: StreamOptions{ResumeBuffer: 100}}
	s.keep(make([]byte, 60))
	s.onAck(40)
	if s.pendingStart != 40 || len(s.pending) != 20 {
		t.Fatalf("after ack: start %d len %d", s.pendingStart, len(s.pending))
	}
	// An ack may overtake keep (the write returned after the server answered).
	s.onAck(90)
	s.keep(make([]byte, 50))
	if s.pendingStart != 90 || len(s.pending) != 20 || s.read != 110 {
		t.Fatalf("after early ack: start %d len %d read %d", s.pendingStart, len(s.pending), s.read)
	}
	s.keep(make([]byte, 150))
	if s.pendingStart != 160 || len(s.pending) != 100 || s.resumable() == nil {
		t.Fatalf("after overflow: start %d len %d", s.pendingStart, len(s.pending))
	}
}
