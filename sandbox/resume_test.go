package sandbox_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
)

const chunk = 3200 // 100 ms of 16 kHz 16-bit mono, the SDKs' chunk

// noisePCM is n bytes of 16-bit noise: audio that never repeats itself, as recorded speech.
func noisePCM(n int) []byte {
	r := rand.New(rand.NewPCG(27, 27))
	b := make([]byte, n)
	for i := 0; i < n; i += 2 {
		binary.LittleEndian.PutUint16(b[i:], uint16(r.IntN(8000)-4000))
	}
	return b
}

// tonePCM is n bytes of a 250 Hz tone, which repeats every 64 samples (128 bytes).
func tonePCM(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 2 {
		v := 8000 * math.Sin(2*math.Pi*float64(i/2%64)/64)
		binary.LittleEndian.PutUint16(b[i:], uint16(int16(v)))
	}
	return b
}

// TestLiveResumeCountsEachByteOnce drops the first socket after every chunk it sent was
// acknowledged, and resends, as the SDKs do, from the end of the last acknowledgment the client
// "saw" (the others were lost with the socket), then streams on and stops. Every byte must be
// counted once: the second socket first acknowledges again, in one range, what the session
// already had, then goes on from there; the recording is the audio, once.
func TestLiveResumeCountsEachByteOnce(t *testing.T) {
	silence := make([]byte, 48000)
	cases := []struct {
		name  string
		audio []byte // everything the client streams, 1.5 s
		first int    // bytes sent and acknowledged on the first socket
		seen  int    // where the client's resend starts
		// The first acknowledgment on the second socket and the end of the last; the recording
		// is audio[:end] when end is len(audio).
		wantFirst string
		wantEnd   int
	}{
		{"three acks lost", noisePCM(48000), 32000, 22400,
			`{"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[22400,32000],"time_range":[0.7,1]}}`, 48000},
		{"every ack lost", noisePCM(48000), 32000, 0,
			`{"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[0,32000],"time_range":[0,1]}}`, 48000},
		{"no ack lost", noisePCM(48000), 32000, 32000,
			`{"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[32000,35200],"time_range":[1,1.1]}}`, 48000},
		{"one ack lost", noisePCM(48000), 32000, 28800,
			`{"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[28800,32000],"time_range":[0.9,1]}}`, 48000},
		// Silence and a tone would prove a resend that is not there: new audio that continues
		// them is never taken for a resend.
		{"silence, no ack lost", silence, 32000, 32000,
			`{"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[32000,35200],"time_range":[1,1.1]}}`, 48000},
		{"tone, no ack lost", tonePCM(48000), 32000, 32000,
			`{"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[32000,35200],"time_range":[1,1.1]}}`, 48000},
		// The price: a resend of silence is counted twice (the SDKs trim nothing they still hold
		// by acknowledgments of what they sent again, so the ranges stay contiguous for them).
		{"silence, three acks lost", silence, 32000, 22400,
			`{"type":"audio_chunk","acknowledged":true,"error":null,"data":{"byte_range":[32000,41600],"time_range":[1,1.3]}}`, 48000 + 9600},
	}
	e := newEnv(t, func(c *sandboxConfig) { c.TempDir = t.TempDir(); c.LiveResumeWindow = time.Hour })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			created, first := openLive(t, ctx, e)
			for off := 0; off < tc.first; off += chunk {
				if err := first.Write(ctx, websocket.MessageBinary, tc.audio[off:off+chunk]); err != nil {
					t.Fatal(err)
				}
				nextOfType(t, ctx, first, "audio_chunk")
			}
			_ = first.CloseNow() // the network drops: no close frame

			second := reconnect(t, ctx, created.URL)
			send := func(b []byte) {
				if err := second.Write(ctx, websocket.MessageBinary, b); err != nil {
					t.Fatal(err)
				}
			}
			if tc.seen < tc.first {
				send(tc.audio[tc.seen:tc.first]) // the SDKs' resend: the buffer, in one frame
			}
			for off := tc.first; off < len(tc.audio); off += chunk {
				send(tc.audio[off : off+chunk])
			}
			if err := second.Write(ctx, websocket.MessageText, []byte(`{"type":"stop_recording"}`)); err != nil {
				t.Fatal(err)
			}
			msgs, err := readUntilClose(t, ctx, second)
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("close = %v", err)
			}
			checkResumedAcks(t, msgs, tc.wantFirst, tc.wantEnd)
			job := e.waitJob(created.ID, api.KindLive)
			seconds := float64(tc.wantEnd) / 32000
			if d := apitest.MustResult(&job).Metadata.AudioDuration; d != seconds {
				t.Errorf("audio_duration %v, want %v", d, seconds)
			}
			_, wav, _ := getFile(t, e, "/v2/live/"+created.ID+"/file")
			if len(wav) != 44+tc.wantEnd || tc.wantEnd == len(tc.audio) && !bytes.Equal(wav[44:], tc.audio) {
				t.Errorf("recording of %d bytes, want 44 + %d, the audio once", len(wav), tc.wantEnd)
			}
		})
	}
}

// reconnect dials the session's URL again, as soon as the session has noticed the drop.
func reconnect(t *testing.T, ctx context.Context, url string) *websocket.Conn {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err == nil {
			t.Cleanup(func() { _ = c.CloseNow() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("reconnect: %v", err)
		}
	}
}

// checkResumedAcks checks the acknowledgments of the second socket: the first exactly, then
// ranges contiguous with it up to end, and a stop_recording of end bytes.
func checkResumedAcks(t *testing.T, msgs []api.LiveMessage, wantFirst string, end int) {
	t.Helper()
	at := int64(-1)
	n := 0
	for _, m := range msgs {
		switch m.Type {
		case api.MessageAudioChunk:
			b := testjsonMarshal(t, m)
			if n == 0 {
				if got, want := wireJSON(t, b), canonicalJSON(t, wantFirst); got != want {
					t.Errorf("first ack after the resume\n got %s\nwant %s", got, want)
				}
			}
			n++
			var d api.AudioChunkAckData
			if err := m.DecodeData(&d); err != nil || at >= 0 && d.ByteRange[0] != at {
				t.Fatalf("ack %d %s: not contiguous from %d", n, m.Data, at)
			}
			at = d.ByteRange[1]
		case api.MessageStopRecording:
			var d api.StopRecordingAckData
			_ = m.DecodeData(&d)
			if want := float64(end) / 32000; d.RecordingDuration != want {
				t.Errorf("recording_duration %v, want %v", d.RecordingDuration, want)
			}
		}
	}
	if at != int64(end) {
		t.Errorf("acknowledgments end at %d, want %d", at, end)
	}
}

func testjsonMarshal(t *testing.T, m api.LiveMessage) []byte {
	t.Helper()
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(fmt.Errorf("encode message: %w", err))
	}
	return b
}
