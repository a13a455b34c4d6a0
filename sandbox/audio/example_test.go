package audio_test

import (
	"bytes"
	"fmt"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// A live session at 8 kHz, µ-law, stereo: chunks of any size, a WAV header first, resampled
// to 16 kHz for the engine.
func ExampleStreamDecoder() {
	body := bytes.Repeat([]byte{0xFF, 0x80}, 800) // 0.1 s of µ-law frames: silence left, loud right
	header := append([]byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x07\x00\x02\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x08\x00"),
		"data\xff\xff\xff\xff"...)
	stream := append(header, body...)

	dec, err := audio.NewStreamDecoder(audio.ULaw, 8, 8000, 2)
	if err != nil {
		panic(err)
	}
	rs := make([]*audio.Resampler, 2)
	for c := range rs {
		rs[c], _ = audio.NewResampler(8000, 16000)
	}
	out := make([][]float32, 2)
	for len(stream) > 0 {
		n := min(333, len(stream))
		frames, err := dec.Write(stream[:n])
		if err != nil {
			panic(err)
		}
		stream = stream[n:]
		for c := range frames {
			out[c] = append(out[c], rs[c].Process(frames[c])...)
		}
	}
	for c := range rs {
		out[c] = append(out[c], rs[c].Flush()...)
	}
	fmt.Printf("%.2f s decoded, %d samples a channel at 16 kHz; right channel sample 800: %.3f\n",
		dec.Seconds(), len(out[0]), out[1][800])
	// Output: 0.10 s decoded, 1600 samples a channel at 16 kHz; right channel sample 800: 0.980
}
