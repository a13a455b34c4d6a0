package subtitles

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// word is one normalised word: clean text, whole-millisecond times with start ≤ end, no
// overlap with its neighbours, and what the segmentation needs to know about it.
type word struct {
	text        string
	runes       int
	start, end  time.Duration
	spk         int // index into the speaker names; -1 when unknown
	lang        string
	utt         int // index of the source utterance, to prefer cue breaks at utterance boundaries
	punct       punct
	class       wordClass
	tightBefore bool // joined to the previous word without a space (CJK)
}

// maxSeconds bounds accepted times (about 11.5 days): larger values are treated as missing,
// so that no conversion to time.Duration can overflow.
const maxSeconds = 1e6

// normalize flattens utterances into one word stream ordered by time, repairing what ASR
// output gets wrong:
//
//   - words without times (NaN, negative, huge, or 0–0 inside a timed utterance) get times
//     interpolated between their neighbours, in proportion to their length;
//   - an utterance without words is split from its text and spread over its time span
//     (translations come this way);
//   - within an utterance the text order is kept and starts are made non-decreasing;
//     utterances are then merged by start time (stable), which interleaves overlapping
//     speakers at word level instead of delaying one of them;
//   - end ≥ start, an overlap with the next word is trimmed, a zero-length word gets a short
//     length where there is room;
//   - text is made valid UTF-8 and single-spaced, control characters are removed, "-->" is
//     replaced by "→" (it would end a cue timing line), empty words are dropped.
//
// names holds the display name of each speaker index.
func normalize(utts []api.Utterance, p Profile, lang string) (words []word, names []string) {
	order := make([]int, len(utts))
	for i := range order {
		order[i] = i
	}
	key := func(u *api.Utterance) float64 {
		if validTime(u.Start) {
			return u.Start
		}
		for _, w := range u.Words {
			if validTime(w.Start) {
				return w.Start
			}
		}
		return math.Inf(1) // keeps its place among the untimed, after the timed
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(key(&utts[a]), key(&utts[b])) })

	sp := newSpeakerTable(utts, p)
	total := 0
	for i := range utts {
		total += max(len(utts[i].Words), 1)
	}
	words = make([]word, 0, total)
	var prevEnd time.Duration
	for _, ui := range order {
		u := &utts[ui]
		first := len(words)
		words = appendUtterance(words, u, prevEnd)
		l := lang
		if u.Language != "" {
			l = u.Language
		}
		spk := sp.index(u)
		list := wordListFor(l)
		for k := first; k < len(words); k++ {
			w := &words[k]
			w.spk, w.lang, w.utt = spk, l, ui
			w.punct = endPunct(w.text)
			w.class = classify(list, w.text)
		}
		if len(words) > first {
			prevEnd = max(prevEnd, words[len(words)-1].end)
		}
	}

	// Merge utterances by time. Starts are non-decreasing inside each utterance, so a stable
	// sort keeps every utterance's text order.
	byStart := func(a, b word) int { return cmp.Compare(a.start, b.start) }
	if !slices.IsSortedFunc(words, byStart) {
		slices.SortStableFunc(words, byStart)
	}
	for i := range words {
		w := &words[i]
		if i > 0 {
			prev := &words[i-1]
			if prev.end > w.start {
				prev.end = w.start
			}
			w.tightBefore = joinsTight(prev.text, w.text)
		}
	}
	// Give zero-length words a plausible length where the next word leaves room.
	for i := range words {
		w := &words[i]
		if w.end > w.start {
			continue
		}
		want := w.start + guessLength(w.runes)
		if i+1 < len(words) {
			want = min(want, words[i+1].start)
		}
		w.end = max(w.end, want)
	}
	return words, sp.names
}

// appendUtterance appends the cleaned words of u with repaired times. prevEnd is where the
// previous utterance ended, the anchor for times that cannot be known otherwise.
func appendUtterance(words []word, u *api.Utterance, prevEnd time.Duration) []word {
	uStart, uEnd := time.Duration(-1), time.Duration(-1)
	if validTime(u.Start) {
		uStart = seconds(u.Start)
	}
	if validTime(u.End) {
		uEnd = seconds(u.End)
	}
	first := len(words)
	known := make([]bool, 0, len(u.Words))
	if len(u.Words) == 0 {
		for _, t := range splitText(u.Text) {
			words = append(words, word{text: t, runes: utf8.RuneCountInString(t)})
			known = append(known, false)
		}
	} else {
		timed := uStart > 0 || uEnd > 0
		for _, aw := range u.Words {
			t := cleanText(aw.Word)
			if t == "" {
				continue
			}
			w := word{text: t, runes: utf8.RuneCountInString(t)}
			ok := validTime(aw.Start) && !(aw.Start == 0 && aw.End == 0 && timed && uStart > 0)
			if ok {
				w.start = seconds(aw.Start)
				w.end = w.start
				if validTime(aw.End) {
					w.end = seconds(aw.End)
				}
			}
			words = append(words, w)
			known = append(known, ok)
		}
	}
	ws := words[first:]
	if len(ws) == 0 {
		return words
	}
	lo := prevEnd
	if uStart >= 0 && (uStart > 0 || uEnd > 0) {
		lo = uStart
	}
	// Interpolate runs of words without times between their known neighbours.
	for i := 0; i < len(ws); {
		if known[i] {
			i++
			continue
		}
		j := i
		for j < len(ws) && !known[j] {
			j++
		}
		from := lo
		if i > 0 {
			from = ws[i-1].end
		}
		// Weights: each word's runes, plus one per space between words, plus one before the
		// next timed word; the run fills the time up to that word or to the utterance end.
		weight := j - i - 1
		for k := i; k < j; k++ {
			weight += ws[k].runes
		}
		var to time.Duration
		switch {
		case j < len(ws):
			to = ws[j].start
			weight++
		case uEnd > from:
			to = uEnd
		default:
			to = from + time.Duration(weight)*guessPerRune
		}
		if to < from {
			to = from
		}
		span, acc := to-from, 0
		for k := i; k < j; k++ {
			ws[k].start = from + roundMS(span*time.Duration(acc)/time.Duration(weight))
			acc += ws[k].runes
			ws[k].end = from + roundMS(span*time.Duration(acc)/time.Duration(weight))
			acc++
		}
		i = j
	}
	// Text order is authoritative inside an utterance: make starts non-decreasing.
	for i := range ws {
		if i > 0 && ws[i].start < ws[i-1].start {
			ws[i].start = ws[i-1].start
		}
		if ws[i].end < ws[i].start {
			ws[i].end = ws[i].start
		}
	}
	return words
}

