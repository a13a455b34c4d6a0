package subtitles

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// Cue is one subtitle: whole-millisecond times and the lines as displayed, raw (escaping is
// the renderer's job).
type Cue struct {
	Start, End time.Duration
	// Lines as displayed: a dual-speaker cue's dashes and a speaker label are included, so
	// that every rule (characters per line, reading speed) counts what the viewer reads.
	Lines []string
	// Speakers holds the speaker name of each line ("" when unknown); both lines of a
	// dual-speaker cue have their own.
	Speakers []string
	// Dual marks a two-speaker cue: one line per speaker, each starting with "-".
	Dual bool
	// Label is the visible speaker prefix of Lines[0] ("Anna: "), if any.
	Label    string
	Language string
	// SpeechStart and SpeechEnd are the first word's start and the last word's end, from
	// which Start and End were derived (Check measures sync against them).
	SpeechStart, SpeechEnd time.Duration
}

// Text is the cue's lines joined by a line feed.
func (c Cue) Text() string { return strings.Join(c.Lines, "\n") }

// chars is the number of visible runes (line breaks not counted), the reading-speed basis.
func (c Cue) chars() int {
	n := 0
	for _, l := range c.Lines {
		n += utf8.RuneCountInString(l)
	}
	return n
}

// Segment turns utterances into cues following p. The second result lists the violations
// that cannot be helped (a word longer than a line, which gets a line to itself). Times in
// the utterances are seconds; cue times are whole milliseconds.
func Segment(utts []api.Utterance, p Profile) ([]Cue, []Violation, error) {
	// Utterances without a language take the first one given, so that a missing field does
	// not look like a language change (which ends a cue).
	return segmentLang(utts, p, firstLanguage(nil, utts))
}

// segmentLang is Segment with the language of utterances that carry none.
func segmentLang(utts []api.Utterance, p Profile, lang string) ([]Cue, []Violation, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("subtitles: segment: %w", err)
	}
	words, names := normalize(utts, p, lang)
	s := newSegmenter(words, names, p)
	cues, spans := s.build(s.run())
	return cues, s.unavoidable(cues, spans), nil
}

// span is one cue's words [i,j); dual is the first word of the second speaker of a
// dual-speaker cue, or -1.
type span struct{ i, j, dual int }

// Segmentation weights, in one unit: a cue costs cueBase, so the others read as "worth
// this many extra cues". Chosen so that a sentence end beats a plain break, a plain break
// beats splitting an article from its noun, and a short, unreadable cue is worth merging.
const (
	cueBase          = 8.0
	cpsWeight        = 60.0 // × the relative excess over MaxCPS (20 % too fast: 12)
	minDurWeight     = 40.0 // × the relative shortfall under MinDuration
	perWordWeight    = 20.0 // × the relative shortfall under MinPerWord × words
	orphanCueCost    = 15.0 // a one-word cue that could have joined a neighbour
	sentenceInside   = 3.0  // a sentence ends inside the cue
	pauseInsideBase  = 10.0 // a pause ≥ PausePrefer inside the cue…
	pauseInsideScale = 30.0 // …plus up to this much as it approaches PauseBreak
	dualBase         = 6.0  // a dual-speaker cue is harder to read than two cues…
	dualEarly        = 4.0  // …and shows the second speaker early: per second
	utteranceBonus   = 3.0  // the ASR's own utterance boundary is a good cue break
	delayWeight      = 20.0 // per second the next cue must start after its first word
	// durationSquare × (seconds on screen)² makes equal cues cheaper than a long cue and a
	// short tail (two 4 s cues cost 8, a 7 s and a 1 s cue 12.5): balance across cues, as
	// line balance inside one.
	durationSquare = 0.25
)

// Break costs of the position between two words (see breakCost).
const (
	breakSentence = 0.0
	breakClause   = 3.0
	breakBefore   = 6.0 // before a conjunction or preposition
	breakPlain    = 12.0
	breakBadAfter = 20.0 // added after an article, preposition, conjunction or subject pronoun
)

