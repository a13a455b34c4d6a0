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
	le := binary.LittleEndian
	var h [44]byte
	copy(h[0:], "RIFF")
	le.PutUint32(h[4:], uint32(36+dataSize))
	copy(h[8:], "WAVEfmt ")
	le.PutUint32(h[16:], 16)
	le.PutUint16(h[20:], 1)
	le.PutUint16(h[22:], uint16(ch))
	le.PutUint32(h[24:], uint32(rate))
	le.PutUint32(h[28:], uint32(rate*ch*2))
	le.PutUint16(h[32:], uint16(ch*2))
	le.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	le.PutUint32(h[40:], uint32(dataSize))
	bw := bufio.NewWriter(w)
	if _, err := bw.Write(h[:]); err != nil {
		return fmt.Errorf("audio: encode: %w", err)
	}
	var fr [2 * MaxChannels]byte
	for i := range n {
		for c := range ch {
			le.PutUint16(fr[2*c:], uint16(toInt16(samples[c][i])))
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
