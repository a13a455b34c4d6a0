package audio

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Encode16 writes samples as a 16-bit PCM WAV file at the given rate, one slice a channel, all
// of the same length. Samples are rounded and clamped to [-1, 1]. It is meant for tests and
// tools: it writes the plain 44-byte header every reader understands.
func Encode16(w io.Writer, samples [][]float32, rate int) error {
	ch := len(samples)
	if ch < 1 || ch > MaxChannels {
		return fmt.Errorf("audio: encode %d channels; 1 to %d are supported", ch, MaxChannels)
	}
	if rate < 1 || rate > maxRate {
		return fmt.Errorf("audio: encode at %d Hz: rate out of range", rate)
	}
	n := len(samples[0])
	for c, s := range samples {
		if len(s) != n {
			return fmt.Errorf("audio: encode: channel %d has %d samples, channel 0 has %d", c, len(s), n)
		}
	}
	dataSize := int64(n) * int64(ch) * 2
	if dataSize > 0xFFFFFFFF-36 {
		return fmt.Errorf("audio: encode: %d bytes of samples do not fit in a WAV file", dataSize)
	}
	bw := bufio.NewWriter(w)
	if _, err := bw.Write(Header16(ch, rate, dataSize)); err != nil {
		return fmt.Errorf("audio: encode: %w", err)
	}
	var fr [2 * MaxChannels]byte
	for i := range n {
		for c := range ch {
			binary.LittleEndian.PutUint16(fr[2*c:], uint16(toInt16(samples[c][i])))
		}
		if _, err := bw.Write(fr[:2*ch]); err != nil {
			return fmt.Errorf("audio: encode: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("audio: encode: %w", err)
	}
	return nil
}

// Header16 is the 44-byte header of a 16-bit PCM WAV file of dataBytes bytes of samples. Data
// past what the 32-bit sizes hold (3 hours of 8 channels at 48 kHz) gets the 0xFFFFFFFF
// placeholder of streamed WAVs, which readers take as "to the end of the file".
func Header16(channels, rate int, dataBytes int64) []byte {
	le := binary.LittleEndian
	h := make([]byte, 44)
	riff, data := uint32(0xFFFFFFFF), uint32(0xFFFFFFFF)
	if dataBytes <= 0xFFFFFFFF-36 {
		riff, data = uint32(36+dataBytes), uint32(dataBytes)
	}
	copy(h[0:], "RIFF")
	le.PutUint32(h[4:], riff)
	copy(h[8:], "WAVEfmt ")
	le.PutUint32(h[16:], 16)
	le.PutUint16(h[20:], 1) // PCM
	le.PutUint16(h[22:], uint16(channels))
	le.PutUint32(h[24:], uint32(rate))
	le.PutUint32(h[28:], uint32(rate*channels*2))
	le.PutUint16(h[32:], uint16(channels*2))
	le.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	le.PutUint32(h[40:], data)
	return h
}