// guessPerRune is the speaking time assumed per character when nothing better is known
// (about 15 characters per second, ordinary speech).
const guessPerRune = 65 * time.Millisecond

// guessLength is the length given to a word that has none.
func guessLength(runes int) time.Duration {
	return ceilMS(min(time.Duration(runes+1)*guessPerRune/2, time.Second))
}

func validTime(s float64) bool {
	return !math.IsNaN(s) && s >= 0 && s < maxSeconds
}

// speakerTable maps utterance speakers (or channels, when no speaker is known and the audio
// has several) to indices and display names.
type speakerTable struct {
	byChannel bool
	ids       map[int]int // speaker or channel number → index
	names     []string
	name      func(int) string
}

func newSpeakerTable(utts []api.Utterance, p Profile) *speakerTable {
	t := &speakerTable{ids: map[int]int{}, name: p.speakerName}
	anySpeaker := false
	channels := map[int]bool{}
	for i := range utts {
		if utts[i].Speaker != nil {
			anySpeaker = true
		}
		channels[utts[i].Channel] = true
	}
	if !anySpeaker && len(channels) > 1 {
		t.byChannel = true
		t.name = func(c int) string { return fmt.Sprintf("Channel %d", c+1) }
	}
	return t
}

func (t *speakerTable) index(u *api.Utterance) int {
	var n int
	switch {
	case t.byChannel:
		n = u.Channel
	case u.Speaker != nil:
		n = *u.Speaker
	default:
		return -1
	}
	if i, ok := t.ids[n]; ok {
		return i
	}
	i := len(t.names)
	t.ids[n] = i
	t.names = append(t.names, cleanText(t.name(n)))
	return i
}

// cleanText makes s valid, single-spaced, printable text that cannot break a subtitle file:
// control characters and line separators become spaces, a byte-order mark is dropped, and
// "-->" becomes "→" (also a leading "->", which a dual-speaker dash would turn into "-->").
func cleanText(s string) string { return noArrow(cleanLine(s)) }

// cleanLine is cleanText for a line as displayed, which may begin with a dual-speaker dash
// ("-" then a word starting with ">" is "->…"): only "-->" is replaced.
func cleanLine(s string) string {
	if isPlain(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r == '\uFEFF':
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return strings.ReplaceAll(b.String(), "-->", "→")
}

// noArrow replaces a leading "->": a dual-speaker dash before it would make "-->".
func noArrow(s string) string {
	if strings.HasPrefix(s, "->") {
		return "→" + s[2:]
	}
	return s
}

// isPlain is the fast path of cleanText: printable ASCII, no leading, trailing or double
// space, no arrow.
func isPlain(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return s == ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || (c == ' ' && s[i+1] == ' ') || (c == '-' && i+1 < len(s) && s[i+1] == '>') {
			return false
		}
	}
	return true
}

// splitText splits the text of an utterance without words into words: at spaces, and
// between characters of scripts written without spaces (a translation into Chinese or
// Japanese arrives as one long string). Punctuation stays with the character before it,
// an opening bracket with the one after it.
func splitText(text string) []string {
	var out []string
	for _, f := range strings.Fields(cleanText(text)) {
		f = noArrow(f)
		if !strings.ContainsFunc(f, isCJK) {
			out = append(out, f)
			continue
		}
		var cur strings.Builder
		pendingOpen := ""
		flush := func() {
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		}
		lastCJK := false
		for _, r := range f {
			letter := unicode.IsLetter(r) || unicode.IsDigit(r)
			switch {
			case isOpening(r):
				flush()
				pendingOpen += string(r)
				continue
			case !letter:
				if cur.Len() == 0 {
					pendingOpen += string(r)
					continue
				}
				cur.WriteRune(r)
				continue
			case isCJK(r) || lastCJK || cur.Len() == 0:
				flush()
			}
			if pendingOpen != "" {
				cur.WriteString(pendingOpen)
				pendingOpen = ""
			}
			cur.WriteRune(r)
			lastCJK = isCJK(r)
		}
		if pendingOpen != "" {
			cur.WriteString(pendingOpen)
		}
		flush()
	}
	return out
}

func isOpening(r rune) bool {
	switch r {
	case '(', '[', '{', '「', '『', '（', '“', '‘', '《', '〈', '【':
		return true
	}
	return false
}
