package sandbox

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// FuzzAudioChunkData reads audio_chunk data: it never panics, refuses with a reason or gives the
// decoded chunk, and an empty chunk (pipecat's keepalive) is audio of no bytes.
func FuzzAudioChunkData(f *testing.F) {
	for _, s := range []string{`{"chunk":""}`, `{"chunk":"AAAA"}`, `{"chunk":null}`, `{}`, `null`, `{"chunk":3}`, `{"chunk":"@@"}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		chunk, problem := audioChunkData(data)
		if problem != "" {
			if chunk != nil {
				t.Fatalf("refused %q with a chunk", data)
			}
			return
		}
		var d struct {
			Chunk string `json:"chunk"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("accepted %q that does not decode: %v", data, err)
		}
		if want, _ := base64.StdEncoding.DecodeString(d.Chunk); !bytes.Equal(chunk, want) {
			t.Fatalf("chunk %x, want %x", chunk, want)
		}
	})
}

// FuzzAligner streams audio in chunks, then resumes with a resend from one acknowledgment end:
// the aligner must not panic whatever the audio and chunking, and a start it finds before the
// true one may only skip bytes that came again identically (audio that repeats itself, the case
// the aligner cannot tell apart; the sandbox tests show it does not happen for speech-like,
// silent or periodic audio).
func FuzzAligner(f *testing.F) {
	f.Add([]byte("abcdefghijklmnopqrstuvwxyz0123456789"), uint8(5), uint8(3), uint8(2))
	f.Add(bytes.Repeat([]byte{0}, 64), uint8(8), uint8(4), uint8(4))
	f.Fuzz(func(t *testing.T, audio []byte, chunkLen, acked, seen uint8) {
		n := int(chunkLen%16) + 1
		tail := newResumeTail()
		sent := min(len(audio), int(acked)*n)
		for off := 0; off < sent; off += n {
			end := min(off+n, sent)
			tail.add(audio[off:end], ackMark{byteEnd: int64(end)})
		}
		marks := len(tail.marks)
		truth := tail.marks[int(seen)%marks].byteEnd
		a := newAligner(&tail)
		start := ackMark{byteEnd: int64(sent)}
		if a != nil {
			for off := int(truth); off < len(audio); off += n {
				if a.push(audio[off:min(off+n, len(audio))]) {
					break
				}
			}
			start = a.start()
		}
		// The start is an acknowledgment end and the bytes it skips are the resent ones.
		if start.byteEnd < truth {
			skipped := audio[start.byteEnd:sent]
			resent := audio[truth:min(len(audio), int(truth)+len(skipped))]
			if !bytes.Equal(skipped, resent) {
				t.Fatalf("start %d before the resend's %d skips audio that did not come again", start.byteEnd, truth)
			}
		}
	})
}
