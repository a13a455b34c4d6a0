package audio

import "time"

// Audio is decoded audio: float32 samples in [-1, 1] at the source rate, one slice a channel,
// all of the same length.
type Audio struct {
	Samples    [][]float32
	SampleRate int
	Channels   int
	Source     Format // how the samples were stored
}

// Frames is the number of samples in each channel.
func (a *Audio) Frames() int {
	if len(a.Samples) == 0 {
		return 0
	}
	return len(a.Samples[0])
}

// Seconds is the length of the audio in seconds, the unit of the service's times.
func (a *Audio) Seconds() float64 {
	if a.SampleRate <= 0 {
		return 0
	}
	return float64(a.Frames()) / float64(a.SampleRate)
}

// Duration is the length of the audio.
func (a *Audio) Duration() time.Duration {
	return time.Duration(a.Seconds() * float64(time.Second))
}

// Resample16k returns the audio at 16 kHz, one slice a channel: the input the engines take.
// The samples are shared when the audio already is at 16 kHz. It fails only on an Audio built
// by hand with an impossible rate.
func (a *Audio) Resample16k() ([][]float32, error) {
	out := make([][]float32, len(a.Samples))
	for c, s := range a.Samples {
		var err error
		if out[c], err = Resample(s, a.SampleRate, 16000); err != nil {
			return nil, err
		}
	}
	return out, nil
}
