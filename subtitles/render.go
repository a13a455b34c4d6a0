package subtitles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/asticode/go-astisub"
)

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
