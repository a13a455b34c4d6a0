package subtitles

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Rule identifiers of Violation.Rule.
const (
	RuleCPL         = "cpl"          // characters per line (hard)
	RuleLines       = "lines"        // lines per cue (hard)
	RuleMaxDuration = "max-duration" // (hard)
	RuleMinDuration = "min-duration" // MinDuration, and MinPerWord × words (soft)
	RuleCPS         = "cps"          // reading speed (soft)
	RuleGap         = "gap"          // gap shorter than MinGapFrames (hard)
	RuleOverlap     = "overlap"      // a cue starts before the previous one ends (hard)
	RuleOrder       = "order"        // a cue starts before the previous one starts (hard)
	RuleTiming      = "timing"       // end not after start, or negative start (hard)
	RuleText        = "text"         // empty line, stray spaces, "-->", control characters (hard)
	RuleDual        = "dual"         // a dual-speaker cue is not two "-" lines (hard)
	RuleOrphan      = "orphan"       // a one-word cue inside continuous speech, or a one-word line (soft)
	RuleBadBreak    = "bad-break"    // a line or cue ends on an article, preposition, conjunction or subject pronoun (soft)
	RuleOneLine     = "one-line"     // text that fits one line is split (soft)
	RuleSync        = "sync"         // a cue starts more than 3 frames after its speech (soft)
)

// hardRules are the rules a conforming file never breaks.
func isHard(rule string) bool {
	switch rule {
	case RuleCPL, RuleLines, RuleMaxDuration, RuleGap, RuleOverlap, RuleOrder, RuleTiming, RuleText, RuleDual:
		return true
	}
	return false
}

// Violation is one broken rule. Value and Limit are in the rule's unit: runes, lines,
// seconds, characters per second.
type Violation struct {
	Rule   string
	Cue    int // index in the cue slice
	Line   int // line index, -1 when the rule is about the whole cue or a pair of cues
	Hard   bool
	Value  float64
	Limit  float64
	Detail string
}

func (v Violation) String() string {
	kind := "soft"
	if v.Hard {
		kind = "hard"
	}
	s := fmt.Sprintf("%s (%s) cue %d", v.Rule, kind, v.Cue+1)
	if v.Line >= 0 {
		s += fmt.Sprintf(" line %d", v.Line+1)
	}
	s += fmt.Sprintf(": %g (limit %g)", v.Value, v.Limit)
	if v.Detail != "" {
		s += ": " + v.Detail
	}
	return s
}

// Rates are shares (0–1) of the units each rule is measured on: lines for CPL, pairs of
// consecutive cues for gap, overlap and order, line and cue breaks for bad breaks, cues
// otherwise.
type Rates struct {
	CPL         float64 `json:"cpl"`
	Lines       float64 `json:"lines"`
	CPS         float64 `json:"cps"`
	Duration    float64 `json:"duration"` // too short or too long
	MinDuration float64 `json:"min_duration"`
	MaxDuration float64 `json:"max_duration"`
	Gap         float64 `json:"gap"`
	Overlap     float64 `json:"overlap"`
	Order       float64 `json:"order"`
	Orphans     float64 `json:"orphans"`
	BadBreaks   float64 `json:"bad_breaks"`
	OneLine     float64 `json:"one_line"`
	Sync        float64 `json:"sync"`
}

// Report is the result of Check.
type Report struct {
	Cues, Lines, Pairs, Breaks int
	MeanCPS                    float64 // visible characters per second over all cues
	Violations                 []Violation
	Rates                      Rates
}

// Hard returns the hard-rule violations.
func (r Report) Hard() []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Hard {
			out = append(out, v)
		}
	}
	return out
}

// Count is the number of violations of a rule.
func (r Report) Count(rule string) int {
	n := 0
	for _, v := range r.Violations {
		if v.Rule == rule {
			n++
		}
	}
	return n
}

