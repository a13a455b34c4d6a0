package subtitles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/asticode/go-astisub"
)

// Format is a subtitle file format Render writes.
type Format string

// Formats go-astisub can write.
const (
	SRT  Format = "srt"
	VTT  Format = "vtt"
	TTML Format = "ttml"
	SSA  Format = "ssa"
	ASS  Format = "ass"
	STL  Format = "stl" // EBU STL, binary
)

// Formats lists every format Render writes, SRT and WebVTT first.
func Formats() []Format { return []Format{SRT, VTT, TTML, SSA, ASS, STL} }

// ParseFormat accepts a format name or file extension, case-insensitive ("webvtt" and
// "dfxp" are aliases of vtt and ttml).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), ".")); f {
	case SRT, VTT, TTML, SSA, ASS, STL:
		return f, nil
	case "webvtt":
		return VTT, nil
	case "dfxp", "xml":
		return TTML, nil
	}
	return "", fmt.Errorf("subtitles: unknown format %q", s)
}

// Extension is the file extension, with its dot.
func (f Format) Extension() string { return "." + string(f) }

// ContentType is the media type to serve the format with.
func (f Format) ContentType() string {
	switch f {
	case SRT:
		return "application/x-subrip; charset=utf-8"
	case VTT:
		return "text/vtt; charset=utf-8"
	case TTML:
		return "application/ttml+xml; charset=utf-8"
	case SSA:
		return "text/x-ssa; charset=utf-8"
	case ASS:
		return "text/x-ass; charset=utf-8"
	}
	return "application/octet-stream"
}

// Options control Render.
type Options struct {
	CRLF bool // CRLF line endings (SRT, WebVTT, SSA/ASS, TTML); LF by default
	BOM  bool // start text formats with a UTF-8 byte-order mark; none by default
	// Title goes into the TTML metadata, the SSA script info and the STL header.
	Title string
	// Created is the STL creation and revision date. Zero writes 1970-01-01, so that the same
	// cues always give the same bytes.
	Created time.Time
}

// ErrInvalidCues is wrapped by Render's error when cues cannot make a valid file.
var ErrInvalidCues = errors.New("subtitles: invalid cues")

// Render writes cues in format f. Text is sanitised again (cues may come from elsewhere than
// Segment) and escaped per format: WebVTT escapes &, < and >; SRT writes text literally
// except where a player would read a tag or an entity. Cues must be sorted, start at or
// after 0 and end after they start. No cues give an empty SRT file, a bare "WEBVTT" header,
// and an error wrapping astisub.ErrNoSubtitlesToWrite for the other formats.
func Render(w io.Writer, cues []Cue, f Format, o Options) error {
	lines, err := renderLines(cues)
	if err != nil {
		return fmt.Errorf("subtitles: render %s: %w", f, err)
	}
	var out []byte
	switch f {
	case SRT:
		out, err = renderSRT(cues, lines)
	case VTT:
		out, err = renderVTT(cues, lines)
	case TTML:
		out, err = renderTTML(cues, lines, o)
	case SSA, ASS:
		out, err = renderSSA(cues, lines, o, f == ASS)
	case STL:
		out, err = renderSTL(cues, lines, o)
	default:
		err = fmt.Errorf("unknown format %q", f)
	}
	if err != nil {
		return fmt.Errorf("subtitles: render %s: %w", f, err)
	}
	if f != STL {
		if o.CRLF {
			out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
		}
		if o.BOM {
			out = append(append([]byte{}, astisub.BytesBOM...), out...)
		}
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("subtitles: render %s: %w", f, err)
	}
	return nil
}

// renderLines validates the cues' times and returns their sanitised lines.
func renderLines(cues []Cue) ([][]string, error) {
	out := make([][]string, len(cues))
	for c, cue := range cues {
		switch {
		case cue.Start < 0 || roundMS(cue.End) <= roundMS(cue.Start):
			return nil, fmt.Errorf("%w: cue %d runs from %v to %v", ErrInvalidCues, c+1, cue.Start, cue.End)
		case c > 0 && cue.Start < cues[c-1].Start:
			return nil, fmt.Errorf("%w: cue %d starts before cue %d", ErrInvalidCues, c+1, c)
		}
		for _, l := range cue.Lines {
			if l = cleanLine(l); l != "" {
				out[c] = append(out[c], l)
			}
		}
		if len(out[c]) == 0 {
			return nil, fmt.Errorf("%w: cue %d has no text", ErrInvalidCues, c+1)
		}
	}
	return out, nil
}

