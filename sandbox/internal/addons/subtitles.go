package addons

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// Subtitle formats and styles of subtitles_config, as in api.
const (
	FormatSRT = api.SubtitleFormatSRT
	FormatVTT = api.SubtitleFormatVTT

	StyleDefault    = api.SubtitleStyleDefault
	StyleCompliance = api.SubtitleStyleCompliance
)

// Defaults and bounds of subtitles_config (provider-facts.md).
const (
	DefaultMaxCharsPerRow  = 42
	DefaultMaxRows         = 2
	DefaultMinDuration     = 1.0
	DefaultMaxDuration     = 7.0
	MaxDurationLowerBound  = 1.0
	MaxDurationUpperBound  = 30.0
	MaxRowsUpperBound      = 5
	ComplianceMaxReadSpeed = 20.0 // characters per second in style compliance
)

// CuePause is the silence between two words that always starts a new cue: a cue left on screen
// over a long silence reads as if it belonged to the speech after it.
const CuePause = 2.0

// SubtitleSettings is a resolved subtitles_config: every field set and within bounds.
type SubtitleSettings struct {
	Formats        []string
	MaxCharsPerRow int
	MaxRows        int
	MinDuration    float64
	MaxDuration    float64
	Style          string
}

// ResolveSubtitles returns the settings of c, taking the default for every absent or invalid
// field (the sandbox's HTTP layer rejects invalid configs first, with api's Validate). A
// minimum duration above the maximum is lowered to it, since no cue can satisfy both. Formats
// keep their order, lower-cased, without repeats.
func ResolveSubtitles(c *api.SubtitlesConfig) SubtitleSettings {
	s := SubtitleSettings{MinDuration: -1} // -1: the default, while an explicit 0 stays 0
	if c == nil {
		return s.sane()
	}
	s.Formats = c.Formats
	if c.MaximumCharactersPerRow != nil {
		s.MaxCharsPerRow = *c.MaximumCharactersPerRow
	}
	if c.MaximumRowsPerCaption != nil {
		s.MaxRows = *c.MaximumRowsPerCaption
	}
	if c.MinimumDuration != nil {
		s.MinDuration = *c.MinimumDuration
	}
	if c.MaximumDuration != nil {
		s.MaxDuration = *c.MaximumDuration
	}
	s.Style = c.Style
	return s.sane()
}

// sane replaces every invalid field by its default. A zero MinDuration is valid and kept; the
// zero SubtitleSettings therefore means the defaults except a minimum duration of 0.
func (s SubtitleSettings) sane() SubtitleSettings {
	var formats []string
	for _, f := range s.Formats {
		f = strings.ToLower(strings.TrimSpace(f))
		if (f == FormatSRT || f == FormatVTT) && !contains(formats, f) {
			formats = append(formats, f)
		}
	}
	if len(formats) == 0 {
		formats = []string{FormatSRT}
	}
	s.Formats = formats
	if s.MaxCharsPerRow < 1 {
		s.MaxCharsPerRow = DefaultMaxCharsPerRow
	}
	if s.MaxRows < 1 || s.MaxRows > MaxRowsUpperBound {
		s.MaxRows = DefaultMaxRows
	}
	if !(s.MaxDuration >= MaxDurationLowerBound && s.MaxDuration <= MaxDurationUpperBound) {
		s.MaxDuration = DefaultMaxDuration
	}
	if !(s.MinDuration >= 0) || math.IsInf(s.MinDuration, 0) {
		s.MinDuration = DefaultMinDuration
	}
	s.MinDuration = min(s.MinDuration, s.MaxDuration)
	if s.Style != StyleCompliance {
		s.Style = StyleDefault
	}
	return s
}

// Cue is one subtitle: its rows of text and its display times in seconds.
type Cue struct {
	Start, End float64
	Lines      []string
}

