package audio

import (
	"errors"
	"fmt"
)

// maxLiveHeader bounds the bytes held while a WAV header at the start of a live stream is
// parsed, so a client cannot make the server buffer without end by sending "RIFF" and a huge
// chunk.
const maxLiveHeader = 64 << 10

// StreamDecoder decodes live audio sent in chunks: raw samples in the session's encoding,
// optionally preceded by a WAV header. Chunks need not end on frame boundaries: the bytes of a
// partial frame are kept for the next chunk, so the samples do not depend on how the stream
// was cut. A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	f       Format
	settled bool   // whether the question of a WAV header is settled
	head    []byte // bytes held until it is
	rem     []byte // partial frame carried to the next chunk
	frames  int64
	err     error
}

// NewStreamDecoder prepares a decoder for the session's format. For wav/alaw and wav/ulaw
// bitDepth is ignored (they are 8-bit).
func NewStreamDecoder(enc Encoding, bitDepth, sampleRate, channels int) (*StreamDecoder, error) {
	f, err := rawFormat(enc, bitDepth, sampleRate, channels)
	if err != nil {
		return nil, err
	}
	return &StreamDecoder{f: f}, nil
}

// Format is the format the decoder expects.
func (d *StreamDecoder) Format() Format { return d.f }

// Frames is the number of frames (samples a channel) returned so far.
func (d *StreamDecoder) Frames() int64 { return d.frames }

// Seconds is the length of the audio returned so far.
func (d *StreamDecoder) Seconds() float64 { return float64(d.frames) / float64(d.f.SampleRate) }

// Pending is the number of bytes held back: a partial frame, or the start of a stream that may
// be a WAV header. They are dropped if the stream ends there.
func (d *StreamDecoder) Pending() int { return len(d.rem) + len(d.head) }

// Write decodes the next chunk and returns its complete frames, one slice a channel (empty
// slices when the chunk completed no frame). A WAV header at the very start of the stream is
// skipped when it matches the session's format; one that does not match is an error
// (ErrFormatMismatch) rather than a guess. After an error every Write returns that error.
func (d *StreamDecoder) Write(chunk []byte) ([][]float32, error) {
	if d.err != nil {
		return nil, d.err
	}
	out := make([][]float32, d.f.Channels)
	data := chunk
	if !d.settled {
		var err error
		if data, err = d.header(chunk); err != nil {
			d.err = err
			return nil, err
		}
	}
	n0 := 0
	if len(out) > 0 {
		n0 = len(out[0])
	}
	block := d.f.FrameSize()
	if len(d.rem) > 0 {
		take := min(block-len(d.rem), len(data))
		d.rem = append(d.rem, data[:take]...)
		data = data[take:]
		if len(d.rem) == block {
			d.f.appendFrames(out, d.rem)
			d.rem = d.rem[:0]
		}
	}
	used := d.f.appendFrames(out, data)
	d.rem = append(d.rem, data[used:]...)
	d.frames += int64(len(out[0]) - n0)
	return out, nil
}

// header holds the start of the stream until it is clear whether it is a WAV header, and
// returns the audio bytes that follow once it is (none while undecided).
func (d *StreamDecoder) header(chunk []byte) ([]byte, error) {
	d.head = append(d.head, chunk...)
	h := d.head
	if len(h) < 4 {
		if isPrefix(h, "RIFF") || isPrefix(h, "RF64") {
			return nil, nil
		}
		return d.settle(h), nil
	}
	if string(h[:4]) != "RIFF" && string(h[:4]) != "RF64" {
		return d.settle(h), nil
	}
	hdr, err := ParseHeader(h)
	switch {
	case err == nil:
	case errIncomplete(err) && len(h) <= maxLiveHeader:
		return nil, nil
	case errIncomplete(err):
		return nil, newError(ErrMalformed, fmt.Sprintf("audio: WAV header at the start of the stream is longer than %d KiB", maxLiveHeader>>10))
	case errors.Is(err, ErrNotWAV):
		// "RIFF" that is not followed by WAVE is not a header: take it as samples.
		return d.settle(h), nil
	default:
		return nil, err
	}
	if err := d.f.matches(hdr.Format); err != nil {
		return nil, err
	}
	return d.settle(h[hdr.DataOffset:]), nil
}

func (d *StreamDecoder) settle(data []byte) []byte {
	d.settled = true
	d.head = nil
	return data
}

func isPrefix(b []byte, s string) bool { return len(b) <= len(s) && string(b) == s[:len(b)] }
