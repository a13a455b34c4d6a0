// Package audio decodes the audio the sandbox receives into float32 samples and prepares it
// for the speech engines.
//
// The input is untrusted (files fetched from arbitrary URLs, bytes from a WebSocket), so every
// decoder here bounds its memory by what it has actually read, never by a size a header
// claims, returns errors that name the problem, and does not panic on any input.
//
// Pre-recorded audio:
//
//	a, err := audio.Decode(body, audio.Limits{})   // RIFF/WAVE: PCM, IEEE float, A-law, µ-law
//	chans, err := a.Resample16k()                  // 16 kHz mono, one slice per channel
//
// Live audio (raw samples in the session's encoding, optionally after a WAV header):
//
//	dec, err := audio.NewStreamDecoder(audio.PCM, 16, 44100, 2)
//	rs[c], err = audio.NewResampler(44100, 16000)  // one a channel
//	for chunk := range chunks {
//		frames, err := dec.Write(chunk)             // keeps a partial frame for the next chunk
//		for c := range frames { frames[c] = rs[c].Process(frames[c]) }
//	}
//	// at the end: rs[c].Flush() gives the last few milliseconds of each channel
//
// Both the stream decoder and the resampler give the same samples however the input is cut
// into chunks, which keeps live transcripts reproducible.
//
// VAD and Segmenter find voiced stretches by energy; the engines use them to cut audio into
// utterances.
package audio