// build converts cues to astisub items, times rounded to the millisecond (astisub floors).
func build(cues []Cue, lines [][]string, text func(string) string, voice func(c Cue, l int) string) *astisub.Subtitles {
	total := 0
	for _, ls := range lines {
		total += len(ls)
	}
	// One allocation each for items, lines and line items: a 30,000-word transcript has
	// thousands of cues.
	items := make([]astisub.Item, len(cues))
	allLines := make([]astisub.Line, total)
	allItems := make([]astisub.LineItem, total)
	s := astisub.NewSubtitles()
	s.Items = make([]*astisub.Item, len(cues))
	k := 0
	for c, cue := range cues {
		it := &items[c]
		it.StartAt, it.EndAt = roundMS(cue.Start), roundMS(cue.End)
		it.Lines = allLines[k : k+len(lines[c]) : k+len(lines[c])]
		for l, t := range lines[c] {
			allItems[k] = astisub.LineItem{Text: text(t)}
			it.Lines[l].Items = allItems[k : k+1 : k+1]
			if voice != nil {
				it.Lines[l].VoiceName = voice(cue, l)
			}
			k++
		}
		s.Items[c] = it
	}
	return s
}

func identity(s string) string { return s }

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

func renderTTML(cues []Cue, lines [][]string, o Options) ([]byte, error) {
	s := build(cues, lines, identity, nil)
	s.Metadata = &astisub.Metadata{Language: astisubLanguage(cues), Title: o.Title}
	var buf bytes.Buffer
	if err := s.WriteToTTML(&buf); err != nil {
		return nil, fmt.Errorf("astisub: %w", err)
	}
	return append(buf.Bytes(), '\n'), nil
}

// renderSSA writes SSA (v4) or ASS (v4+) with one default style, the speaker in the Name
// field and hard line breaks (\N: astisub joins lines with \n, a soft break in ASS).
func renderSSA(cues []Cue, lines [][]string, o Options, ass bool) ([]byte, error) {
	voice := func(c Cue, l int) string {
		if l > 0 || len(c.Speakers) == 0 {
			return ""
		}
		names := c.Speakers[0]
		if c.Dual && len(c.Speakers) > 1 {
			names += " / " + c.Speakers[1]
		}
		return strings.Map(func(r rune) rune { // the Name field ends at a comma
			if r == ',' || r == '\\' {
				return ' '
			}
			return r
		}, names)
	}
	s := build(cues, lines, ssaText, voice)
	style := &astisub.Style{ID: "Default", InlineStyle: &astisub.StyleAttributes{
		SSAFontName:       "Arial",
		SSAFontSize:       ptr(20.0),
		SSAPrimaryColour:  &astisub.Color{Red: 255, Green: 255, Blue: 255},
		SSABackColour:     &astisub.Color{},
		SSAOutlineColour:  &astisub.Color{},
		SSABorderStyle:    ptr(1),
		SSAOutline:        ptr(2.0),
		SSAShadow:         ptr(0.0),
		SSAAlignment:      ptr(2), // bottom centre
		SSAMarginLeft:     ptr(10),
		SSAMarginRight:    ptr(10),
		SSAMarginVertical: ptr(10),
	}}
	s.Styles[style.ID] = style
	for _, it := range s.Items {
		it.Style = style
	}
	s.Metadata = &astisub.Metadata{Title: o.Title, SSAScriptType: "v4.00", SSAPlayResX: ptr(384), SSAPlayResY: ptr(288)}
	if ass {
		s.Metadata.SSAScriptType = "v4.00+"
	}
	var buf bytes.Buffer
	if err := s.WriteToSSA(&buf); err != nil {
		return nil, fmt.Errorf("astisub: %w", err)
	}
	out := buf.Bytes()
	var fixed []byte
	for len(out) > 0 {
		line, rest, _ := bytes.Cut(out, []byte("\n"))
		if bytes.HasPrefix(line, []byte("Dialogue: ")) {
			line = bytes.ReplaceAll(line, []byte(`\n`), []byte(`\N`))
		}
		fixed = append(append(fixed, line...), '\n')
		out = rest
	}
	return fixed, nil
}

// ssaText keeps override blocks and escapes out of SSA text: braces start override tags
// and a backslash starts \N, \n or \h.
func ssaText(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '{':
			return '('
		case '}':
			return ')'
		case '\\':
			return '⧵'
		}
		return r
	}, s)
}

