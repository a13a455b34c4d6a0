package audio

import (
	"encoding/binary"
	"math"
	"testing"
)

// The tests build their WAV files byte by byte rather than with Encode16, so that the decoder
// is checked against the format and not against our own writer.

type chunk struct {
	id   string
	data []byte
}

// riff assembles a RIFF/WAVE file, padding odd chunks as the format requires.
func riff(chunks ...chunk) []byte {
	var body []byte
	body = append(body, "WAVE"...)
	for _, c := range chunks {
		body = append(body, c.id...)
		body = binary.LittleEndian.AppendUint32(body, uint32(len(c.data)))
		body = append(body, c.data...)
		if len(c.data)%2 == 1 {
			body = append(body, 0)
		}
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...)
	return append(out, body...)
}

// rawChunk is a chunk whose declared size is given explicitly (lying headers).
func rawChunk(id string, size uint32, data []byte) []byte {
	b := append([]byte(id), binary.LittleEndian.AppendUint32(nil, size)...)
	return append(b, data...)
}

func fmtChunk(tag, channels, rate, align, bits int) chunk {
	le := binary.LittleEndian
	b := le.AppendUint16(nil, uint16(tag))
	b = le.AppendUint16(b, uint16(channels))
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*align))
	b = le.AppendUint16(b, uint16(align))
	b = le.AppendUint16(b, uint16(bits))
	return chunk{"fmt ", b}
}

// extFmt is a WAVE_FORMAT_EXTENSIBLE fmt chunk whose sub-format GUID carries subTag.
func extFmt(subTag, channels, rate, containerBits, validBits int) chunk {
	le := binary.LittleEndian
	align := channels * containerBits / 8
	b := fmtChunk(0xFFFE, channels, rate, align, containerBits).data
	b = le.AppendUint16(b, 22)
	b = le.AppendUint16(b, uint16(validBits))
	b = le.AppendUint32(b, 0)
	b = le.AppendUint16(b, uint16(subTag))
	b = append(b, baseGUIDTail...)
	return chunk{"fmt ", b}
}

// sampleCase is one stored sample and the value it must decode to.
type sampleCase struct {
	raw  []byte
	want float32
}

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func lef32(v float32) []byte {
	return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
}
func lef64(v float64) []byte {
	return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
}

// Reference values: PCM by definition, G.711 from the ITU tables (µ-law 0x80 → 32124,
// A-law 0xAA → 32256, A-law 0x80 → 5504...).
func samplesOf(enc Encoding, bits int) []sampleCase {
	switch {
	case enc == PCM && bits == 8:
		return []sampleCase{{[]byte{0x80}, 0}, {[]byte{0x00}, -1}, {[]byte{0xFF}, 127.0 / 128}, {[]byte{0xC0}, 0.5}, {[]byte{0x40}, -0.5}}
	case enc == PCM && bits == 16:
		return []sampleCase{{le16(0), 0}, {le16(0x4000), 0.5}, {le16(0x8000), -1}, {le16(0x7FFF), 32767.0 / 32768}, {le16(0xFFFF), -1.0 / 32768}}
	case enc == PCM && bits == 24:
		return []sampleCase{{[]byte{0, 0, 0x40}, 0.5}, {[]byte{0, 0, 0x80}, -1}, {[]byte{0xFF, 0xFF, 0x7F}, 8388607.0 / 8388608}, {[]byte{0xFF, 0xFF, 0xFF}, -1.0 / 8388608}, {[]byte{0, 0, 0}, 0}}
	case enc == PCM && bits == 32:
		return []sampleCase{{le32(0x40000000), 0.5}, {le32(0x80000000), -1}, {le32(0xFFFFFFFF), float32(-1.0 / (1 << 31))}, {le32(0), 0}, {le32(0x00010000), 1.0 / (1 << 15)}}
	case enc == Float && bits == 32:
		return []sampleCase{{lef32(0.25), 0.25}, {lef32(-0.75), -0.75}, {lef32(1.5), 1}, {lef32(float32(math.NaN())), 0}, {lef32(float32(math.Inf(-1))), -1}}
	case enc == Float && bits == 64:
		return []sampleCase{{lef64(0.25), 0.25}, {lef64(-0.75), -0.75}, {lef64(3), 1}, {lef64(math.NaN()), 0}, {lef64(math.Inf(1)), 1}}
	case enc == ULaw:
		return []sampleCase{{[]byte{0xFF}, 0}, {[]byte{0x00}, -32124.0 / 32768}, {[]byte{0x80}, 32124.0 / 32768}, {[]byte{0x7F}, 0}, {[]byte{0xF0}, 120.0 / 32768}}
	case enc == ALaw:
		return []sampleCase{{[]byte{0xD5}, 8.0 / 32768}, {[]byte{0x55}, -8.0 / 32768}, {[]byte{0xAA}, 32256.0 / 32768}, {[]byte{0x2A}, -32256.0 / 32768}, {[]byte{0x80}, 5504.0 / 32768}, {[]byte{0x00}, -5504.0 / 32768}}
	}
	panic("no reference samples")
}

// interleave builds frames of data from the reference samples and the per-channel values they
// must decode to. The pattern differs per channel so that a channel mix-up shows.
func interleave(cases []sampleCase, channels, frames int) ([]byte, [][]float32) {
	var data []byte
	want := make([][]float32, channels)
	for i := range frames {
		for c := range channels {
			sc := cases[(i*7+c*3)%len(cases)]
			data = append(data, sc.raw...)
			want[c] = append(want[c], sc.want)
		}
	}
	return data, want
}

func assertSamples(t *testing.T, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d channels, want %d", len(got), len(want))
	}
	for c := range want {
		if len(got[c]) != len(want[c]) {
			t.Fatalf("channel %d: got %d samples, want %d", c, len(got[c]), len(want[c]))
		}
		for i := range want[c] {
			if got[c][i] != want[c][i] {
				t.Fatalf("channel %d sample %d: got %v, want %v", c, i, got[c][i], want[c][i])
			}
		}
	}
}

func tagOf(enc Encoding) int {
	switch enc {
	case PCM:
		return 1
	case Float:
		return 3
	case ALaw:
		return 6
	case ULaw:
		return 7
	}
	return 0
}

// sine is a tone of the given frequency and amplitude.
func sine(freq, amp float64, rate int, seconds float64) []float32 {
	n := int(seconds * float64(rate))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return out
}
