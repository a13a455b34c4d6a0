package addons

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// span is one token of a text: a run of letters, digits and marks, byte offsets into the text.
type span struct {
	start, end int
	text       string
}

func isTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

// isConnector reports the characters that stay inside a token when letters surround them, so
// that "don't", "O’Brien" and "e-mail" are one token each, as a reader sees them.
func isConnector(r rune) bool {
	return r == '\'' || r == '’' || r == '-'
}

// tokenize cuts s into tokens. Everything between tokens (spaces, punctuation) is a separator.
func tokenize(s string) []span {
	var out []span
	start := -1
	for i, r := range s {
		switch {
		case isTokenRune(r):
			if start < 0 {
				start = i
			}
		case start >= 0 && isConnector(r):
			next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
			if !isTokenRune(next) {
				out = append(out, span{start, i, s[start:i]})
				start = -1
			}
		default:
			if start >= 0 {
				out = append(out, span{start, i, s[start:i]})
				start = -1
			}
		}
	}
	if start >= 0 {
		out = append(out, span{start, len(s), s[start:]})
	}
	return out
}

// splitCore splits a word as the engine wrote it (" world," with its leading space) into what
// comes before its first token, the tokens, and what follows its last token.
func splitCore(w string) (lead, core, trail string) {
	toks := tokenize(w)
	if len(toks) == 0 {
		return w, "", ""
	}
	first, last := toks[0], toks[len(toks)-1]
	return w[:first.start], w[first.start:last.end], w[last.end:]
}

// cleanWord is a word as displayed: no surrounding space, no control characters inside (a line
// break inside a word would end a subtitle block early).
func cleanWord(w string) string {
	return strings.Join(strings.Fields(w), " ")
}

// isClosingPunct reports whether s is only marks that close what comes before them (",", "?!",
// ")."): engines that emit such a mark as a word of its own mean it to stick to the previous
// word. Other symbols ("&", "-->") stay words of their own.
func isClosingPunct(s string) bool {
	return s != "" && strings.Trim(s, `.,;:!?…)]}»”’"'%`) == ""
}

// timedWord is a displayable word with its times.
type timedWord struct {
	text       string
	start, end float64
}

// displayWords turns the words of an utterance into displayable words: trimmed, closing
// punctuation emitted as a word glued to the previous word. An utterance without words gets its text spread evenly over
// its time span, so that a transcript without word timings still yields cues and entries.
func displayWords(u *api.Utterance) []timedWord {
	var out []timedWord
	// pieces of the last word of out, joined once: += would make a run of marks quadratic.
	var pieces []string
	flush := func() {
		if len(pieces) > 1 {
			out[len(out)-1].text = strings.Join(pieces, "")
		}
	}
	for _, w := range u.Words {
		text := cleanWord(w.Word)
		if text == "" {
			continue
		}
		if len(out) > 0 && isClosingPunct(text) {
			pieces = append(pieces, text)
			out[len(out)-1].end = max(out[len(out)-1].end, w.End)
			continue
		}
		flush()
		out = append(out, timedWord{text: text, start: w.Start, end: max(w.End, w.Start)})
		pieces = append(pieces[:0], text)
	}
	flush()
	if len(out) > 0 || len(u.Words) > 0 {
		return out
	}
	return spreadText(u.Text, u.Start, max(u.End, u.Start))
}

// spreadText gives each whitespace-separated word of text a share of [start, end] proportional
// to its length.
func spreadText(text string, start, end float64) []timedWord {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return nil
	}
	total := 0
	for _, f := range fields {
		total += utf8.RuneCountInString(f)
	}
	out := make([]timedWord, 0, len(fields))
	pos := 0
	for _, f := range fields {
		n := utf8.RuneCountInString(f)
		s := start + (end-start)*float64(pos)/float64(total)
		e := start + (end-start)*float64(pos+n)/float64(total)
		out = append(out, timedWord{text: f, start: s, end: e})
		pos += n
	}
	return out
}

// joinWords writes displayable words as text.
func joinWords(ws []timedWord) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.text
	}
	return strings.Join(parts, " ")
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	for i, r := range s {
		if unicode.IsLetter(r) {
			return s[:i] + string(unicode.ToUpper(r)) + s[i+utf8.RuneLen(r):]
		}
		if isTokenRune(r) {
			return s // starts with a digit: nothing to capitalise
		}
	}
	return s
}

// orderedUtterances returns the indexes of t's utterances by start time, then channel; the
// engine's order breaks remaining ties so that the result is deterministic.
func orderedUtterances(t *api.Transcription) []int {
	idx := make([]int, len(t.Utterances))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ua, ub := &t.Utterances[idx[a]], &t.Utterances[idx[b]]
		if ua.Start != ub.Start {
			return ua.Start < ub.Start
		}
		return ua.Channel < ub.Channel
	})
	return idx
}

// copyTranscription deep-copies the parts of t that add-ons rewrite (utterances, words,
// speakers), so that Apply never changes its input.
func copyTranscription(t *api.Transcription) *api.Transcription {
	if t == nil {
		return &api.Transcription{Languages: []string{}, Utterances: []api.Utterance{}}
	}
	c := *t
	c.Languages = append([]string(nil), t.Languages...)
	c.Utterances = make([]api.Utterance, len(t.Utterances))
	for i := range t.Utterances {
		c.Utterances[i] = copyUtterance(t.Utterances[i])
	}
	c.Sentences = append([]api.Addon[[]string](nil), t.Sentences...)
	c.Subtitles = append([]api.Subtitle(nil), t.Subtitles...)
	return &c
}

func copyUtterance(u api.Utterance) api.Utterance {
	c := u
	if u.Words != nil {
		c.Words = make([]api.Word, len(u.Words))
		for i, w := range u.Words {
			c.Words[i] = w
		}
	}
	if u.Speaker != nil {
		c.Speaker = api.Int(*u.Speaker)
	}
	return c
}
