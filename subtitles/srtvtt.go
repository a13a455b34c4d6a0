package subtitles

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/asticode/go-astisub"
)

// renderSRT writes through astisub, then checks its output block by block and fixes what
// the issue demands: no byte-order mark, text escaped only where needed (astisub turns every
// & into &amp;, which most SRT players show literally).
func renderSRT(cues []Cue, lines [][]string) ([]byte, error) {
	if len(cues) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := build(cues, lines, identity, nil).WriteToSRT(&buf); err != nil {
		return nil, fmt.Errorf("astisub: %w", err)
	}
	in, ok := bytes.CutPrefix(buf.Bytes(), astisub.BytesBOM)
	if !ok {
		return nil, errors.New("astisub output: expected a byte-order mark")
	}
	r := newLineReader(in)
	out := make([]byte, 0, len(in))
	for c, cue := range cues {
		var err error
		if out, err = appendCueHeader(out, r, c, cue, ','); err != nil {
			return nil, err
		}
		for _, t := range lines[c] {
			if err := r.expect(astisubEscape(t)); err != nil {
				return nil, err
			}
			out = append(append(out, srtEscape(t)...), '\n')
		}
	}
	if err := r.expectEnd(); err != nil {
		return nil, err
	}
	return out, nil
}

// appendCueHeader appends the index and timing lines of cue c (its index c+1, times with sep
// before the milliseconds), after the blank line that separates it from the previous cue, once
// r has found the same lines in astisub's output.
func appendCueHeader(out []byte, r *lineReader, c int, cue Cue, sep byte) ([]byte, error) {
	if c > 0 {
		if err := r.expect(""); err != nil {
			return nil, err
		}
		out = append(out, '\n')
	}
	// Written once to compare with astisub's lines, then again as the file's.
	mark := len(out)
	out = strconv.AppendInt(out, int64(c+1), 10)
	index := len(out)
	out = appendTiming(out, cue, sep)
	if err := r.expectBytes(out[mark:index], out[index:]); err != nil {
		return nil, err
	}
	out = append(out[:index], '\n')
	out = appendTiming(out, cue, sep)
	return append(out, '\n'), nil
}

// appendTiming appends a cue's "start --> end".
func appendTiming(b []byte, cue Cue, sep byte) []byte {
	b = appendTimestamp(b, cue.Start, sep)
	b = append(b, " --> "...)
	return appendTimestamp(b, cue.End, sep)
}

// renderVTT writes through astisub, then checks its output and completes it: > escaped as
// &gt;, voice spans closed in dual-speaker cues (astisub writes <v Name> without </v>, which
// WebVTT allows only when the span is the whole cue).
func renderVTT(cues []Cue, lines [][]string) ([]byte, error) {
	if len(cues) == 0 {
		return []byte("WEBVTT\n"), nil
	}
	voice := func(c Cue, l int) string {
		if l > 0 && !c.Dual {
			return "" // one voice span covers the whole cue
		}
		if l < len(c.Speakers) {
			return vttAnnotation(c.Speakers[l])
		}
		return ""
	}
	var buf bytes.Buffer
	if err := build(cues, lines, identity, voice).WriteToWebVTT(&buf); err != nil {
		return nil, fmt.Errorf("astisub: %w", err)
	}
	r := newLineReader(buf.Bytes())
	if err := r.expect("WEBVTT", ""); err != nil {
		return nil, err
	}
	out := make([]byte, 0, buf.Len()+buf.Len()/8)
	out = append(out, "WEBVTT\n\n"...)
	for c, cue := range cues {
		var err error
		if out, err = appendCueHeader(out, r, c, cue, '.'); err != nil {
			return nil, err
		}
		for l, t := range lines[c] {
			v := voice(cue, l)
			tag := ""
			if v != "" {
				tag = "<v " + v + ">"
			}
			if err := r.expect(tag + astisubEscape(t)); err != nil {
				return nil, err
			}
			out = append(append(out, tag...), vttEscape(t)...)
			if v != "" && cue.Dual {
				out = append(out, "</v>"...)
			}
			out = append(out, '\n')
		}
	}
	if err := r.expectEnd(); err != nil {
		return nil, err
	}
	return out, nil
}

// timestamp formats d as HH:MM:SS<sep>mmm (hours grow past two digits if needed).
func timestamp(d time.Duration, sep byte) string {
	return string(appendTimestamp(make([]byte, 0, 12), d, sep))
}

func appendTimestamp(b []byte, d time.Duration, sep byte) []byte {
	ms := int64(roundMS(d) / time.Millisecond)
	h := ms / 3600000
	if h < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, h, 10)
	m, s, f := ms/60000%60, ms/1000%60, ms%1000
	return append(b, ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10), sep,
		byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// lineReader checks astisub's output line by line, so that a change in astisub's writer
// fails loudly instead of producing a file our post-processing misreads.
type lineReader struct {
	rest []byte
	n    int
}

func newLineReader(b []byte) *lineReader { return &lineReader{rest: b} }

func (r *lineReader) expect(want ...string) error {
	for _, w := range want {
		line, rest, found := bytes.Cut(r.rest, []byte("\n"))
		r.n++
		if !found || string(line) != w {
			return fmt.Errorf("astisub output line %d: got %q, want %q", r.n, line, w)
		}
		r.rest = rest
	}
	return nil
}

// expectBytes is expect for lines held in byte slices.
func (r *lineReader) expectBytes(want ...[]byte) error {
	for _, w := range want {
		line, rest, found := bytes.Cut(r.rest, []byte("\n"))
		r.n++
		if !found || !bytes.Equal(line, w) {
			return fmt.Errorf("astisub output line %d: got %q, want %q", r.n, line, w)
		}
		r.rest = rest
	}
	return nil
}

func (r *lineReader) expectEnd() error {
	if len(r.rest) != 0 {
		return fmt.Errorf("astisub output line %d: unexpected %q", r.n+1, r.rest)
	}
	return nil
}
