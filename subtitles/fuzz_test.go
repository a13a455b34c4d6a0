package subtitles

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// fuzzUtterances decodes arbitrary bytes into utterances: each record is a control byte
// (speaker, channel, new utterance, text-only), two float64 times and a word of up to 15
// bytes, so the fuzzer reaches NaN, infinities, negative, huge and equal times and any text.
// A word of 15 bytes is repeated four times (60 bytes): longer than a line of every profile,
// like a URL, which must get a line of its own and a cue of MinDuration.
func fuzzUtterances(data []byte) []api.Utterance {
	var utts []api.Utterance
	for len(data) >= 17 {
		ctl := data[0]
		start := math.Float64frombits(binary.LittleEndian.Uint64(data[1:9]))
		end := math.Float64frombits(binary.LittleEndian.Uint64(data[9:17]))
		data = data[17:]
		n := min(int(ctl>>4), len(data))
		text := string(data[:n])
		if n == 15 {
			text = strings.Repeat(text, 4)
		}
		data = data[n:]
		if len(utts) == 0 || ctl&1 != 0 {
			u := api.Utterance{Start: start, End: end, Channel: int(ctl>>1) & 1}
			if ctl&4 != 0 {
				u.Speaker = speaker(int(ctl>>3) & 1)
			}
			utts = append(utts, u)
		}
		u := &utts[len(utts)-1]
		if ctl&2 != 0 && len(u.Words) == 0 {
			u.Text += " " + text
			continue
		}
		u.Words = append(u.Words, api.Word{Word: text, Start: start, End: end})
	}
	return utts
}

func fuzzSeed(words ...float64) []byte {
	var b []byte
	for i := 0; i+1 < len(words); i += 2 {
		b = append(b, 0x50|byte(i%8))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(words[i]))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(words[i+1]))
		b = append(b, "hello"...)
	}
	return b
}

// fuzzLongWordSeed is the held-back transcript's shape: a URL (15 bytes, so repeated to 60)
// read in 0.1 s between words 0.05 s and 0.119 s away.
func fuzzLongWordSeed() []byte {
	var b []byte
	for _, w := range []struct {
		start, end float64
		text       string
	}{{1.0, 1.3, "Please"}, {1.35, 1.7, "visit"}, {1.75, 1.85, "https://ex.com/"}, {1.969, 2.1, "for"}, {2.12, 2.7, "details."}} {
		b = append(b, byte(len(w.text))<<4)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w.start))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w.end))
		b = append(b, w.text...)
	}
	return b
}

// FuzzSegment: no panic, and every invariant of the property tests holds, for every preset
// and the corner profiles; SRT and WebVTT output passes the strict checks and reads back.
func FuzzSegment(f *testing.F) {
	f.Add(fuzzSeed(1, 1.5, 1.6, 2, 2.1, 2.5))
	f.Add(fuzzSeed(0, 0, 0, 0, math.NaN(), 1, -1, 2, 1e300, 1e301, math.Inf(1), 3))
	f.Add(fuzzSeed(5, 4, 3, 2, 1, 0.5, 1, 1, 1, 1))
	f.Add(fuzzLongWordSeed())
	f.Add([]byte("\x37\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\x40a-->b\x26\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x08\x40<&>"))
	profiles := propertyProfiles()
	f.Fuzz(func(t *testing.T, data []byte) {
		utts := fuzzUtterances(data)
		p := profiles[len(data)%len(profiles)]
		words, spans, cues, issues := segmentAll(t, utts, p)
		if err := checkInvariants(utts, p, words, spans, cues, issues); err != nil {
			t.Fatal(err)
		}
		if err := checkFiles(cues); err != nil {
			t.Fatal(err)
		}
	})
}
