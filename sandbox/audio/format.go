package audio

import "fmt"

// Encoding names how samples are stored. The first three are the live session encodings of the
// service; Float only occurs in WAV files.
type Encoding string

// Encodings understood by the decoders.
const (
	PCM   Encoding = "wav/pcm"  // linear PCM: 8-bit unsigned (bias 128), 16/24/32-bit signed little-endian
	ALaw  Encoding = "wav/alaw" // G.711 A-law, 8 bits a sample
	ULaw  Encoding = "wav/ulaw" // G.711 µ-law, 8 bits a sample
	Float Encoding = "float"    // IEEE float little-endian, 32 or 64 bits (WAV files only)
)

// Bounds of what the decoders accept; they are the service's bounds.
const (
	MinSampleRate = 8000
	MaxSampleRate = 48000
	MaxChannels   = 8
)

// Format describes interleaved sample frames.
type Format struct {
	Encoding   Encoding
	BitDepth   int // bits a sample as stored (the container size, a multiple of 8)
	SampleRate int // frames a second
	Channels   int
}

// FrameSize is the number of bytes of one frame (one sample of every channel).
func (f Format) FrameSize() int { return f.Channels * f.BitDepth / 8 }

func (f Format) String() string {
	ch := "channels"
	if f.Channels == 1 {
		ch = "channel"
	}
	return fmt.Sprintf("%s %d-bit, %d Hz, %d %s", f.Encoding, f.BitDepth, f.SampleRate, f.Channels, ch)
}

// encodingName is the name used in error messages about WAV files.
func encodingName(e Encoding) string {
	switch e {
	case PCM:
		return "PCM"
	case ALaw:
		return "A-law"
	case ULaw:
		return "µ-law"
	case Float:
		return "IEEE float"
	}
	return string(e)
}

// validate checks the format against what the decoders support. prefix starts every message
// ("wav" for files, "audio" for raw streams) so that users can tell which input was wrong.
func (f Format) validate(prefix string) error {
	if f.Channels < 1 {
		return newError(ErrUnsupported, fmt.Sprintf("%s: %d channels; at least 1 is needed", prefix, f.Channels))
	}
	if f.Channels > MaxChannels {
		return newError(ErrUnsupported, fmt.Sprintf("%s: %d channels; at most %d are supported", prefix, f.Channels, MaxChannels))
	}
	if f.SampleRate < MinSampleRate || f.SampleRate > MaxSampleRate {
		return newError(ErrUnsupported, fmt.Sprintf("%s: sample rate %d Hz outside %d–%d", prefix, f.SampleRate, MinSampleRate, MaxSampleRate))
	}
	switch f.Encoding {
	case PCM:
		switch f.BitDepth {
		case 8, 16, 24, 32:
			return nil
		}
		return newError(ErrUnsupported, fmt.Sprintf("%s: %d-bit PCM is not supported; supported: 8, 16, 24, 32 bits", prefix, f.BitDepth))
	case Float:
		if f.BitDepth == 32 || f.BitDepth == 64 {
			return nil
		}
		return newError(ErrUnsupported, fmt.Sprintf("%s: %d-bit IEEE float is not supported; supported: 32, 64 bits", prefix, f.BitDepth))
	case ALaw, ULaw:
		if f.BitDepth == 8 {
			return nil
		}
		return newError(ErrUnsupported, fmt.Sprintf("%s: %d-bit %s is not supported; it is 8 bits a sample", prefix, f.BitDepth, encodingName(f.Encoding)))
	}
	return newError(ErrUnsupported, fmt.Sprintf("%s: unsupported encoding %q; supported: %s, %s, %s", prefix, f.Encoding, PCM, ALaw, ULaw))
}
