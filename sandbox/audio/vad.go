package audio

import (
	"fmt"
	"math"
)

// VAD tuning. Frames of 20 ms average over a pitch period of voices down to 50 Hz and are
// still short enough to place word boundaries.
//
// A frame is voiced when its energy (variance, so a DC offset does not count) is above an
// absolute level and above the noise floor by a margin; both grow with the threshold. The
// noise floor follows quiet frames at once and rises slowly (3 dB/s) during loud ones. A
// stream must work from its first frame, so the floor starts below the absolute level: speech
// at the very start is found, and a steady noise louder than the absolute level is taken for
// speech only until the floor has risen to it (about a second for noise at -40 dBFS). Speech
// keeps the floor down through the dips between words; a steady tone is absorbed after
// several seconds (about 12 s at -9 dBFS).
const (
	vadFrameSeconds = 0.02
	vadAbsMinDB     = -65.0 // absolute level at threshold 0 (dBFS)
	vadAbsSpanDB    = 35.0  // ... rising to -30 dBFS at threshold 1
	vadMarginMinDB  = 6.0   // margin over the noise floor at threshold 0
	vadMarginSpanDB = 12.0  // ... rising to 18 dB at threshold 1
	vadRiseDBPerSec = 3.0
	vadSilenceDB    = -100.0 // energy of digital silence
)

// VAD classifies consecutive 20 ms frames of one channel as voiced or not by their energy. It
// is causal and keeps a partial frame between writes, so its decisions do not depend on how
// the samples are split. A VAD is not safe for concurrent use.
type VAD struct {
	frameLen int
	rate     int
	absDB    float64
	marginDB float64
	riseDB   float64 // per frame
	floor    float64
	pending  []float32
}

// NewVAD prepares a detector for samples at the given rate. threshold, 0–1 like the service's
// speech_threshold, sets the sensitivity: higher is less sensitive.
func NewVAD(sampleRate int, threshold float64) (*VAD, error) {
	if sampleRate < 50 || sampleRate > maxRate {
		return nil, fmt.Errorf("audio: vad sample rate %d Hz out of range", sampleRate)
	}
	if !(threshold >= 0 && threshold <= 1) {
		return nil, fmt.Errorf("audio: speech threshold %v outside 0–1", threshold)
	}
	v := &VAD{
		frameLen: int(math.Round(float64(sampleRate) * vadFrameSeconds)),
		rate:     sampleRate,
		absDB:    vadAbsMinDB + vadAbsSpanDB*threshold,
		marginDB: vadMarginMinDB + vadMarginSpanDB*threshold,
	}
	v.riseDB = vadRiseDBPerSec * v.FrameSeconds()
	v.floor = v.absDB - v.marginDB
	return v, nil
}

// FrameLen is the number of samples of a frame.
func (v *VAD) FrameLen() int { return v.frameLen }

// FrameSeconds is the length of a frame in seconds.
func (v *VAD) FrameSeconds() float64 { return float64(v.frameLen) / float64(v.rate) }

// Write analyses the complete frames that samples finish and appends one decision a frame to
// voiced. Samples of a trailing partial frame wait for the next write.
func (v *VAD) Write(samples []float32, voiced []bool) []bool {
	if len(v.pending) > 0 {
		take := min(v.frameLen-len(v.pending), len(samples))
		v.pending = append(v.pending, samples[:take]...)
		samples = samples[take:]
		if len(v.pending) < v.frameLen {
			return voiced
		}
		voiced = append(voiced, v.classify(v.pending))
		v.pending = v.pending[:0]
	}
	for len(samples) >= v.frameLen {
		voiced = append(voiced, v.classify(samples[:v.frameLen]))
		samples = samples[v.frameLen:]
	}
	v.pending = append(v.pending, samples...)
	return voiced
}

func (v *VAD) classify(frame []float32) bool {
	var sum, sq float64
	for _, x := range frame {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	n := float64(len(frame))
	mean := sum / n
	e := 10 * math.Log10(max(sq/n-mean*mean, 0)+1e-10)
	if math.IsNaN(e) {
		e = vadSilenceDB
	}
	voiced := e > v.absDB && e > v.floor+v.marginDB
	if e < v.floor {
		v.floor = e
	} else {
		v.floor += min(v.riseDB, e-v.floor)
	}
	return voiced
}
