package addons

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// Speller applies a custom_spelling_config: every variant, matched case-insensitively on whole
// words, becomes its target spelling. A variant may span several words ("gee pee tee"); its
// words must then be separated by spaces only, so that a replacement never swallows a comma or
// a sentence end. Punctuation in variants is ignored (only their letters and digits are
// matched), and punctuation around a match in the transcript is kept.
//
// The zero Speller and a Speller from a nil config change nothing.
type Speller struct {
	rules []spellRule
}

type spellRule struct {
	target string
	tokens []string
}

// NewSpeller compiles cfg. Longer variants win over shorter ones at the same place (so that
// "new york city" is not first eaten by "new york"); among equally long variants the smaller
// target, then the smaller variant wins, so that the map order of the config never matters.
func NewSpeller(cfg *api.CustomSpellingConfig) *Speller {
	s := &Speller{}
	if cfg == nil {
		return s
	}
	for target, variants := range cfg.SpellingDictionary {
		if strings.TrimSpace(target) == "" {
			continue
		}
		for _, v := range variants {
			toks := tokenize(v)
			if len(toks) == 0 {
				continue
			}
			words := make([]string, len(toks))
			for i, t := range toks {
				words[i] = t.text
			}
			s.rules = append(s.rules, spellRule{target: strings.TrimSpace(target), tokens: words})
		}
	}
	sort.SliceStable(s.rules, func(i, j int) bool {
		a, b := s.rules[i], s.rules[j]
		if len(a.tokens) != len(b.tokens) {
			return len(a.tokens) > len(b.tokens)
		}
		if a.target != b.target {
			return a.target < b.target
		}
		return strings.Join(a.tokens, " ") < strings.Join(b.tokens, " ")
	})
	return s
}

// Empty reports whether the speller has no rule.
func (s *Speller) Empty() bool { return s == nil || len(s.rules) == 0 }

// Text returns text with every variant replaced.
func (s *Speller) Text(text string) string {
	if s.Empty() {
		return text
	}
	toks := tokenize(text)
	var b strings.Builder
	last := 0 // bytes of text already written
	for i := 0; i < len(toks); {
		r, ok := s.matchText(text, toks, i)
		if !ok {
			i++
			continue
		}
		k := len(r.tokens)
		b.WriteString(text[last:toks[i].start])
		b.WriteString(r.target)
		last = skipRepeatedPunct(r.target, text, toks[i+k-1].end)
		i += k
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

func (s *Speller) matchText(text string, toks []span, i int) (spellRule, bool) {
rules:
	for _, r := range s.rules {
		if i+len(r.tokens) > len(toks) {
			continue
		}
		for j, want := range r.tokens {
			if !strings.EqualFold(toks[i+j].text, want) {
				continue rules
			}
			if j > 0 && !onlySpace(text[toks[i+j-1].end:toks[i+j].start]) {
				continue rules
			}
		}
		return r, true
	}
	return spellRule{}, false
}

// Words returns a copy of words with every variant replaced. A multi-word match becomes one
// word that spans from the first word's start to the last word's end, with the mean confidence
// of the words it replaces; the first word's leading space and punctuation and the last word's
// trailing punctuation are kept; the engine's unknown fields of replaced words are dropped.
func (s *Speller) Words(words []api.Word) []api.Word {
	if words == nil {
		return nil
	}
	out := make([]api.Word, 0, len(words))
	if s.Empty() {
		return append(out, words...)
	}
	for i := 0; i < len(words); {
		r, ok := s.matchWords(words, i)
		if !ok {
			out = append(out, words[i])
			i++
			continue
		}
		k := len(r.tokens)
		first, lastW := words[i], words[i+k-1]
		lead, _, _ := splitCore(first.Word)
		_, _, trail := splitCore(lastW.Word)
		conf := 0.0
		for _, w := range words[i : i+k] {
			conf += w.Confidence
		}
		out = append(out, api.Word{
			Word:       lead + r.target + trail[skipRepeatedPunct(r.target, trail, 0):],
			Start:      first.Start,
			End:        lastW.End,
			Confidence: conf / float64(k),
			// No Extra: unknown engine fields (a "punctuated" form, say) describe the old
			// spelling.
		})
		i += k
	}
	return out
}

func (s *Speller) matchWords(words []api.Word, i int) (spellRule, bool) {
rules:
	for _, r := range s.rules {
		k := len(r.tokens)
		if i+k > len(words) {
			continue
		}
		for j, want := range r.tokens {
			lead, core, trail := splitCore(words[i+j].Word)
			if !strings.EqualFold(core, want) {
				continue rules
			}
			// Inside a multi-word match only spaces may separate the words.
			if j > 0 && !onlySpace(lead) || j < k-1 && trail != "" {
				continue rules
			}
		}
		return r, true
	}
	return spellRule{}, false
}

// Utterance returns a copy of u with its words and text spelled.
func (s *Speller) Utterance(u api.Utterance) api.Utterance {
	c := copyUtterance(u)
	if s.Empty() {
		return c
	}
	c.Words = s.Words(u.Words)
	c.Text = s.Text(u.Text)
	return c
}

// Transcription returns a copy of t with its utterances and full transcript spelled.
func (s *Speller) Transcription(t *api.Transcription) *api.Transcription {
	c := copyTranscription(t)
	if s.Empty() {
		return c
	}
	for i := range c.Utterances {
		c.Utterances[i] = s.Utterance(c.Utterances[i])
	}
	c.FullTranscript = s.Text(c.FullTranscript)
	return c
}

func onlySpace(s string) bool {
	return s != "" && strings.TrimFunc(s, unicode.IsSpace) == ""
}

// skipRepeatedPunct returns the offset in text after at, past a punctuation mark that the target
// already ends with: target "Dr." replacing "dr" in "dr. Smith" must not give "Dr.. Smith".
func skipRepeatedPunct(target, text string, at int) int {
	tr, _ := utf8.DecodeLastRuneInString(target)
	if tr == utf8.RuneError || isTokenRune(tr) || unicode.IsSpace(tr) {
		return at
	}
	nr, n := utf8.DecodeRuneInString(text[at:])
	if nr == tr {
		return at + n
	}
	return at
}