type segmenter struct {
	p      Profile
	w      []word
	names  []string
	labels []string // per speaker: the visible label, "" when labels are off or do not fit

	gap, minDur, maxDur, maxExt, closeGap, frame time.Duration

	cum   []int // cum[t]: display length of words [0,t)
	off   []int // off[t]: cum[t] plus the separator before word t, so textLen(a,b) = cum[b]-off[a]
	st    []time.Duration
	en    []time.Duration // word starts and ends, contiguous for the inner loop
	cbrk  []float64       // cbrk[t]: cueBreakCost(t)
	brk   []float64       // brk[t]: cost of a break before word t (line or cue)
	hard  []bool          // hard[t]: a cue must end before word t (long pause, language change)
	turn  []bool          // turn[t]: the speaker changes at word t (t == 0 included)
	pcum  []float64       // pcum[t]: cost of the pauses before words 1…t if kept inside a cue
	longs []int           // longs[t]: words longer than a line among [0,t)
	sents []int           // sents[t]: sentence-ending words among [0,t)
	dual  bool
}

func newSegmenter(words []word, names []string, p Profile) *segmenter {
	n := len(words)
	s := &segmenter{
		p: p, w: words, names: names,
		gap:      p.MinGap(),
		minDur:   ceilMS(p.MinDuration),
		maxDur:   max(time.Millisecond, floorMS(p.MaxDuration)),
		maxExt:   floorMS(p.MaxExtend),
		closeGap: p.CloseGap,
		frame:    p.frame(),
		cum:      make([]int, n+1),
		off:      make([]int, n+1),
		st:       make([]time.Duration, n),
		en:       make([]time.Duration, n),
		cbrk:     make([]float64, n+1),
		brk:      make([]float64, n+1),
		hard:     make([]bool, n+1),
		turn:     make([]bool, n+1),
		pcum:     make([]float64, n+1),
		sents:    make([]int, n+1),
		longs:    make([]int, n+1),
		dual:     p.DualSpeaker && p.MaxLines >= 2,
	}
	s.minDur = min(s.minDur, s.maxDur)
	s.labels = make([]string, len(names))
	if p.SpeakerLabels {
		for i, name := range names {
			// A label longer than half a line would crowd out the words: leave it out.
			if l := name + ": "; name != "" && 2*utf8.RuneCountInString(l) <= p.MaxCharsPerLine {
				s.labels[i] = l
			}
		}
	}
	for t := range words {
		w := &words[t]
		s.st[t], s.en[t] = w.start, w.end
		s.off[t] = s.cum[t] + s.sep(t)
		s.cum[t+1] = s.off[t] + w.runes
		s.sents[t+1] = s.sents[t]
		if w.punct == punctSentence {
			s.sents[t+1]++
		}
		s.longs[t+1] = s.longs[t] + b2i(w.runes > p.MaxCharsPerLine)
		if t == 0 {
			s.turn[0] = true
			continue
		}
		prev := &words[t-1]
		pause := w.start - prev.end
		s.turn[t] = w.spk != prev.spk
		s.hard[t] = w.lang != prev.lang || (p.PauseBreak > 0 && pause >= p.PauseBreak)
		s.brk[t] = breakCost(prev, w)
		s.cbrk[t] = s.cueBreakCost(t)
		s.pcum[t] = s.pcum[t-1]
		if p.PausePrefer > 0 && pause >= p.PausePrefer && !s.hard[t] {
			frac := 1.0
			if p.PauseBreak > p.PausePrefer {
				frac = min(1, float64(pause-p.PausePrefer)/float64(p.PauseBreak-p.PausePrefer))
			}
			s.pcum[t] += pauseInsideBase + pauseInsideScale*frac
		}
	}
	return s
}

// breakCost is the cost of breaking a line or a cue between prev and w: best after a
// sentence end, then after a clause, then before a conjunction or preposition; worst right
// after a word that introduces what follows (N-BREAK−, B-BREAK−).
func breakCost(prev, w *word) float64 {
	switch prev.punct {
	case punctSentence:
		return breakSentence
	case punctClause:
		return breakClause
	}
	c := breakPlain
	if w.class&goodBefore != 0 {
		c = breakBefore
	}
	if prev.class&badAfter != 0 {
		c += breakBadAfter
	}
	return c
}

