package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestDecodeFormats(t *testing.T) {
	type format struct {
		enc  Encoding
		bits int
	}
	formats := []format{{PCM, 8}, {PCM, 16}, {PCM, 24}, {PCM, 32}, {Float, 32}, {Float, 64}, {ALaw, 8}, {ULaw, 8}}
	rates := []int{8000, 16000, 44100, 48000}
	for _, f := range formats {
		for ch := 1; ch <= 8; ch++ {
			for _, rate := range rates {
				for _, ext := range []bool{false, true} {
					name := fmt.Sprintf("%s-%d/%dch/%d/ext=%v", f.enc, f.bits, ch, rate, ext)
					t.Run(name, func(t *testing.T) {
						data, want := interleave(samplesOf(f.enc, f.bits), ch, 11)
						fc := fmtChunk(tagOf(f.enc), ch, rate, ch*f.bits/8, f.bits)
						if ext {
							fc = extFmt(tagOf(f.enc), ch, rate, f.bits, f.bits)
						}
						a, err := DecodeBytes(riff(fc, chunk{"data", data}), Limits{})
						if err != nil {
							t.Fatal(err)
						}
						if a.SampleRate != rate || a.Channels != ch || a.Source.Encoding != f.enc || a.Source.BitDepth != f.bits {
							t.Fatalf("got %d Hz %d ch %s; want %d Hz %d ch %s-%d", a.SampleRate, a.Channels, a.Source, rate, ch, f.enc, f.bits)
						}
						assertSamples(t, a.Samples, want)
						if got, want := a.Seconds(), 11/float64(rate); got != want {
							t.Fatalf("Seconds %v, want %v", got, want)
						}
					})
				}
			}
		}
	}
}

func TestDecodeContainers(t *testing.T) {
	t.Run("24 valid bits in a 32-bit container", func(t *testing.T) {
		data := append(le32(0x40000000), le32(0xFFFFFF00)...)
		a, err := DecodeBytes(riff(extFmt(1, 1, 16000, 32, 24), chunk{"data", data}), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		assertSamples(t, a.Samples, [][]float32{{0.5, -1.0 / (1 << 23)}})
	})
	t.Run("12-bit PCM stored in 16 bits", func(t *testing.T) {
		data := append(le16(0x4000), le16(0xFFF0)...)
		a, err := DecodeBytes(riff(fmtChunk(1, 1, 8000, 2, 12), chunk{"data", data}), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Source.BitDepth != 16 {
			t.Fatalf("bit depth %d, want the 16-bit container", a.Source.BitDepth)
		}
		assertSamples(t, a.Samples, [][]float32{{0.5, -16.0 / 32768}})
	})
}

func TestDecodeChunks(t *testing.T) {
	pcm := fmtChunk(1, 2, 16000, 4, 16)
	data, want := interleave(samplesOf(PCM, 16), 2, 9)
	odd := chunk{"LIST", []byte("INFOISFT\x05\x00\x00\x00lavfx")}
	if len(odd.data) != 17 {
		t.Fatal("the odd chunk must be odd")
	}
	cases := []struct {
		name string
		file []byte
		want [][]float32
	}{
		{"plain", riff(pcm, chunk{"data", data}), want},
		{"chunks before fmt and data", riff(chunk{"JUNK", make([]byte, 28)}, pcm, chunk{"fact", le32(9)}, odd, chunk{"data", data}), want},
		{"odd chunk with its pad byte", riff(pcm, odd, chunk{"data", data}), want},
		{"odd chunk without pad byte", append(append(riff(pcm)[:0:0], riff(pcm)...), append(rawChunk("LIST", 17, odd.data), rawChunk("data", uint32(len(data)), data)...)...), want},
		{"fmt chunk with cbSize", riff(chunk{"fmt ", append(pcm.data, 0, 0)}, chunk{"data", data}), want},
		{"LIST after the data is not audio", riff(pcm, chunk{"data", data}, chunk{"LIST", bytes.Repeat([]byte{0x7f}, 40)}), want},
		{"streamed: size 0 read to EOF", append(riff(pcm), rawChunk("data", 0, data)...), want},
		{"streamed: size 0xFFFFFFFF read to EOF", append(riff(pcm), rawChunk("data", 0xFFFFFFFF, data)...), want},
		{"size larger than the file", append(riff(pcm), rawChunk("data", 1<<30, data)...), want},
		{"truncated final frame dropped", append(riff(pcm), rawChunk("data", uint32(len(data)), data[:len(data)-3])...), trim(want, 8)},
		{"declared size shorter than the bytes", append(riff(pcm), rawChunk("data", 8, data)...), trim(want, 2)},
		{"declared size ends inside a frame", append(riff(pcm), rawChunk("data", 10, data)...), trim(want, 2)},
		{"no samples", riff(pcm, chunk{"data", nil}), [][]float32{nil, nil}},
		{"RF64", append([]byte("RF64"), riff(pcm, chunk{"data", data})[4:]...), want},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DecodeBytes(tc.file, Limits{})
			if err != nil {
				t.Fatalf("%v in %q", err, tc.file)
			}
			assertSamples(t, a.Samples, tc.want)
		})
	}
}