// Cues segments the transcript into cues, utterance by utterance in the order of their start
// times (a cue never holds two utterances, so never two speakers). Words fill rows greedily and
// are never split; a word longer than a row gets a row of its own. A new cue starts when the
// rows are full, when the cue would last longer than MaxDuration, after a silence of CuePause,
// and in style compliance when the cue would be read faster than ComplianceMaxReadSpeed
// (characters, row breaks counted as one, over the longer of its word span and MinDuration).
//
// A cue lasts from its first word's start to its last word's end, cut at MaxDuration, then
// lengthened to MinDuration but never past the start of the next cue.
func Cues(t *api.Transcription, s SubtitleSettings) []Cue {
	if t == nil {
		return nil
	}
	s = s.sane()
	var cues []Cue
	for _, ui := range orderedUtterances(t) {
		cues = append(cues, utteranceCues(displayWords(&t.Utterances[ui]), s)...)
	}
	sort.SliceStable(cues, func(i, j int) bool { return cues[i].Start < cues[j].Start })
	for i := range cues {
		c := &cues[i]
		if c.End-c.Start >= s.MinDuration {
			continue
		}
		target := c.Start + s.MinDuration
		if i+1 < len(cues) {
			target = min(target, cues[i+1].Start)
		}
		c.End = max(c.End, target)
	}
	return cues
}

func utteranceCues(ws []timedWord, s SubtitleSettings) []Cue {
	var cues []Cue
	// The open cue, kept as words per row with running counts so that a huge row limit does
	// not make filling quadratic.
	var (
		start   float64
		rows    [][]string
		rowLen  int // runes of the last row
		chars   int // runes of the cue, a row break counting as one
		lastEnd float64
	)
	closeCue := func() {
		c := Cue{Start: start, End: min(max(lastEnd, start), start+s.MaxDuration)}
		for _, r := range rows {
			c.Lines = append(c.Lines, strings.Join(r, " "))
		}
		cues = append(cues, c)
	}
	for _, w := range ws {
		n := utf8.RuneCountInString(w.text)
		if len(rows) > 0 {
			span := w.end - start
			fits := span <= s.MaxDuration && w.start-lastEnd < CuePause &&
				(s.Style != StyleCompliance ||
					float64(chars+1+n) <= ComplianceMaxReadSpeed*max(span, s.MinDuration))
			if fits && rowLen+1+n <= s.MaxCharsPerRow {
				rows[len(rows)-1] = append(rows[len(rows)-1], w.text)
				rowLen, chars, lastEnd = rowLen+1+n, chars+1+n, max(lastEnd, w.end)
				continue
			}
			if fits && len(rows) < s.MaxRows {
				rows = append(rows, []string{w.text})
				rowLen, chars, lastEnd = n, chars+1+n, max(lastEnd, w.end)
				continue
			}
			closeCue()
		}
		start, rows = w.start, [][]string{{w.text}}
		rowLen, chars, lastEnd = n, n, w.end
	}
	if len(rows) > 0 {
		closeCue()
	}
	return cues
}

// RenderSRT writes cues as SubRip: blocks numbered from 1, times HH:MM:SS,mmm, LF line ends, a
// blank line between blocks, no BOM. "-->" inside text becomes "->" since it would break the
// timing line of readers that scan for it.
func RenderSRT(cues []Cue) string {
	var b strings.Builder
	for i, c := range cues {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d\n%s --> %s\n", i+1, timestamp(c.Start, ','), timestamp(c.End, ','))
		for _, l := range c.Lines {
			b.WriteString(strings.ReplaceAll(l, "-->", "->"))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// RenderVTT writes cues as WebVTT: the WEBVTT header and a blank line, then blocks with times
// HH:MM:SS.mmm separated by blank lines, LF line ends, no BOM; & < > are escaped as the cue text
// syntax requires (which also removes every "-->").
func RenderVTT(cues []Cue) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n")
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for _, c := range cues {
		fmt.Fprintf(&b, "\n%s --> %s\n", timestamp(c.Start, '.'), timestamp(c.End, '.'))
		for _, l := range c.Lines {
			b.WriteString(esc.Replace(l))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// timestamp writes seconds as HH:MM:SS followed by sep and milliseconds, rounded to the
// nearest millisecond; negative and non-finite times are written as zero.
func timestamp(sec float64, sep byte) string {
	ms := int64(0)
	if sec > 0 && !math.IsInf(sec, 0) {
		ms = int64(math.Round(sec * 1000))
	}
	return fmt.Sprintf("%02d:%02d:%02d%c%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

// Subtitles renders the transcript in every format of c (default srt), in the order c lists
// them.
func Subtitles(t *api.Transcription, c *api.SubtitlesConfig) []api.Subtitle {
	s := ResolveSubtitles(c)
	cues := Cues(t, s)
	out := make([]api.Subtitle, 0, len(s.Formats))
	for _, f := range s.Formats {
		text := RenderSRT(cues)
		if f == FormatVTT {
			text = RenderVTT(cues)
		}
		out = append(out, api.Subtitle{Format: f, Subtitles: text})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
