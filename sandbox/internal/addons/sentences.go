package addons

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// SentencePause is the silence between two words that ends a sentence when the transcript has
// no punctuation at all (an engine that does not punctuate still pauses between sentences).
const SentencePause = 0.7

// Sentence is one sentence of a transcript, with the times of its words.
type Sentence struct {
	Text       string
	Start, End float64
	Channel    int
	Speaker    *int
	Utterance  int // index in the transcription's utterances
}

// abbreviations end with a full stop that does not end a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "sr": true, "jr": true,
	"st": true, "vs": true, "mt": true,
}

// SplitSentences cuts the transcript into sentences, utterance by utterance in the order of
// their start times; a sentence never spans two utterances.
//
// When any utterance text contains . ? or !, the transcript counts as punctuated and each
// utterance text is cut after a run of those marks (plus closing quotes and brackets) that is
// followed by a space or the end; a remainder without a final mark is a sentence too. Sentence
// times come from the utterance's words, matched to the text by counting tokens.
//
// Otherwise the words are cut at every silence of SentencePause or more, and each sentence is
// written with a capital first letter and a final full stop.
func SplitSentences(t *api.Transcription) []Sentence {
	if t == nil {
		return nil
	}
	punctuated := false
	for i := range t.Utterances {
		if strings.ContainsAny(t.Utterances[i].Text, ".?!") {
			punctuated = true
			break
		}
	}
	var out []Sentence
	for _, ui := range orderedUtterances(t) {
		u := &t.Utterances[ui]
		var ss []Sentence
		if punctuated {
			ss = punctuatedSentences(u)
		} else {
			ss = pausedSentences(u)
		}
		for i := range ss {
			ss[i].Channel = u.Channel
			if u.Speaker != nil {
				ss[i].Speaker = api.Int(*u.Speaker)
			}
			ss[i].Utterance = ui
		}
		out = append(out, ss...)
	}
	return out
}

// SentenceTexts returns the texts of ss.
func SentenceTexts(ss []Sentence) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Text
	}
	return out
}

func pausedSentences(u *api.Utterance) []Sentence {
	ws := displayWords(u)
	var out []Sentence
	begin := 0
	for i := 1; i <= len(ws); i++ {
		if i < len(ws) && ws[i].start-ws[i-1].end < SentencePause {
			continue
		}
		part := ws[begin:i]
		out = append(out, Sentence{
			Text:  finishSentence(joinWords(part)),
			Start: part[0].start,
			End:   part[len(part)-1].end,
		})
		begin = i
	}
	return out
}

// finishSentence capitalises s and ends it with a full stop unless it already ends with a mark.
func finishSentence(s string) string {
	s = capitalize(s)
	r, _ := utf8.DecodeLastRuneInString(s)
	if r == utf8.RuneError || strings.ContainsRune(".?!…", r) {
		return s
	}
	return s + "."
}

func isTerminal(r rune) bool { return r == '.' || r == '?' || r == '!' || r == '…' }

func isCloser(r rune) bool { return strings.ContainsRune(`"'”’»)]}`, r) }

// splitText cuts a punctuated text into trimmed sentences.
func splitText(text string) []string {
	var out []string
	begin := 0
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isTerminal(r) {
			i += n
			continue
		}
		end := i + n
		for end < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[end:])
			if !isTerminal(r2) && !isCloser(r2) {
				break
			}
			end += n2
		}
		next, _ := utf8.DecodeRuneInString(text[end:])
		if end < len(text) && !unicode.IsSpace(next) || r == '.' && end == i+n && isAbbreviation(text[begin:i]) {
			i = end
			continue
		}
		if s := strings.TrimSpace(text[begin:end]); s != "" {
			out = append(out, s)
		}
		begin, i = end, end
	}
	if s := strings.TrimSpace(text[begin:]); s != "" {
		out = append(out, s)
	}
	return out
}

// isAbbreviation reports whether before (the text before a full stop) ends with an abbreviation.
func isAbbreviation(before string) bool {
	toks := tokenize(before)
	if len(toks) == 0 || toks[len(toks)-1].end != len(before) {
		return false
	}
	return abbreviations[strings.ToLower(toks[len(toks)-1].text)]
}

// punctuatedSentences splits the utterance text and gives each sentence the times of its words:
// a sentence of n tokens takes the next words until they hold n tokens. When the words run out
// (or the utterance has none), the times are interpolated over the utterance by text position.
func punctuatedSentences(u *api.Utterance) []Sentence {
	texts := splitText(u.Text)
	if len(texts) == 0 {
		return nil
	}
	ws := displayWords(u)
	counts := make([]int, len(ws))
	for i, w := range ws {
		counts[i] = len(tokenize(w.text))
	}
	totalRunes := 0
	for _, s := range texts {
		totalRunes += utf8.RuneCountInString(s)
	}
	span := max(u.End, u.Start) - u.Start
	out := make([]Sentence, 0, len(texts))
	wi, pos := 0, 0
	for si, text := range texts {
		n := utf8.RuneCountInString(text)
		s := Sentence{
			Text:  text,
			Start: u.Start + span*float64(pos)/float64(max(totalRunes, 1)),
			End:   u.Start + span*float64(pos+n)/float64(max(totalRunes, 1)),
		}
		pos += n
		need := len(tokenize(text))
		first, got := wi, 0
		for wi < len(ws) && (got < need || si == len(texts)-1) {
			got += counts[wi]
			wi++
		}
		if wi > first {
			s.Start, s.End = ws[first].start, ws[wi-1].end
		}
		out = append(out, s)
	}
	return out
}