func trim(ch [][]float32, n int) [][]float32 {
	out := make([][]float32, len(ch))
	for c := range ch {
		out[c] = ch[c][:n]
	}
	return out
}

func TestDecodeErrors(t *testing.T) {
	pcm16 := fmtChunk(1, 1, 16000, 2, 16)
	data := chunk{"data", make([]byte, 64)}
	cases := []struct {
		name string
		file []byte
		kind ErrorKind
		msg  string
	}{
		{"empty", nil, ErrNotWAV, "wav: not a RIFF/WAVE file"},
		{"text", []byte("hello, this is not audio at all"), ErrNotWAV, "wav: not a RIFF/WAVE file"},
		{"AVI", append([]byte("RIFF\x00\x00\x00\x00AVI "), make([]byte, 32)...), ErrNotWAV, "wav: not a RIFF/WAVE file"},
		{"RIFX", append([]byte("RIFX\x00\x00\x00\x00WAVE"), make([]byte, 32)...), ErrUnsupported, "wav: big-endian RIFX files are not supported"},
		{"mp3", riff(fmtChunk(0x55, 2, 44100, 1, 0), data), ErrUnsupported, "wav: unsupported format tag 85 (mp3); supported: PCM, IEEE float, A-law, µ-law"},
		{"unknown tag", riff(fmtChunk(0x1234, 1, 16000, 2, 16), data), ErrUnsupported, "wav: unsupported format tag 4660; supported: PCM, IEEE float, A-law, µ-law"},
		{"extensible mp3", riff(extFmt(0x55, 1, 16000, 16, 16), data), ErrUnsupported, "wav: unsupported format tag 85 (mp3); supported: PCM, IEEE float, A-law, µ-law"},
		{"extensible foreign GUID", riff(chunk{"fmt ", append(extFmt(1, 1, 16000, 16, 16).data[:24], bytes.Repeat([]byte{0xAB}, 16)...)}, data), ErrUnsupported, "wav: unsupported WAVE_FORMAT_EXTENSIBLE sub-format {ABABABAB-ABAB-ABAB-ABAB-ABABABABABAB}; supported: PCM, IEEE float, A-law, µ-law"},
		{"extensible too short", riff(chunk{"fmt ", extFmt(1, 1, 16000, 16, 16).data[:18]}, data), ErrMalformed, "wav: WAVE_FORMAT_EXTENSIBLE fmt chunk of 18 bytes; 40 are needed"},
		{"9 channels", riff(fmtChunk(1, 9, 16000, 18, 16), data), ErrUnsupported, "wav: 9 channels; at most 8 are supported"},
		{"0 channels", riff(fmtChunk(1, 0, 16000, 0, 16), data), ErrUnsupported, "wav: 0 channels; at least 1 is needed"},
		{"96 kHz", riff(fmtChunk(1, 1, 96000, 2, 16), data), ErrUnsupported, "wav: sample rate 96000 Hz outside 8000–48000"},
		{"7999 Hz", riff(fmtChunk(1, 1, 7999, 2, 16), data), ErrUnsupported, "wav: sample rate 7999 Hz outside 8000–48000"},
		{"rate 0xFFFFFFFF", riff(fmtChunk(1, 1, -1, 2, 16), data), ErrUnsupported, "wav: sample rate 2147483647 Hz outside 8000–48000"},
		{"40-bit PCM", riff(fmtChunk(1, 1, 16000, 5, 40), data), ErrUnsupported, "wav: 40-bit PCM is not supported; supported: 8, 16, 24, 32 bits"},
		{"0-bit PCM", riff(fmtChunk(1, 1, 16000, 0, 0), data), ErrUnsupported, "wav: 0-bit PCM is not supported; supported: 8, 16, 24, 32 bits"},
		{"16-bit float", riff(fmtChunk(3, 1, 16000, 2, 16), data), ErrUnsupported, "wav: 16-bit IEEE float is not supported; supported: 32, 64 bits"},
		{"16-bit A-law", riff(fmtChunk(6, 1, 16000, 2, 16), data), ErrUnsupported, "wav: 16-bit A-law is not supported; it is 8 bits a sample"},
		{"16-bit µ-law", riff(fmtChunk(7, 1, 16000, 2, 16), data), ErrUnsupported, "wav: 16-bit µ-law is not supported; it is 8 bits a sample"},
		{"block align lies", riff(fmtChunk(1, 2, 16000, 2, 16), data), ErrMalformed, "wav: block align 2 does not match 2 channels of 16 bits (4 bytes)"},
		{"fmt too short", riff(chunk{"fmt ", pcm16.data[:14]}, data), ErrMalformed, "wav: fmt chunk of 14 bytes; at least 16 are needed"},
		{"no fmt", riff(data), ErrMalformed, "wav: data chunk before the fmt chunk"},
		{"only RIFF header", riff(), ErrMalformed, "wav: no fmt chunk"},
		{"no data", riff(pcm16, chunk{"LIST", make([]byte, 10)}), ErrMalformed, "wav: no data chunk"},
		{"truncated fmt", riff(pcm16)[:30], ErrMalformed, "wav: truncated fmt chunk"},
		{"truncated chunk header", append(riff(pcm16), "da"...), ErrMalformed, "wav: no data chunk"},
		{"chunk size beyond the file", append(riff(pcm16), rawChunk("LIST", 1<<20, make([]byte, 10))...), ErrMalformed, "wav: no data chunk"},
		{"two fmt chunks", riff(pcm16, pcm16, data), ErrMalformed, "wav: two fmt chunks"},
		{"huge metadata", append(riff(pcm16), rawChunk("LIST", 0xFFFFFFF0, nil)...), ErrTooLarge, "wav: more than 16 MiB of chunks before the audio data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DecodeBytes(tc.file, Limits{})
			if err == nil {
				t.Fatalf("decoded %d frames, want error %q", a.Frames(), tc.msg)
			}
			if err.Error() != tc.msg {
				t.Fatalf("error %q, want %q", err, tc.msg)
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %q is not %q", err, tc.kind)
			}
		})
	}
}

