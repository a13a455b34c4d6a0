package audio

import (
	"fmt"
	"math"
	"testing"
)

func TestResampleLength(t *testing.T) {
	for _, from := range []int{8000, 11025, 16000, 22050, 32000, 44100, 44056, 47999, 48000} {
		for _, n := range []int{0, 1, 2, 3, 160, 44100, 44101} {
			got, err := Resample(make([]float32, n), from, 16000)
			if err != nil {
				t.Fatal(err)
			}
			if want := (n*16000 + from - 1) / from; len(got) != want {
				t.Errorf("%d samples at %d Hz: got %d at 16 kHz, want %d", n, from, len(got), want)
			}
		}
	}
}

func rms(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

// A tone in the passband comes out as the same tone, sample for sample, away from the edges.
func TestResamplePassband(t *testing.T) {
	for _, from := range []int{8000, 11025, 22050, 32000, 44100, 44056, 47999, 48000} {
		for _, freq := range []float64{300, 1000, 3000} {
			t.Run(fmt.Sprintf("%d Hz/%v Hz", from, freq), func(t *testing.T) {
				out, err := Resample(sine(freq, 0.5, from, 1), from, 16000)
				if err != nil {
					t.Fatal(err)
				}
				want := sine(freq, 0.5, 16000, 1)
				var maxErr float64
				for i := 800; i < 15200; i++ {
					maxErr = math.Max(maxErr, math.Abs(float64(out[i]-want[i])))
				}
				if maxErr > 5e-4 { // -60 dB of the tone's amplitude; measured: -68 dB at worst
					t.Fatalf("max error %.2e", maxErr)
				}
			})
		}
	}
}

// Tones above 8 kHz must not fold back into the speech band.
func TestResampleStopband(t *testing.T) {
	for _, from := range []int{22050, 32000, 44100, 48000} {
		for _, freq := range []float64{8800, 10000, 15000} {
			if freq >= float64(from)/2 {
				continue
			}
			out, _ := Resample(sine(freq, 0.5, from, 1), from, 16000)
			level := 20 * math.Log10(rms(out[800:15200])/(0.5/math.Sqrt2))
			if level > -75 { // measured: -83 dB at worst
				t.Errorf("%v Hz tone at %d Hz: alias at %.1f dB", freq, from, level)
			}
		}
	}
}

func TestResampleDC(t *testing.T) {
	x := make([]float32, 8000)
	for i := range x {
		x[i] = 0.25
	}
	for _, from := range []int{8000, 44100, 48000, 47999} {
		out, _ := Resample(x, from, 16000)
		for i := 200; i < len(out)-200; i++ {
			if math.Abs(float64(out[i])-0.25) > 1e-5 {
				t.Fatalf("%d Hz: sample %d = %v, want 0.25", from, i, out[i])
			}
		}
	}
}

// The output must not depend on how the input is cut: live audio arrives in chunks.
func TestResamplerChunking(t *testing.T) {
	for _, from := range []int{8000, 44100, 48000, 47999} {
		in := sine(440, 0.7, from, 0.5)
		whole, _ := Resample(in, from, 16000)
		for _, sizes := range [][]int{{1}, {37}, {from / 10}, {3, 500, 1}} {
			r, _ := NewResampler(from, 16000)
			var got []float32
			for i := 0; len(in[i:]) > 0; {
				n := min(sizes[len(got)%len(sizes)], len(in)-i)
				got = append(got, r.Process(in[i:i+n])...)
				i += n
			}
			got = append(got, r.Flush()...)
			if len(got) != len(whole) {
				t.Fatalf("%d Hz %v: %d samples, want %d", from, sizes, len(got), len(whole))
			}
			for i := range got {
				if got[i] != whole[i] {
					t.Fatalf("%d Hz %v: sample %d differs: %v vs %v", from, sizes, i, got[i], whole[i])
				}
			}
		}
	}
}

func TestResampleSameRate(t *testing.T) {
	x := []float32{1, 2, 3}
	out, err := Resample(x, 16000, 16000)
	if err != nil || &out[0] != &x[0] {
		t.Fatal("16 kHz input must be returned as is")
	}
	r, _ := NewResampler(16000, 16000)
	if p := r.Process(x); len(p) != 3 || &p[0] == &x[0] || r.Flush() != nil {
		t.Fatal("streaming at the same rate must copy")
	}
	if _, err := NewResampler(0, 16000); err == nil {
		t.Fatal("rate 0 accepted")
	}
	a := &Audio{Samples: [][]float32{x}, SampleRate: 8000, Channels: 1}
	if out, err := a.Resample16k(); err != nil || len(out[0]) != 6 {
		t.Fatalf("%v %v", out, err)
	}
}

func BenchmarkResample48kTo16k(b *testing.B) {
	x := sine(440, 0.5, 48000, 10)
	b.SetBytes(int64(len(x) * 4))
	for b.Loop() {
		_, _ = Resample(x, 48000, 16000)
	}
}

func BenchmarkResample44kTo16k(b *testing.B) {
	x := sine(440, 0.5, 44100, 10)
	b.SetBytes(int64(len(x) * 4))
	for b.Loop() {
		_, _ = Resample(x, 44100, 16000)
	}
}

func BenchmarkDecode16(b *testing.B) {
	data, _ := interleave(samplesOf(PCM, 16), 2, 441000)
	file := riff(fmtChunk(1, 2, 44100, 4, 16), chunk{"data", data})
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		_, _ = DecodeBytes(file, Limits{})
	}
}
