package audio

import (
	"encoding/binary"
	"math"
	"slices"
)

// appendFrames decodes the whole frames at the start of data and appends their samples to out,
// one slice per channel; bytes of a trailing partial frame are ignored. It returns the number
// of bytes consumed. out must have f.Channels slices.
func (f Format) appendFrames(out [][]float32, data []byte) int {
	bps := f.BitDepth / 8
	block := bps * f.Channels
	n := len(data) / block
	if n == 0 {
		return 0
	}
	for c := range out {
		base := len(out[c])
		s := grow(out[c], n)[:base+n]
		d := s[base:]
		// One loop a format, the switch outside it: this runs for every sample of an
		// hour-long file.
		switch {
		case f.Encoding == PCM && bps == 1:
			for i := range d {
				d[i] = float32(int(data[i*block+c])-128) / 128
			}
		case f.Encoding == PCM && bps == 2:
			for i := range d {
				off := i*block + c*2
				d[i] = float32(int16(uint16(data[off])|uint16(data[off+1])<<8)) / (1 << 15)
			}
		case f.Encoding == PCM && bps == 3:
			for i := range d {
				off := i*block + c*3
				v := int32(uint32(data[off])<<8|uint32(data[off+1])<<16|uint32(data[off+2])<<24) >> 8
				d[i] = float32(v) / (1 << 23)
			}
		case f.Encoding == PCM && bps == 4:
			for i := range d {
				d[i] = float32(float64(int32(binary.LittleEndian.Uint32(data[i*block+c*4:]))) / (1 << 31))
			}
		case f.Encoding == Float && bps == 4:
			for i := range d {
				d[i] = clampUnit(float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i*block+c*4:]))))
			}
		case f.Encoding == Float && bps == 8:
			for i := range d {
				d[i] = clampUnit(math.Float64frombits(binary.LittleEndian.Uint64(data[i*block+c*8:])))
			}
		case f.Encoding == ALaw:
			for i := range d {
				d[i] = float32(alaw(data[i*block+c])) / (1 << 15)
			}
		case f.Encoding == ULaw:
			for i := range d {
				d[i] = float32(ulaw(data[i*block+c])) / (1 << 15)
			}
		}
		out[c] = s
	}
	return n * block
}

// grow makes room for n more samples, doubling: slices.Grow adds only a quarter to large
// slices, and an hour of audio arrives in many small blocks.
func grow(s []float32, n int) []float32 {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, max(n, len(s)))
}

// clampUnit keeps float samples in [-1, 1]: files written by careless tools overshoot, and
// NaN or infinities would poison every later sum.
func clampUnit(v float64) float32 {
	switch {
	case math.IsNaN(v):
		return 0
	case v > 1:
		return 1
	case v < -1:
		return -1
	}
	return float32(v)
}

// ulaw expands a G.711 µ-law byte to a linear 16-bit value (±32124).
func ulaw(u byte) int16 {
	u = ^u
	exp := (u >> 4) & 7
	v := (int32(u&0x0f)<<3 + 0x84) << exp
	v -= 0x84
	if u&0x80 != 0 {
		return int16(-v)
	}
	return int16(v)
}

// alaw expands a G.711 A-law byte to a linear 16-bit value (±32256).
func alaw(a byte) int16 {
	a ^= 0x55
	exp := (a >> 4) & 7
	v := int32(a&0x0f) << 4
	if exp == 0 {
		v += 8
	} else {
		v = (v + 0x108) << (exp - 1)
	}
	if a&0x80 != 0 { // in A-law a set sign bit means positive
		return int16(v)
	}
	return int16(-v)
}

// Int16 converts samples in [-1, 1] to 16-bit PCM, rounding and clamping, the form
// engines such as pocketsphinx take.
func Int16(samples []float32) []int16 {
	out := make([]int16, len(samples))
	for i, v := range samples {
		out[i] = toInt16(v)
	}
	return out
}

func toInt16(v float32) int16 {
	x := math.Round(float64(v) * (1 << 15))
	switch {
	case x != x: // NaN
		return 0
	case x > math.MaxInt16:
		return math.MaxInt16
	case x < math.MinInt16:
		return math.MinInt16
	}
	return int16(x)
}