// Check measures cues against p: every violation, and the rates of each rule. Lengths are
// runes of the lines as displayed (labels and dashes included, markup never present since
// cue text is raw); reading speed is the cue's visible runes over its duration.
func Check(cues []Cue, p Profile) Report {
	r := Report{Cues: len(cues)}
	add := func(rule string, cue, line int, value, limit float64, detail string) {
		r.Violations = append(r.Violations, Violation{Rule: rule, Cue: cue, Line: line, Hard: isHard(rule),
			Value: value, Limit: limit, Detail: detail})
	}
	minGap := time.Duration(0)
	if p.FrameRate > 0 {
		minGap = time.Duration(float64(p.MinGapFrames) * float64(time.Second) / p.FrameRate)
	}
	syncTolerance := time.Duration(0)
	if p.FrameRate > 0 {
		syncTolerance = time.Duration(3 * float64(time.Second) / p.FrameRate)
	}
	var n struct{ cpl, lines, cps, minDur, maxDur, dur, gap, overlap, order, orphan, bad, oneLine, sync int }
	var totalChars int
	var totalTime time.Duration
	for c, cue := range cues {
		d := cue.End - cue.Start
		r.Lines += len(cue.Lines)
		if cue.Start < 0 || d <= 0 {
			add(RuleTiming, c, -1, d.Seconds(), 0, fmt.Sprintf("start %v, end %v", cue.Start, cue.End))
		}
		if len(cue.Lines) == 0 {
			add(RuleText, c, -1, 0, 1, "no text")
		}
		if len(cue.Lines) > p.MaxLines {
			n.lines++
			add(RuleLines, c, -1, float64(len(cue.Lines)), float64(p.MaxLines), "")
		}
		words := cueWords(cue)
		chars := 0
		for l, line := range cue.Lines {
			runes := utf8.RuneCountInString(line)
			chars += runes
			if runes > p.MaxCharsPerLine {
				n.cpl++
				add(RuleCPL, c, l, float64(runes), float64(p.MaxCharsPerLine), line)
			}
			if problem := lineProblem(line); problem != "" {
				add(RuleText, c, l, 0, 0, problem)
			}
		}
		totalChars += chars
		if d > 0 {
			totalTime += d
		}
		tooShort, tooLong := false, false
		if d > p.MaxDuration {
			tooLong = true
			add(RuleMaxDuration, c, -1, d.Seconds(), p.MaxDuration.Seconds(), "")
		}
		if d < p.MinDuration {
			tooShort = true
			add(RuleMinDuration, c, -1, d.Seconds(), p.MinDuration.Seconds(), "")
		} else if want := time.Duration(len(words)) * p.MinPerWord; d < want {
			tooShort = true
			add(RuleMinDuration, c, -1, d.Seconds(), want.Seconds(), fmt.Sprintf("%d words", len(words)))
		}
		n.minDur += b2i(tooShort)
		n.maxDur += b2i(tooLong)
		n.dur += b2i(tooShort || tooLong)
		if p.MaxCPS > 0 && d > 0 {
			if cps := float64(chars) / d.Seconds(); cps > p.MaxCPS+1e-9 {
				n.cps++
				add(RuleCPS, c, -1, cps, p.MaxCPS, "")
			}
		}
		if cue.Dual {
			if len(cue.Lines) != 2 || !dualLine(cue.Lines[0]) || !dualLine(cue.Lines[1]) {
				add(RuleDual, c, -1, float64(len(cue.Lines)), 2, "a dual-speaker cue is two lines starting with \"-\"")
			}
		} else if len(cue.Lines) > 1 {
			if joined := utf8.RuneCountInString(strings.Join(cue.Lines, " ")); joined <= p.MaxCharsPerLine {
				n.oneLine++
				add(RuleOneLine, c, -1, float64(joined), float64(p.MaxCharsPerLine), "fits one line")
			}
			if len(words) >= 3 {
				for l, line := range cue.Lines {
					if lw := lineWords(cue, l, line); len(lw) == 1 && !strings.ContainsFunc(line, isCJK) {
						n.orphan++
						add(RuleOrphan, c, l, 1, 2, "one word alone on a line")
						break
					}
				}
			}
			list := wordListFor(cue.Language)
			for l := 0; l+1 < len(cue.Lines); l++ {
				r.Breaks++
				if lw := lineWords(cue, l, cue.Lines[l]); len(lw) > 0 && classify(list, lw[len(lw)-1])&badAfter != 0 {
					n.bad++
					add(RuleBadBreak, c, l, 0, 0, fmt.Sprintf("line ends on %q", lw[len(lw)-1]))
				}
			}
		}
		if cue.SpeechStart != 0 || cue.SpeechEnd != 0 {
			if late := cue.Start - cue.SpeechStart; late > syncTolerance {
				n.sync++
				add(RuleSync, c, -1, late.Seconds(), syncTolerance.Seconds(), "starts after its first word")
			}
		}
		// Pairs and cue breaks.
		if c == 0 {
			continue
		}
		prev := cues[c-1]
		r.Pairs++
		if cue.Start < prev.Start {
			n.order++
			add(RuleOrder, c, -1, cue.Start.Seconds(), prev.Start.Seconds(), "starts before the previous cue")
		}
		gap := cue.Start - prev.End
		switch {
		case gap < 0:
			n.overlap++
			add(RuleOverlap, c, -1, gap.Seconds(), 0, "overlaps the previous cue")
		case gap < minGap:
			n.gap++
			add(RuleGap, c, -1, gap.Seconds(), minGap.Seconds(), "")
		}
		if continues(prev, cue, p) {
			r.Breaks++
			if pw := cueWords(prev); len(pw) > 0 && classify(wordListFor(prev.Language), pw[len(pw)-1])&badAfter != 0 {
				n.bad++
				add(RuleBadBreak, c-1, -1, 0, 0, fmt.Sprintf("cue ends on %q", pw[len(pw)-1]))
			}
		}
	}
	// One-word cues inside continuous speech of one speaker.
	for c, cue := range cues {
		if cue.Dual || len(cueWords(cue)) != 1 {
			continue
		}
		if (c > 0 && continues(cues[c-1], cue, p)) || (c+1 < len(cues) && continues(cue, cues[c+1], p)) {
			n.orphan++
			add(RuleOrphan, c, -1, 1, 2, "one-word cue")
		}
	}
	share := func(k, of int) float64 {
		if of == 0 {
			return 0
		}
		return float64(k) / float64(of)
	}
	r.Rates = Rates{
		CPL: share(n.cpl, r.Lines), Lines: share(n.lines, r.Cues), CPS: share(n.cps, r.Cues),
		Duration: share(n.dur, r.Cues), MinDuration: share(n.minDur, r.Cues), MaxDuration: share(n.maxDur, r.Cues),
		Gap: share(n.gap, r.Pairs), Overlap: share(n.overlap, r.Pairs), Order: share(n.order, r.Pairs),
		Orphans: share(n.orphan, r.Cues), BadBreaks: share(n.bad, r.Breaks), OneLine: share(n.oneLine, r.Cues),
		Sync: share(n.sync, r.Cues),
	}
	if totalTime > 0 {
		r.MeanCPS = float64(totalChars) / totalTime.Seconds()
	}
	return r
}