// cueBreakCost is breakCost at the end of a cue, cheaper at a pause (the viewer hears the
// break) and at the ASR's utterance boundary.
func (s *segmenter) cueBreakCost(j int) float64 {
	c := s.brk[j]
	if pp := s.p.PausePrefer; pp > 0 {
		pause := s.w[j].start - s.w[j-1].end
		c *= 1 - 0.8*min(1, float64(pause)/float64(pp))
	}
	if s.w[j].utt != s.w[j-1].utt {
		c = max(0, c-utteranceBonus)
	}
	return c
}

// labelAt is the label of a cue starting at word i (not dual), "" when none.
func (s *segmenter) labelAt(i int) string {
	if !s.turn[i] || s.w[i].spk < 0 {
		return ""
	}
	return s.labels[s.w[i].spk]
}

// cueLayout is the line layout of a single-speaker cue [i,j): its label (dropped for a
// single word that cannot fit with it), cost, and whether it fits. A word longer than a line
// "fits" on a line of its own: that case cannot be helped and is reported.
func (s *segmenter) cueLayout(i, j, lo int, out *[]int) (label string, cost float64, ok bool) {
	label = s.labelAt(i)
	cost, ok = s.layout(i, j, utf8.RuneCountInString(label), lo, out)
	if !ok && j-i == 1 {
		label, ok = "", true
		cost = 0
	}
	return label, cost, ok
}

// run is the dynamic programme over break positions: best[j] is the least cost of cutting
// words [0,j) into cues, trying every feasible last cue [i,j). A cue is infeasible when its
// lines cannot fit, its speech outlasts MaxDuration, or it crosses a hard boundary or a
// speaker change (except one, in a dual-speaker cue whose two parts fit one line each).
// Feasibility only shrinks as i moves left, so the inner loop stops at the first
// infeasible cue: the work is O(words × words per cue × words per cue).
func (s *segmenter) run() []span {
	n := len(s.w)
	cpl := s.p.MaxCharsPerLine
	best := make([]float64, n+1)
	from := make([]int, n+1)
	dualAt := make([]int, n+1)
	lo := 0 // the first word that can start the last line of a cue ending at j
	for j := 1; j <= n; j++ {
		best[j], from[j], dualAt[j] = math.Inf(1), j-1, -1
		for lo < j-1 && s.textLen(lo, j) > cpl {
			lo++
		}
		dual := -1
		for i := j - 1; i >= 0; i-- {
			if t := i + 1; t < j {
				if s.hard[t] {
					break
				}
				if s.turn[t] {
					if !s.dual || dual >= 0 || 1+s.textLen(t, j) > cpl {
						break
					}
					dual = t
				}
			}
			k := j - i
			if k > 1 && s.en[j-1]-s.st[i] > s.maxDur {
				break
			}
			var lc float64
			var chars int
			if dual >= 0 {
				l1 := 1 + s.textLen(i, dual)
				if l1 > cpl {
					break
				}
				chars = l1 + 1 + s.textLen(dual, j)
			} else {
				label, c, ok := s.cueLayout(i, j, lo, nil)
				if !ok {
					break
				}
				lc, chars = c, utf8.RuneCountInString(label)+s.textLen(i, j)
			}
			if c := best[i] + s.cueCost(i, j, dual, lc, chars); c < best[j] {
				best[j], from[j], dualAt[j] = c, i, dual
			}
		}
	}
	var spans []span
	for j := n; j > 0; j = from[j] {
		spans = append(spans, span{from[j], j, dualAt[j]})
	}
	for a, b := 0, len(spans)-1; a < b; a, b = a+1, b-1 {
		spans[a], spans[b] = spans[b], spans[a]
	}
	return spans
}

