package audio

import (
	"bytes"
	"math"
	"testing"
)

// seedFiles are valid, odd and broken files for the fuzzers to start from.
func seedFiles() [][]byte {
	var seeds [][]byte
	for _, f := range []struct {
		enc  Encoding
		bits int
	}{{PCM, 8}, {PCM, 16}, {PCM, 24}, {PCM, 32}, {Float, 32}, {Float, 64}, {ALaw, 8}, {ULaw, 8}} {
		data, _ := interleave(samplesOf(f.enc, f.bits), 2, 5)
		seeds = append(seeds,
			riff(fmtChunk(tagOf(f.enc), 2, 16000, 2*f.bits/8, f.bits), chunk{"data", data}),
			riff(extFmt(tagOf(f.enc), 2, 44100, f.bits, f.bits), chunk{"LIST", []byte("odd")}, chunk{"data", data}))
	}
	pcm := fmtChunk(1, 1, 8000, 2, 16)
	seeds = append(seeds,
		append(riff(pcm), rawChunk("data", 0, make([]byte, 9))...),
		append(riff(pcm), rawChunk("data", 0xFFFFFFFF, make([]byte, 9))...),
		append(riff(pcm), rawChunk("data", 1000, make([]byte, 9))...),
		append(riff(pcm), rawChunk("data", 4, make([]byte, 9))...),
		append(riff(pcm), rawChunk("LIST", 3, []byte("abcdata"))...),
		riff(fmtChunk(0x55, 2, 44100, 1, 0), chunk{"data", nil}),
		riff(fmtChunk(1, 9, 96000, 18, 16), chunk{"data", nil}),
		riff(pcm)[:30],
		[]byte("RIFF"),
		nil,
	)
	return seeds
}

func FuzzDecode(f *testing.F) {
	for _, s := range seedFiles() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		a, err := DecodeBytes(file, Limits{MaxDataBytes: 1 << 20})
		h, herr := ParseHeader(file)
		if err != nil {
			if herr == nil {
				t.Fatalf("header %+v parses but Decode fails: %v", h, err)
			}
			return
		}
		if herr != nil {
			t.Fatalf("Decode succeeds but the header does not parse: %v", herr)
		}
		if a.Source != h.Format || a.Channels != h.Format.Channels || a.SampleRate != h.Format.SampleRate || len(a.Samples) != a.Channels {
			t.Fatalf("audio %d Hz %d ch (%d slices) %s, header %s", a.SampleRate, a.Channels, len(a.Samples), a.Source, h.Format)
		}
		// The sample count follows from the header and the bytes present.
		avail := int64(len(file)) - h.DataOffset
		n := avail
		if h.DataSize >= 0 {
			n = min(h.DataSize, avail)
		}
		frames := int(n / int64(h.Format.FrameSize()))
		for c, s := range a.Samples {
			if len(s) != frames {
				t.Fatalf("channel %d has %d samples; the header and %d data bytes make %d", c, len(s), n, frames)
			}
			for i, v := range s {
				if !(v >= -1 && v <= 1) || math.IsNaN(float64(v)) {
					t.Fatalf("channel %d sample %d = %v", c, i, v)
				}
			}
		}
		// The WAV path and the raw path agree.
		body := file[h.DataOffset : h.DataOffset+n]
		raw, err := DecodeRaw(body, h.Format.Encoding, h.Format.BitDepth, h.Format.SampleRate, h.Format.Channels)
		if err != nil {
			t.Fatal(err)
		}
		for c := range raw.Samples {
			if !equalBits(raw.Samples[c], a.Samples[c]) {
				t.Fatalf("channel %d: DecodeRaw and Decode disagree", c)
			}
		}
	})
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// FuzzStreamDecoder checks that a live stream decodes the same in one write or in three.
func FuzzStreamDecoder(f *testing.F) {
	for i, s := range seedFiles() {
		f.Add(s, uint16(i*7), uint16(i*13), uint8(i))
	}
	f.Add([]byte("RIFF\x00\x00"), uint16(2), uint16(3), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16, layout uint8) {
		encs := []Encoding{PCM, PCM, PCM, PCM, ALaw, ULaw}
		bits := []int{8, 16, 24, 32, 8, 8}
		k := int(layout) % len(encs)
		ch := int(layout)/len(encs)%MaxChannels + 1
		whole, err := NewStreamDecoder(encs[k], bits[k], 16000, ch)
		if err != nil {
			t.Fatal(err)
		}
		want, werr := whole.Write(data)
		a := min(int(cut1), len(data))
		b := min(a+int(cut2), len(data))
		parts, _ := NewStreamDecoder(encs[k], bits[k], 16000, ch)
		got := make([][]float32, ch)
		var gerr error
		for _, p := range [][]byte{data[:a], data[a:b], data[b:]} {
			fr, err := parts.Write(p)
			if err != nil {
				gerr = err
				break
			}
			for c := range fr {
				got[c] = append(got[c], fr[c]...)
			}
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("one write: %v; three writes: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		for c := range want {
			if !equalBits(want[c], got[c]) {
				t.Fatalf("channel %d: %d samples in one write, %d in three", c, len(want[c]), len(got[c]))
			}
		}
		if whole.Frames() != parts.Frames() || whole.Pending() != parts.Pending() {
			t.Fatalf("frames %d/%d pending %d/%d", whole.Frames(), parts.Frames(), whole.Pending(), parts.Pending())
		}
	})
}

// FuzzResampler checks that arbitrary chunking gives the batch result and that the output
// stays finite and bounded.
func FuzzResampler(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 100}, uint16(44100), uint16(7))
	f.Add(bytes.Repeat([]byte{0x7f, 0x80}, 300), uint16(8000), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, rate, chunk uint16) {
		// The common rates: a rate whose ratio to 16 kHz has no small terms takes ~10 ms to
		// build its filter bank, too slow to fuzz; TestResamplePassband and
		// TestResamplerChunking cover those.
		rates := []int{8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000}
		from := rates[int(rate)%len(rates)]
		x := make([]float32, len(data))
		for i, b := range data {
			x[i] = float32(int(b)-128) / 128
		}
		want, err := Resample(x, from, 16000)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := NewResampler(from, 16000)
		step := int(chunk)%97 + 1
		var got []float32
		for i := 0; i < len(x); i += step {
			got = append(got, r.Process(x[i:min(i+step, len(x))])...)
		}
		got = append(got, r.Flush()...)
		if !equalBits(got, want) {
			t.Fatalf("chunked output differs: %d vs %d samples", len(got), len(want))
		}
		for _, v := range want {
			if !(math.Abs(float64(v)) < 2) {
				t.Fatalf("sample %v", v)
			}
		}
	})
}
