package audio

import (
	"fmt"
	"math"
	"slices"
)

// The resampler is a polyphase Kaiser-windowed sinc filter. Linear interpolation aliases
// everything above the new Nyquist frequency back into the speech band when going from 44.1 or
// 48 kHz to 16 kHz, which hurts recognisers; a windowed sinc low-passes and interpolates in one
// step. With 16 zero crossings a side and β = 8, going to 16 kHz, tones above 8.5 kHz fold
// back at -83 dB or less, and tones up to 6 kHz come out within -68 dB of the ideal signal
// (measured in resample_test.go), more than speech recognition needs. The cost is about 100
// multiply-adds an output sample at 48 kHz in: 10 s of audio resample in about 20 ms.
const (
	zeroCrossings = 16
	kaiserBeta    = 8.0
	rolloff       = 0.9  // cutoff as a fraction of the lower Nyquist frequency
	maxPhases     = 1024 // odd rate pairs quantise the filter phase to 1/1024 of a sample
	maxRate       = 1 << 20
)

// Resampler converts one channel from one sample rate to another, in pieces. The output does
// not depend on how the input is split: output sample n is computed once its last input
// sample has arrived, from absolute positions, with zeros before the start and after the end.
// A Resampler is not safe for concurrent use.
type Resampler struct {
	l, m     int64 // output/input rate ratio l/m in lowest terms
	phases   int64
	half     int64     // filter taps on each side of the output position
	bank     []float32 // phases × 2·half coefficients
	buf      []float32 // input history; buf[0] is input sample bufStart
	bufStart int64
	in       int64 // input samples received
	next     int64 // index of the next output sample
	same     bool
}

// NewResampler prepares a resampler from one rate to another (1 Hz – 1 MHz).
func NewResampler(from, to int) (*Resampler, error) {
	if from < 1 || from > maxRate || to < 1 || to > maxRate {
		return nil, fmt.Errorf("audio: cannot resample from %d Hz to %d Hz", from, to)
	}
	g := gcd(from, to)
	r := &Resampler{l: int64(to / g), m: int64(from / g)}
	if r.l == r.m {
		r.same = true
		return r, nil
	}
	fc := 0.5 * rolloff * math.Min(1, float64(to)/float64(from)) // cycles per input sample
	r.half = int64(math.Ceil(zeroCrossings / (2 * fc)))
	r.phases = min(r.l, maxPhases)
	taps := 2 * r.half
	r.bank = make([]float32, r.phases*taps)
	i0b := besselI0(kaiserBeta)
	for p := range r.phases {
		frac := float64(p) / float64(r.phases)
		row := r.bank[p*taps : (p+1)*taps]
		var sum float64
		coef := make([]float64, taps)
		for j := range taps {
			d := float64(j-r.half+1) - frac // distance from the output position, input samples
			w := d / float64(r.half)
			if w*w >= 1 {
				continue
			}
			x := 2 * fc * d
			s := 1.0
			if x != 0 {
				s = math.Sin(math.Pi*x) / (math.Pi * x)
			}
			coef[j] = 2 * fc * s * besselI0(kaiserBeta*math.Sqrt(1-w*w)) / i0b
			sum += coef[j]
		}
		// Unit DC gain in every phase, or a steady signal would ripple at the phase rate.
		for j := range taps {
			row[j] = float32(coef[j] / sum)
		}
	}
	return r, nil
}

// Process takes the next input samples and returns the output samples that are now complete.
func (r *Resampler) Process(x []float32) []float32 {
	if r.same {
		return slices.Clone(x)
	}
	r.buf = append(r.buf, x...)
	r.in += int64(len(x))
	return r.produce(false)
}

// Flush returns the remaining output, computed with zeros after the last input sample. The
// total output is ceil(inputs × to / from) samples. The resampler must not be used after.
func (r *Resampler) Flush() []float32 {
	if r.same {
		return nil
	}
	return r.produce(true)
}

// locate returns the input sample at or before output n and the filter phase there.
func (r *Resampler) locate(n int64) (int64, int64) {
	pos := n * r.m
	i0, rem := pos/r.l, pos%r.l
	if r.phases == r.l {
		return i0, rem
	}
	p := (rem*r.phases + r.l/2) / r.l
	if p == r.phases {
		return i0 + 1, 0
	}
	return i0, p
}

func (r *Resampler) produce(final bool) []float32 {
	end := int64(math.MaxInt64)
	if final {
		end = (r.in*r.l + r.m - 1) / r.m
	}
	taps := 2 * r.half
	out := make([]float32, 0, max(0, (r.in-r.next*r.m/r.l)*r.l/r.m+1))
	for r.next < end {
		i0, p := r.locate(r.next)
		if !final && i0+r.half >= r.in {
			break
		}
		coef := r.bank[p*taps : (p+1)*taps]
		start := i0 - r.half + 1 - r.bufStart
		var acc float32
		if start >= 0 && start+taps <= int64(len(r.buf)) {
			for j, x := range r.buf[start : start+taps] {
				acc += coef[j] * x
			}
		} else { // at the edges: zeros outside the signal
			for j, c := range coef {
				if k := start + int64(j); k >= 0 && k < int64(len(r.buf)) {
					acc += c * r.buf[k]
				}
			}
		}
		out = append(out, acc)
		r.next++
	}
	// Drop the history no later output needs.
	i0, _ := r.locate(r.next)
	if drop := min(i0-r.half+1-r.bufStart, int64(len(r.buf))); drop > 0 {
		r.buf = r.buf[:copy(r.buf, r.buf[drop:])]
		r.bufStart += drop
	}
	return out
}

// Resample converts one channel from one rate to another. It returns x itself when the rates
// are equal.
func Resample(x []float32, from, to int) ([]float32, error) {
	r, err := NewResampler(from, to)
	if err != nil {
		return nil, err
	}
	if r.same {
		return x, nil
	}
	out := r.Process(x)
	return append(out, r.Flush()...), nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// besselI0 is the modified Bessel function of the first kind, order 0, by its power series.
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 200; k++ {
		term *= (x / (2 * float64(k))) * (x / (2 * float64(k)))
		sum += term
		if term < 1e-14*sum {
			break
		}
	}
	return sum
}