// continues reports whether next carries on the speech of cur: same speaker, no dual cue,
// no pause of PauseBreak or more. Breaks between such cues are judged like line breaks.
func continues(cur, next Cue, p Profile) bool {
	if cur.Dual || next.Dual || (p.PauseBreak > 0 && next.Start-cur.End >= p.PauseBreak) {
		return false
	}
	return speakerAt(cur, len(cur.Speakers)-1) == speakerAt(next, 0)
}

func speakerAt(c Cue, l int) string {
	if l < 0 || l >= len(c.Speakers) {
		return ""
	}
	return c.Speakers[l]
}

// cueWords are the words of a cue as displayed, without label and dashes.
func cueWords(c Cue) []string {
	var out []string
	for l, line := range c.Lines {
		out = append(out, lineWords(c, l, line)...)
	}
	return out
}

func lineWords(c Cue, l int, line string) []string {
	if l == 0 && c.Label != "" {
		line = strings.TrimPrefix(line, c.Label)
	}
	if c.Dual {
		line = strings.TrimPrefix(line, "-")
	}
	return strings.Fields(line)
}

func dualLine(l string) bool {
	return len(l) > 1 && l[0] == '-' && l[1] != ' '
}

// lineProblem describes what would break a subtitle file or Netflix's whitespace rule.
func lineProblem(l string) string {
	switch {
	case l == "":
		return "empty line"
	case !utf8.ValidString(l):
		return "invalid UTF-8"
	case strings.Contains(l, "-->"):
		return `contains "-->"`
	case strings.HasPrefix(l, " ") || strings.HasSuffix(l, " "):
		return "leading or trailing space"
	case strings.Contains(l, "  "):
		return "double space"
	case strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' }):
		return "control character"
	}
	return ""
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
