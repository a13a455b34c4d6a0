package audio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Defaults of Limits: the service's own limits for pre-recorded audio.
const (
	DefaultMaxDataBytes int64 = 1000 * 1000 * 1000
	DefaultMaxDuration        = 135 * time.Minute
)

// maxMetadataBytes bounds the chunks skipped before the audio data, so that a file made only
// of a huge LIST chunk is rejected instead of read forever.
const maxMetadataBytes = 16 << 20

// Limits bound what Decode accepts. Zero fields take the defaults. The decoded samples take 4
// bytes each, so a caller short of memory should lower them.
type Limits struct {
	MaxDataBytes int64         // bytes of the data chunk
	MaxDuration  time.Duration // length of the audio
}

func (l Limits) withDefaults() Limits {
	if l.MaxDataBytes <= 0 {
		l.MaxDataBytes = DefaultMaxDataBytes
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = DefaultMaxDuration
	}
	return l
}

// Header is what a WAV file says about its audio.
type Header struct {
	Format     Format
	DataOffset int64 // bytes before the first sample
	DataSize   int64 // declared size of the data chunk; -1 when it is 0 or 0xFFFFFFFF (streamed WAVs)
}

// Decode reads a RIFF/WAVE file from r: PCM (8-bit unsigned, 16, 24, 32-bit), IEEE float (32,
// 64-bit), A-law and µ-law, plain or WAVE_FORMAT_EXTENSIBLE; 1–8 channels; 8–48 kHz.
//
// It is lenient where players are lenient and strict where a guess would produce noise: chunks
// it does not know are skipped (a missing pad byte after an odd-sized chunk is tolerated); a
// data chunk declared with size 0 or 0xFFFFFFFF, or larger than what follows, is read to EOF;
// a partial frame at the end is dropped. A header that contradicts itself (block align) or
// names a format it cannot decode is an error. Limits are enforced on the bytes actually
// read, not on the sizes the header declares, since streaming writers put placeholders there.
// Reading stops at the end of the data chunk.
func Decode(r io.Reader, limits Limits) (*Audio, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	h, err := readHeader(br)
	if err != nil {
		return nil, err
	}
	return decodeData(br, h, limits.withDefaults())
}

// DecodeBytes is Decode on a file held in memory.
func DecodeBytes(b []byte, limits Limits) (*Audio, error) {
	return Decode(bytes.NewReader(b), limits)
}

// ParseHeader parses the WAV header at the start of b, up to the first byte of the data
// chunk. An error that wraps io.ErrUnexpectedEOF means b ends before the header does.
func ParseHeader(b []byte) (Header, error) {
	return readHeader(bufio.NewReader(bytes.NewReader(b)))
}

// ReadHeader is ParseHeader on a reader: it reads r up to the first sample only, so a file's
// header is known without the file in memory.
func ReadHeader(r io.Reader) (Header, error) {
	return readHeader(bufio.NewReader(r))
}

func isEOF(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }

func readHeader(br *bufio.Reader) (Header, error) {
	var riff [12]byte
	if _, err := io.ReadFull(br, riff[:]); err != nil {
		if isEOF(err) {
			return Header{}, wrapError(ErrNotWAV, "wav: not a RIFF/WAVE file", io.ErrUnexpectedEOF)
		}
		return Header{}, fmt.Errorf("wav: reading header: %w", err)
	}
	magic := string(riff[:4])
	if magic == "RIFX" && string(riff[8:]) == "WAVE" {
		return Header{}, newError(ErrUnsupported, "wav: big-endian RIFX files are not supported")
	}
	if (magic != "RIFF" && magic != "RF64") || string(riff[8:]) != "WAVE" {
		return Header{}, newError(ErrNotWAV, "wav: not a RIFF/WAVE file")
	}
	off := int64(len(riff))
	var (
		f       Format
		haveFmt bool
		meta    int64
	)
	missing := func() error {
		if !haveFmt {
			return wrapError(ErrMalformed, "wav: no fmt chunk", io.ErrUnexpectedEOF)
		}
		return wrapError(ErrMalformed, "wav: no data chunk", io.ErrUnexpectedEOF)
	}
	for {
		var ch [8]byte
		if _, err := io.ReadFull(br, ch[:]); err != nil {
			if isEOF(err) {
				return Header{}, missing()
			}
			return Header{}, fmt.Errorf("wav: reading chunk header: %w", err)
		}
		off += 8
		id, size := string(ch[:4]), int64(binary.LittleEndian.Uint32(ch[4:]))
		if id == "data" {
			if !haveFmt {
				return Header{}, newError(ErrMalformed, "wav: data chunk before the fmt chunk")
			}
			if size == 0 || size == 0xFFFFFFFF {
				size = -1
			}
			return Header{Format: f, DataOffset: off, DataSize: size}, nil
		}
		meta += size
		if meta > maxMetadataBytes {
			return Header{}, newError(ErrTooLarge, fmt.Sprintf("wav: more than %d MiB of chunks before the audio data", maxMetadataBytes>>20))
		}
		rest := size
		if id == "fmt " {
			if haveFmt {
				return Header{}, newError(ErrMalformed, "wav: two fmt chunks")
			}
			if size < 16 {
				return Header{}, newError(ErrMalformed, fmt.Sprintf("wav: fmt chunk of %d bytes; at least 16 are needed", size))
			}
			buf := make([]byte, min(size, 40))
			if _, err := io.ReadFull(br, buf); err != nil {
				if isEOF(err) {
					return Header{}, wrapError(ErrMalformed, "wav: truncated fmt chunk", io.ErrUnexpectedEOF)
				}
				return Header{}, fmt.Errorf("wav: reading fmt chunk: %w", err)
			}
			var err error
			if f, err = parseFmt(buf); err != nil {
				return Header{}, err
			}
			haveFmt = true
			rest -= int64(len(buf))
			off += int64(len(buf))
		}
		if n, err := io.CopyN(io.Discard, br, rest); err != nil {
			if err == io.EOF {
				return Header{}, missing()
			}
			return Header{}, fmt.Errorf("wav: skipping %q chunk: %w", id, err)
		} else {
			off += n
		}
		// Odd chunks are followed by a pad byte, which some writers forget: only a zero byte is
		// taken as padding, since a chunk id never starts with one.
		if size&1 == 1 {
			if b, err := br.Peek(1); err == nil && b[0] == 0 {
				_, _ = br.Discard(1)
				off++
			}
		}
	}
}

// baseGUIDTail is bytes 2–15 of KSDATAFORMAT_SUBTYPE_* GUIDs {0000xxxx-0000-0010-8000-00AA00389B71}
// as stored; bytes 0–1 hold the format tag.
const baseGUIDTail = "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"

const supportedFormats = "supported: PCM, IEEE float, A-law, µ-law"