// cueCost is the cost of words [i,j) as one cue, given its layout cost and visible length.
func (s *segmenter) cueCost(i, j, dual int, layoutCost float64, chars int) float64 {
	n, k := len(s.w), j-i
	c := cueBase + layoutCost
	start, next := s.st[i], never
	if j < n {
		next = s.st[j]
	}
	need := s.need(chars, k)
	end := s.endFor(start, s.en[j-1], next, need)
	if s.hasLong(i, j) {
		end = max(end, start+s.minDur) // as the timing pass does; the delay it causes costs below
	}
	if end <= start {
		// As in the timing pass: the cue pushes the next one later, which costs (words packed
		// at one instant would otherwise favour one-word cues).
		end = s.packedEnd(start, 0, need)
	}
	if late := end + s.gap - next; next != never && late > 0 {
		c += delayWeight * late.Seconds()
	}
	d := end - start
	sec := float64(d) / float64(time.Second)
	c += durationSquare * sec * sec
	if cps := s.p.MaxCPS; cps > 0 {
		if r := float64(chars) / sec; r > cps {
			c += cpsWeight * (r/cps - 1)
		}
	}
	if s.minDur > 0 && d < s.minDur {
		c += minDurWeight * float64(s.minDur-d) / float64(s.minDur)
	}
	if mpw := s.p.MinPerWord; mpw > 0 {
		if want := time.Duration(k) * mpw; d < want {
			c += perWordWeight * float64(want-d) / float64(want)
		}
	}
	if j < n && !s.hard[j] && !s.turn[j] {
		c += s.cbrk[j]
	}
	c += s.pcum[j-1] - s.pcum[i]
	c += sentenceInside * float64(s.sents[j-1]-s.sents[i])
	if k == 1 && ((i > 0 && !s.hard[i] && !s.turn[i]) || (j < n && !s.hard[j] && !s.turn[j])) {
		c += orphanCueCost
	}
	if dual >= 0 {
		c += dualBase + dualEarly*(s.st[dual]-start).Seconds()
	}
	return c
}

// hasLong reports whether words [i,j) hold a word longer than a line. Such a cue is often
// cut short: the word is usually a URL or a code read out quickly, with the next word close
// behind, and it cannot share its line. The timing gives it MinDuration all the same.
func (s *segmenter) hasLong(i, j int) bool { return s.longs[j] > s.longs[i] }

// build turns spans into timed cues.
func (s *segmenter) build(spans []span) ([]Cue, []span) {
	cues := make([]Cue, len(spans))
	var sb strings.Builder
	var breaks []int
	for c, sp := range spans {
		cue := &cues[c]
		cue.Language = s.w[sp.i].lang
		cue.SpeechStart, cue.SpeechEnd = s.w[sp.i].start, s.w[sp.j-1].end
		if sp.dual >= 0 {
			cue.Dual = true
			cue.Lines = make([]string, 2)
			cue.Speakers = []string{s.name(sp.i), s.name(sp.dual)}
			for l, r := range [2][2]int{{sp.i, sp.dual}, {sp.dual, sp.j}} {
				sb.Reset()
				sb.WriteByte('-')
				s.joinWords(&sb, r[0], r[1])
				cue.Lines[l] = sb.String()
			}
			continue
		}
		breaks = breaks[:0]
		label, _, _ := s.cueLayout(sp.i, sp.j, 0, &breaks)
		cue.Label = label
		cue.Lines = make([]string, 0, len(breaks)+1)
		a := sp.i
		for _, b := range append(breaks, sp.j) {
			sb.Reset()
			if a == sp.i {
				sb.WriteString(label)
			}
			s.joinWords(&sb, a, b)
			cue.Lines = append(cue.Lines, sb.String())
			a = b
		}
		cue.Speakers = make([]string, len(cue.Lines))
		for l := range cue.Speakers {
			cue.Speakers[l] = s.name(sp.i)
		}
	}
	s.time(cues, spans)
	return cues, spans
}

func (s *segmenter) name(i int) string {
	if spk := s.w[i].spk; spk >= 0 {
		return s.names[spk]
	}
	return ""
}

// unavoidable lists the hard-rule violations the segmentation could not avoid: a word
// longer than a line, alone on its line (the layout lets no other line exceed the limit, and
// no label or dash onto such a line).
func (s *segmenter) unavoidable(cues []Cue, _ []span) []Violation {
	var out []Violation
	for c, cue := range cues {
		if cue.Dual {
			continue
		}
		for l, line := range cue.Lines {
			if n := utf8.RuneCountInString(line); n > s.p.MaxCharsPerLine {
				out = append(out, Violation{
					Rule: RuleCPL, Cue: c, Line: l, Hard: true,
					Value: float64(n), Limit: float64(s.p.MaxCharsPerLine),
					Detail: fmt.Sprintf("the word %q alone is longer than a line", line),
				})
			}
		}
	}
	return out
}