func TestDecodeLimits(t *testing.T) {
	pcm := fmtChunk(1, 1, 8000, 2, 16)
	twoSeconds := make([]byte, 2*8000*2)
	cases := []struct {
		name   string
		file   []byte
		limits Limits
		msg    string
	}{
		{"bytes", riff(pcm, chunk{"data", twoSeconds}), Limits{MaxDataBytes: 1000}, "wav: audio data exceeds the limit of 1000 bytes"},
		{"duration", riff(pcm, chunk{"data", twoSeconds}), Limits{MaxDuration: time.Second}, "wav: audio longer than the limit of 1s"},
		{"streamed duration", append(riff(pcm), rawChunk("data", 0, twoSeconds)...), Limits{MaxDuration: 1500 * time.Millisecond}, "wav: audio longer than the limit of 1.5s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeBytes(tc.file, tc.limits)
			if err == nil || err.Error() != tc.msg || !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
		})
	}
	t.Run("exactly at the limit", func(t *testing.T) {
		a, err := DecodeBytes(riff(pcm, chunk{"data", twoSeconds}), Limits{MaxDuration: 2 * time.Second, MaxDataBytes: int64(len(twoSeconds))})
		if err != nil || a.Frames() != 16000 || a.Duration() != 2*time.Second {
			t.Fatalf("got %v, %v", a, err)
		}
	})
	t.Run("declared size above the limit, actual data below", func(t *testing.T) {
		file := append(riff(pcm), rawChunk("data", 0x7FFFF000, twoSeconds)...)
		a, err := DecodeBytes(file, Limits{MaxDataBytes: 1 << 20})
		if err != nil || a.Frames() != 16000 {
			t.Fatalf("got %v, %v", a, err)
		}
	})
}

// A header that claims gigabytes must not make the decoder allocate them.
func TestDecodeLyingSizeAllocation(t *testing.T) {
	file := append(riff(fmtChunk(6, 8, 48000, 8, 8)), rawChunk("data", 0xFFFFFFF0, make([]byte, 64))...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := DecodeBytes(file, Limits{})
	runtime.ReadMemStats(&after)
	if err != nil || a.Frames() != 8 {
		t.Fatalf("got %v, %v", a, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("allocated %d bytes for a 100-byte file", alloc)
	}
}

type errReader struct{ r io.Reader }

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset")
	}
	return n, err
}

func TestDecodeReaderError(t *testing.T) {
	file := append(riff(fmtChunk(1, 1, 8000, 2, 16)), rawChunk("data", 1000, make([]byte, 10))...)
	_, err := Decode(errReader{bytes.NewReader(file)}, Limits{})
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("error %v, want the reader's error wrapped", err)
	}
}

// Decode must stop at the end of the data chunk: the reader may be a network body.
func TestDecodeDoesNotReadPastData(t *testing.T) {
	file := riff(fmtChunk(1, 1, 8000, 2, 16), chunk{"data", make([]byte, 200_000)})
	r := io.MultiReader(bytes.NewReader(file), errReader{strings.NewReader("")})
	if _, err := Decode(r, Limits{}); err != nil {
		t.Fatal(err)
	}
}

func TestParseHeader(t *testing.T) {
	file := riff(chunk{"LIST", make([]byte, 5)}, fmtChunk(7, 2, 8000, 2, 8), chunk{"data", make([]byte, 20)})
	h, err := ParseHeader(file)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{Format: Format{Encoding: ULaw, BitDepth: 8, SampleRate: 8000, Channels: 2}, DataOffset: 12 + 8 + 6 + 8 + 16 + 8, DataSize: 20}
	if h != want {
		t.Fatalf("got %+v, want %+v", h, want)
	}
	for i := range int(want.DataOffset) {
		if _, err := ParseHeader(file[:i]); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("prefix of %d bytes: %v, want an incomplete-header error", i, err)
		}
	}
}

func TestEncode16RoundTrip(t *testing.T) {
	in := [][]float32{sine(440, 0.8, 22050, 0.1), sine(1000, 0.3, 22050, 0.1)}
	in[0][3], in[1][5] = 1.7, -2 // clamped
	var buf bytes.Buffer
	if err := Encode16(&buf, in, 22050); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 44+len(in[0])*4 {
		t.Fatalf("file of %d bytes", buf.Len())
	}
	a, err := DecodeBytes(buf.Bytes(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if a.SampleRate != 22050 || a.Channels != 2 || a.Frames() != len(in[0]) {
		t.Fatalf("got %d Hz %d ch %d frames", a.SampleRate, a.Channels, a.Frames())
	}
	for c := range in {
		for i, v := range in[c] {
			v = max(-1, min(v, 32767.0/32768))
			if d := a.Samples[c][i] - v; d > 0.5/32768 || d < -0.5/32768 {
				t.Fatalf("channel %d sample %d: %v, want %v", c, i, a.Samples[c][i], v)
			}
		}
	}
	for _, bad := range [][][]float32{nil, {{1}, {1, 2}}, make([][]float32, 9)} {
		if err := Encode16(io.Discard, bad, 16000); err == nil {
			t.Fatalf("Encode16 accepted %d channels of lengths that differ", len(bad))
		}
	}
}

// A recording longer than the 32-bit sizes hold gets the placeholder sizes of streamed WAVs;
// one that fits gets its own.
func TestHeader16Sizes(t *testing.T) {
	for _, tc := range []struct {
		data       int64
		riff, size uint32
	}{
		{data: 32000, riff: 36 + 32000, size: 32000},
		{data: 0xFFFFFFFF - 36, riff: 0xFFFFFFFF, size: 0xFFFFFFFF - 36},
		{data: 0xFFFFFFFF - 35, riff: 0xFFFFFFFF, size: 0xFFFFFFFF},
	} {
		h := Header16(2, 48000, tc.data)
		le := binary.LittleEndian
		if len(h) != 44 || le.Uint32(h[4:]) != tc.riff || le.Uint32(h[40:]) != tc.size || le.Uint32(h[28:]) != 48000*2*2 {
			t.Errorf("%d bytes of data: RIFF size %d, data size %d, byte rate %d; want %d and %d",
				tc.data, le.Uint32(h[4:]), le.Uint32(h[40:]), le.Uint32(h[28:]), tc.riff, tc.size)
		}
	}
}