func parseFmt(b []byte) (Format, error) {
	le := binary.LittleEndian
	tag := le.Uint16(b[0:])
	channels := int(le.Uint16(b[2:]))
	rate := le.Uint32(b[4:])
	align := int(le.Uint16(b[12:]))
	bits := int(le.Uint16(b[14:]))
	if tag == 0xFFFE {
		if len(b) < 40 {
			return Format{}, newError(ErrMalformed, fmt.Sprintf("wav: WAVE_FORMAT_EXTENSIBLE fmt chunk of %d bytes; 40 are needed", len(b)))
		}
		g := b[24:40]
		if string(g[2:]) != baseGUIDTail {
			return Format{}, newError(ErrUnsupported, fmt.Sprintf("wav: unsupported WAVE_FORMAT_EXTENSIBLE sub-format %s; %s", guidString(g), supportedFormats))
		}
		tag = le.Uint16(g)
	}
	f := Format{Channels: channels, SampleRate: int(min(rate, 1<<31-1)), BitDepth: bits}
	switch tag {
	case 1:
		// Samples are stored in whole bytes, left-justified: 12-bit audio decodes as 16-bit.
		f.Encoding, f.BitDepth = PCM, (bits+7)/8*8
	case 3:
		f.Encoding = Float
	case 6:
		f.Encoding = ALaw
	case 7:
		f.Encoding = ULaw
	default:
		if name := tagName(tag); name != "" {
			return Format{}, newError(ErrUnsupported, fmt.Sprintf("wav: unsupported format tag %d (%s); %s", tag, name, supportedFormats))
		}
		return Format{}, newError(ErrUnsupported, fmt.Sprintf("wav: unsupported format tag %d; %s", tag, supportedFormats))
	}
	if err := f.validate("wav"); err != nil {
		return Format{}, err
	}
	if align != f.FrameSize() {
		return Format{}, newError(ErrMalformed, fmt.Sprintf("wav: block align %d does not match %d channels of %d bits (%d bytes)", align, channels, f.BitDepth, f.FrameSize()))
	}
	return f, nil
}

// tagName names the format tags people meet in practice, for the error message.
func tagName(tag uint16) string {
	switch tag {
	case 0:
		return "unknown"
	case 2:
		return "Microsoft ADPCM"
	case 0x11:
		return "IMA ADPCM"
	case 0x31:
		return "GSM 6.10"
	case 0x50:
		return "MPEG"
	case 0x55:
		return "mp3"
	case 0x160, 0x161, 0x162, 0x163:
		return "WMA"
	case 0x2000:
		return "AC-3"
	case 0x674f, 0x6750, 0x6751:
		return "Ogg Vorbis"
	case 0xF1AC:
		return "FLAC"
	}
	return ""
}

func guidString(g []byte) string {
	le := binary.LittleEndian
	return fmt.Sprintf("{%08X-%04X-%04X-%X-%X}", le.Uint32(g), le.Uint16(g[4:]), le.Uint16(g[6:]), g[8:10], g[10:16])
}

// decodeData reads the data chunk. Memory grows with the bytes actually read: the declared
// size only caps the preallocation.
func decodeData(r io.Reader, h Header, lim Limits) (*Audio, error) {
	f := h.Format
	block := int64(f.FrameSize())
	maxFrames := int64(lim.MaxDuration.Seconds() * float64(f.SampleRate))
	out := make([][]float32, f.Channels)
	if h.DataSize > 0 {
		pre := min(h.DataSize/block, maxFrames, 1<<16)
		for c := range out {
			out[c] = make([]float32, 0, pre)
		}
	}
	buf := make([]byte, 64<<10)
	remaining := h.DataSize // -1: to EOF
	var carry int
	var total int64
	for remaining != 0 {
		n := len(buf) - carry
		if remaining > 0 && remaining < int64(n) {
			n = int(remaining)
		}
		m, err := io.ReadFull(r, buf[carry:carry+n])
		total += int64(m)
		if remaining > 0 {
			remaining -= int64(m)
		}
		if total > lim.MaxDataBytes {
			return nil, newError(ErrTooLarge, fmt.Sprintf("wav: audio data exceeds the limit of %d bytes", lim.MaxDataBytes))
		}
		used := f.appendFrames(out, buf[:carry+m])
		carry = copy(buf, buf[used:carry+m])
		if int64(len(out[0])) > maxFrames {
			return nil, newError(ErrTooLarge, fmt.Sprintf("wav: audio longer than the limit of %s", lim.MaxDuration))
		}
		if isEOF(err) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("wav: reading audio data: %w", err)
		}
	}
	return &Audio{Samples: out, SampleRate: f.SampleRate, Channels: f.Channels, Source: f}, nil
}

// errIncomplete reports whether err says that the input ended inside a header.
func errIncomplete(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }
