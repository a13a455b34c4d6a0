package audio

import (
	"errors"
	"fmt"
	"testing"
)

func TestDecodeRaw(t *testing.T) {
	cases := []struct {
		enc      Encoding
		bits     int // as given; ignored for G.711
		realBits int
	}{{PCM, 8, 8}, {PCM, 16, 16}, {PCM, 24, 24}, {PCM, 32, 32}, {ALaw, 16, 8}, {ULaw, 8, 8}, {ULaw, 0, 8}}
	for _, tc := range cases {
		for _, ch := range []int{1, 2, 8} {
			t.Run(fmt.Sprintf("%s-%d/%dch", tc.enc, tc.bits, ch), func(t *testing.T) {
				data, want := interleave(samplesOf(tc.enc, tc.realBits), ch, 13)
				if frame := ch * tc.realBits / 8; frame > 1 {
					data = append(data, make([]byte, frame-1)...) // a partial frame, dropped
				}
				a, err := DecodeRaw(data, tc.enc, tc.bits, 16000, ch)
				if err != nil {
					t.Fatal(err)
				}
				assertSamples(t, a.Samples, want)
			})
		}
	}
	errs := []struct {
		enc            Encoding
		bits, rate, ch int
		msg            string
	}{
		{"wav/mp3", 16, 16000, 1, `audio: unsupported encoding "wav/mp3"; supported: wav/pcm, wav/alaw, wav/ulaw`},
		{PCM, 12, 16000, 1, "audio: 12-bit PCM is not supported; supported: 8, 16, 24, 32 bits"},
		{PCM, 16, 96000, 1, "audio: sample rate 96000 Hz outside 8000–48000"},
		{PCM, 16, 16000, 9, "audio: 9 channels; at most 8 are supported"},
		{PCM, 16, 16000, 0, "audio: 0 channels; at least 1 is needed"},
	}
	for _, e := range errs {
		_, err := DecodeRaw(make([]byte, 10), e.enc, e.bits, e.rate, e.ch)
		if err == nil || err.Error() != e.msg || !errors.Is(err, ErrUnsupported) {
			t.Errorf("error %v, want %q", err, e.msg)
		}
		if _, err := NewStreamDecoder(e.enc, e.bits, e.rate, e.ch); err == nil || err.Error() != e.msg {
			t.Errorf("stream: error %v, want %q", err, e.msg)
		}
	}
}

func TestStripWAVHeader(t *testing.T) {
	data, _ := interleave(samplesOf(PCM, 16), 1, 5)
	file := riff(fmtChunk(1, 1, 16000, 2, 16), chunk{"data", data}, chunk{"LIST", make([]byte, 4)})
	body, h, err := StripWAVHeader(file)
	if err != nil || h == nil || string(body) != string(data) {
		t.Fatalf("got %q, %+v, %v", body, h, err)
	}
	if !HasWAVHeader(file) || HasWAVHeader(data) || HasWAVHeader(file[:11]) {
		t.Fatal("HasWAVHeader")
	}
	body, h, err = StripWAVHeader(data)
	if err != nil || h != nil || string(body) != string(data) {
		t.Fatalf("raw: got %q, %+v, %v", body, h, err)
	}
	if _, _, err := StripWAVHeader(file[:30]); err == nil {
		t.Fatal("a cut header must be an error")
	}
}