// renderSTL writes EBU STL with open subtitles (no Teletext 40-column limit) at 25 fps, the
// frame rate STL files are usually exchanged at (astisub also knows 30); times are floored to
// frames by astisub, which keeps gaps of 2 frames at 24 fps (84 ms) at least 1 frame.
func renderSTL(cues []Cue, lines [][]string, o Options) ([]byte, error) {
	created := o.Created
	if created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	longest := 0
	for c := range lines {
		for l, t := range lines[c] {
			lines[c][l] = stlText(t)
			longest = max(longest, utf8.RuneCountInString(lines[c][l]))
		}
		if n := len(strings.Join(lines[c], "\n")); n > 112 {
			return nil, fmt.Errorf("%w: cue %d has %d bytes of text, more than an STL block holds (112)", ErrInvalidCues, c+1, n)
		}
	}
	s := build(cues, lines, identity, nil)
	s.Metadata = &astisub.Metadata{
		Framerate:              25,
		Language:               astisubLanguage(cues),
		Title:                  o.Title,
		STLCreationDate:        &created,
		STLRevisionDate:        &created,
		STLDisplayStandardCode: "0",
		STLMaximumNumberOfDisplayableCharactersInAnyTextRow: ptr(min(max(longest, 40), 99)),
		STLMaximumNumberOfDisplayableRows:                   ptr(23),
	}
	var buf bytes.Buffer
	if err := s.WriteToSTL(&buf); err != nil {
		return nil, fmt.Errorf("astisub: %w", err)
	}
	return buf.Bytes(), nil
}

// stlText keeps what astisub can encode in STL's Latin alphabet (ISO 6937): ASCII, Latin-1
// and Latin Extended-A letters (astisub decomposes their accents) and the symbols it maps.
// Anything else (emoji, CJK) would be truncated to a wrong byte, and a lone combining accent
// at the start of a line makes astisub panic, so both become "?" or are dropped.
func stlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f, r >= 0xa0 && r <= 0x17f:
			b.WriteRune(r)
		case r >= 0x300 && r <= 0x36f: // combining accent: dropped
		case strings.ContainsRune("‘’“”←↑→↓―♪™Ω⅛⅜⅝⅞", r):
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// astisubLanguage maps the cues' language to the few astisub knows (TTML xml:lang, STL).
func astisubLanguage(cues []Cue) string {
	if len(cues) == 0 {
		return ""
	}
	base, _, _ := strings.Cut(strings.ToLower(cues[0].Language), "-")
	switch base {
	case "en":
		return astisub.LanguageEnglish
	case "fr":
		return astisub.LanguageFrench
	case "zh":
		return astisub.LanguageChinese
	case "ja":
		return astisub.LanguageJapanese
	case "no", "nb", "nn":
		return astisub.LanguageNorwegian
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

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

// astisubEscape is what astisub writes for text in SRT and WebVTT.
func astisubEscape(s string) string {
	if !needsEscape(s, 0xc2) { // 0xc2: first byte of U+00A0
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '\u00a0':
			b.WriteString("&nbsp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// needsEscape reports whether s has '&', '<' or the extra byte (a byte loop: ContainsAny
// with a non-ASCII set is slow, and this runs for every line).
func needsEscape(s string, extra byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '&' || c == '<' || c == extra {
			return true
		}
	}
	return false
}

// vttEscape escapes cue text for WebVTT: &, < and > always.
func vttEscape(s string) string {
	if !needsEscape(s, '>') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// vttAnnotation makes a speaker name safe inside <v …>: no line breaks, no raw &, < or >.
func vttAnnotation(name string) string {
	return vttEscape(cleanText(name))
}

// srtEscape writes SRT text literally, escaping only what an HTML-ish SRT reader (astisub,
// most players) would take for markup: "<" before a letter, "/" or "!" (a tag), and "&"
// before something that reads as an entity. "AT&T" and "<3" stay as they are.
func srtEscape(s string) string {
	if !strings.ContainsAny(s, "&<") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '<' && i+1 < len(s) && isTagStart(s[i+1]):
			b.WriteString("&lt;")
		case c == '&' && looksLikeEntity(s[i+1:]):
			b.WriteString("&amp;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isTagStart(c byte) bool {
	return c == '/' || c == '!' || c == '?' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// looksLikeEntity reports text after "&" that an HTML reader could decode: "#…", a name
// followed by ";", or one of the legacy names browsers decode without ";".
func looksLikeEntity(s string) bool {
	if strings.HasPrefix(s, "#") {
		return true
	}
	n := 0
	for n < len(s) && (('a' <= s[n] && s[n] <= 'z') || ('A' <= s[n] && s[n] <= 'Z') || ('0' <= s[n] && s[n] <= '9')) {
		n++
	}
	if n == 0 {
		return false
	}
	if n < len(s) && s[n] == ';' {
		return true
	}
	for _, legacy := range []string{"amp", "lt", "gt", "quot", "nbsp", "copy", "reg", "AMP", "LT", "GT", "QUOT"} {
		if strings.HasPrefix(s, legacy) {
			return true
		}
	}
	return false
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
