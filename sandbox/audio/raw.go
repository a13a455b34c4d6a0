package audio

import (
	"bytes"
	"fmt"
)

// rawFormat builds and checks the format of headerless audio. G.711 is 8 bits a sample
// whatever bitDepth says: the service's default bit_depth (16) also applies to sessions that
// only set encoding wav/alaw or wav/ulaw, and those must work.
func rawFormat(enc Encoding, bitDepth, sampleRate, channels int) (Format, error) {
	if enc == ALaw || enc == ULaw {
		bitDepth = 8
	}
	f := Format{Encoding: enc, BitDepth: bitDepth, SampleRate: sampleRate, Channels: channels}
	return f, f.validate("audio")
}

// DecodeRaw decodes headerless interleaved samples: wav/pcm (8-bit unsigned with bias 128,
// 16/24/32-bit signed, little-endian), wav/alaw, wav/ulaw; Float is accepted too. A trailing
// partial frame is dropped. It does not look for a WAV header; see StripWAVHeader.
func DecodeRaw(data []byte, enc Encoding, bitDepth, sampleRate, channels int) (*Audio, error) {
	f, err := rawFormat(enc, bitDepth, sampleRate, channels)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, channels)
	f.appendFrames(out, data)
	return &Audio{Samples: out, SampleRate: sampleRate, Channels: channels, Source: f}, nil
}

// HasWAVHeader reports whether b starts like a RIFF/WAVE file. It needs the first 12 bytes.
func HasWAVHeader(b []byte) bool {
	return len(b) >= 12 && (string(b[:4]) == "RIFF" || string(b[:4]) == "RF64") && string(b[8:12]) == "WAVE"
}

// StripWAVHeader removes a WAV header from the start of b, as live streams may carry one. When
// b does not start with "RIFF" or "RF64" it returns b unchanged and a nil header. Otherwise it
// returns the bytes after the header, limited to the declared data size when that is known,
// and the header; an error wrapping io.ErrUnexpectedEOF means b ends inside the header.
func StripWAVHeader(b []byte) ([]byte, *Header, error) {
	if len(b) < 4 || (!bytes.HasPrefix(b, []byte("RIFF")) && !bytes.HasPrefix(b, []byte("RF64"))) {
		return b, nil, nil
	}
	h, err := ParseHeader(b)
	if err != nil {
		return nil, nil, err
	}
	body := b[min(h.DataOffset, int64(len(b))):]
	if h.DataSize >= 0 && h.DataSize < int64(len(body)) {
		body = body[:h.DataSize]
	}
	return body, &h, nil
}

// matches checks a header found in a live stream against the session's format.
func (f Format) matches(h Format) error {
	if f == h {
		return nil
	}
	return newError(ErrFormatMismatch, fmt.Sprintf("audio: the WAV header says %s, but the session is %s", h, f))
}