// split cuts b into pieces of the given sizes, repeated.
func split(b []byte, sizes ...int) [][]byte {
	var out [][]byte
	for i := 0; len(b) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func feed(t *testing.T, d *StreamDecoder, chunks [][]byte) [][]float32 {
	t.Helper()
	all := make([][]float32, d.Format().Channels)
	for _, c := range chunks {
		fr, err := d.Write(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(fr) != len(all) {
			t.Fatalf("Write returned %d channels", len(fr))
		}
		for ch := range fr {
			if len(fr[ch]) != len(fr[0]) {
				t.Fatal("channels of different lengths")
			}
			all[ch] = append(all[ch], fr[ch]...)
		}
	}
	return all
}

func TestStreamDecoderChunking(t *testing.T) {
	for _, tc := range []struct {
		enc  Encoding
		bits int
		ch   int
	}{{PCM, 16, 1}, {PCM, 24, 2}, {PCM, 32, 3}, {PCM, 8, 5}, {ULaw, 16, 2}, {ALaw, 8, 8}} {
		data, want := interleave(samplesOf(tc.enc, max(8, tc.bits*btoi(tc.enc == PCM))), tc.ch, 301)
		header := riff(chunk{"LIST", []byte("odd")}, fmtChunk(tagOf(tc.enc), tc.ch, 44100, tc.ch*max(8, tc.bits*btoi(tc.enc == PCM))/8, max(8, tc.bits*btoi(tc.enc == PCM))))
		header = append(header, rawChunk("data", 0xFFFFFFFF, nil)...)
		for _, withHeader := range []bool{false, true} {
			in := data
			if withHeader {
				in = append(append([]byte(nil), header...), data...)
			}
			for _, sizes := range [][]int{{len(in)}, {1}, {2, 3}, {7}, {37, 100, 5}, {4410}} {
				t.Run(fmt.Sprintf("%s-%d/%dch/header=%v/%v", tc.enc, tc.bits, tc.ch, withHeader, sizes), func(t *testing.T) {
					d, err := NewStreamDecoder(tc.enc, tc.bits, 44100, tc.ch)
					if err != nil {
						t.Fatal(err)
					}
					got := feed(t, d, split(in, sizes...))
					assertSamples(t, got, want)
					if d.Frames() != 301 || d.Pending() != 0 {
						t.Fatalf("frames %d pending %d", d.Frames(), d.Pending())
					}
				})
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestStreamDecoderPartialFrame(t *testing.T) {
	d, _ := NewStreamDecoder(PCM, 24, 16000, 2)
	fr, err := d.Write([]byte{0, 0, 0x40, 0, 0})
	if err != nil || len(fr[0]) != 0 || d.Pending() != 5 {
		t.Fatalf("%v %v pending %d", fr, err, d.Pending())
	}
	fr, _ = d.Write([]byte{0x80, 1})
	assertSamples(t, fr, [][]float32{{0.5}, {-1}})
	if d.Pending() != 1 || d.Seconds() != 1.0/16000 {
		t.Fatalf("pending %d seconds %v", d.Pending(), d.Seconds())
	}
}

func TestStreamDecoderHeaders(t *testing.T) {
	t.Run("mismatch", func(t *testing.T) {
		d, _ := NewStreamDecoder(PCM, 16, 16000, 1)
		hdr := riff(fmtChunk(1, 2, 44100, 4, 16), chunk{"data", nil})
		_, err := d.Write(hdr)
		want := "audio: the WAV header says wav/pcm 16-bit, 44100 Hz, 2 channels, but the session is wav/pcm 16-bit, 16000 Hz, 1 channel"
		if err == nil || err.Error() != want || !errors.Is(err, ErrFormatMismatch) {
			t.Fatalf("error %v, want %q", err, want)
		}
		if _, err2 := d.Write(make([]byte, 100)); err2 != err {
			t.Fatal("the error must stick")
		}
	})
	t.Run("G.711 header matches whatever bit_depth the session gave", func(t *testing.T) {
		d, _ := NewStreamDecoder(ULaw, 16, 8000, 1)
		fr, err := d.Write(append(riff(fmtChunk(7, 1, 8000, 1, 8)), rawChunk("data", 0, []byte{0xFF, 0x80})...))
		if err != nil {
			t.Fatal(err)
		}
		assertSamples(t, fr, [][]float32{{0, 32124.0 / 32768}})
	})
	t.Run("RIFF that is not WAVE is samples", func(t *testing.T) {
		d, _ := NewStreamDecoder(PCM, 16, 16000, 1)
		fr, err := d.Write([]byte("RIFF\x00\x00\x00\x00AVI "))
		if err != nil || len(fr[0]) != 6 {
			t.Fatalf("%v %v", fr, err)
		}
	})
	t.Run("short stream that starts like RIFF waits", func(t *testing.T) {
		d, _ := NewStreamDecoder(PCM, 8, 16000, 1)
		fr, err := d.Write([]byte("RI"))
		if err != nil || len(fr[0]) != 0 || d.Pending() != 2 {
			t.Fatalf("%v %v", fr, err)
		}
		fr, _ = d.Write([]byte("X"))
		if len(fr[0]) != 3 {
			t.Fatalf("got %d samples, want 3", len(fr[0]))
		}
	})
	t.Run("endless header", func(t *testing.T) {
		d, _ := NewStreamDecoder(PCM, 16, 16000, 1)
		if _, err := d.Write(append(riff(), rawChunk("JUNK", 1<<20, nil)...)); err != nil {
			t.Fatal(err)
		}
		var err error
		for i := 0; i < 20 && err == nil; i++ {
			_, err = d.Write(make([]byte, 4096))
		}
		if err == nil || !errors.Is(err, ErrMalformed) || d.Pending() > maxLiveHeader+4096 {
			t.Fatalf("error %v pending %d", err, d.Pending())
		}
	})
	t.Run("broken header", func(t *testing.T) {
		d, _ := NewStreamDecoder(PCM, 16, 16000, 1)
		_, err := d.Write(riff(fmtChunk(0x55, 1, 16000, 2, 16), chunk{"data", nil}))
		if err == nil || !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error %v", err)
		}
	})
}
