package addons

import (
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// Summary types of summarization_config, as in api.
const (
	SummaryGeneral      = api.SummarizationGeneral
	SummaryBulletPoints = api.SummarizationBulletPoints
	SummaryConcise      = api.SummarizationConcise
)

// stopwords are the English function words that carry no topic; they are left out of word
// frequencies so that "the" does not decide what a transcript is about.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again against all also am an and any are
		aren't as at be because been before being below between both but by can can't cannot could
		couldn't did didn't do does doesn't doing don't down during each even few for from further
		get gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
		hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its
		itself just know let's like me more most mustn't my myself no nor not now of off oh ok okay
		on once only or other ought our ours ourselves out over own really right same say said
		shan't she she'd she'll she's should shouldn't so some such than that that's the their
		theirs them themselves then there there's these they they'd they'll they're they've thing
		things think this those through to too um uh under until up very was wasn't we we'd we'll
		we're we've well were weren't what what's when when's where where's which while who who's
		whom why why's will with won't would wouldn't yeah yes you you'd you'll you're you've your
		yours yourself yourselves going want one two also just still much many may might must shall
		us go got gonna`) {
		stopwords[w] = true
		stopwords[strings.ReplaceAll(w, "'", "’")] = true
	}
}

// contentWords returns the lower-cased tokens of s that count for frequencies: no stopwords, no
// single letters, no bare numbers.
func contentWords(s string) []string {
	var out []string
	for _, t := range tokenize(s) {
		w := strings.ToLower(t.text)
		if stopwords[w] || utf8.RuneCountInString(w) < 2 || strings.IndexFunc(w, isLetterRune) < 0 {
			continue
		}
		out = append(out, w)
	}
	return out
}

func isLetterRune(r rune) bool { return isTokenRune(r) && !('0' <= r && r <= '9') }

// frequencies counts the content words of sentences and remembers where each first appears, so
// that ties are broken by order of appearance.
func frequencies(ss []Sentence) (freq map[string]int, firstSeen map[string]int) {
	freq, firstSeen = map[string]int{}, map[string]int{}
	for _, s := range ss {
		for _, w := range contentWords(s.Text) {
			if _, ok := firstSeen[w]; !ok {
				firstSeen[w] = len(firstSeen)
			}
			freq[w]++
		}
	}
	return freq, firstSeen
}

// rankSentences returns the indexes of ss from most to least representative. A sentence scores
// the sum, over its content words, of their frequency in ss divided by the highest frequency
// (Luhn's frequency method, as in the classic extractive summarisers); ties go to the earlier
// sentence.
func rankSentences(ss []Sentence) []int {
	freq, _ := frequencies(ss)
	top := 0
	for _, n := range freq {
		top = max(top, n)
	}
	scores := make([]float64, len(ss))
	for i, s := range ss {
		for _, w := range contentWords(s.Text) {
			scores[i] += float64(freq[w]) / float64(top)
		}
	}
	idx := make([]int, len(ss))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	return idx
}

// SummaryLength is how many sentences a summary of n sentences keeps: general and bullet_points
// keep the larger of 3 and 20 % (rounded up), concise keeps 1, or 2 from 10 sentences on;
// never more than n.
func SummaryLength(typ string, n int) int {
	var k int
	switch typ {
	case SummaryConcise:
		k = 1
		if n >= 10 {
			k = 2
		}
	default:
		k = max(3, int(math.Ceil(float64(n)*0.2)))
	}
	return min(k, n)
}

// pickSentences returns the SummaryLength best sentences of ss in their original order.
func pickSentences(ss []Sentence, typ string) []Sentence {
	k := SummaryLength(typ, len(ss))
	chosen := rankSentences(ss)[:k]
	sort.Ints(chosen)
	out := make([]Sentence, k)
	for i, c := range chosen {
		out[i] = ss[c]
	}
	return out
}

// Summarize writes an extractive summary of the transcript: its most representative sentences
// (see rankSentences) in their original order, joined by spaces; for bullet_points one
// "- sentence" line each, joined by LF. An unknown or empty type is general, as on the service.
// The summary of an empty transcript is "".
func Summarize(t *api.Transcription, typ string) string {
	return summarizeSentences(SplitSentences(t), typ)
}

func summarizeSentences(ss []Sentence, typ string) string {
	if len(ss) == 0 {
		return ""
	}
	picked := SentenceTexts(pickSentences(ss, typ))
	if typ == SummaryBulletPoints {
		for i, s := range picked {
			picked[i] = "- " + s
		}
		return strings.Join(picked, "\n")
	}
	return strings.Join(picked, " ")
}

// SummaryType returns the type of cfg, general when absent or unknown.
func SummaryType(cfg *api.SummarizationConfig) string {
	if cfg != nil && (cfg.Type == SummaryBulletPoints || cfg.Type == SummaryConcise) {
		return cfg.Type
	}
	return SummaryGeneral
}

// Defaults of chapter boundaries (Options.ChapterPause, Options.ChapterSentences).
const (
	DefaultChapterPause     = 5.0 // seconds of silence between sentences that start a chapter
	DefaultChapterSentences = 10  // sentences after which a chapter ends
	chapterKeywords         = 5
	gistKeywords            = 3
)

// Chapterize cuts the transcript into chapters: a new chapter starts after a silence of at
// least pause seconds between two sentences, and after every maxSentences sentences (pause ≤ 0
// and maxSentences ≤ 0 take the defaults). Per chapter:
//   - keywords: its five most frequent content words (ties by first appearance);
//   - headline: its most representative sentence;
//   - gist: its first three keywords, the first capitalised, joined by spaces;
//   - summary: its general extractive summary (see Summarize);
//   - text: its sentences joined by spaces; sentences: one {sentence, start, end, words} per
//     sentence, words being the utterance's words that fall in the sentence (see sentenceWords);
//   - start and end: of its first and last sentence.
func Chapterize(t *api.Transcription, pause float64, maxSentences int) []api.Chapter {
	if pause <= 0 {
		pause = DefaultChapterPause
	}
	if maxSentences <= 0 {
		maxSentences = DefaultChapterSentences
	}
	ss := SplitSentences(t)
	words := sentenceWords(t, ss)
	chapters := []api.Chapter{}
	begin := 0
	for i := 1; i <= len(ss); i++ {
		if i < len(ss) && i-begin < maxSentences && ss[i].Start-ss[i-1].End < pause {
			continue
		}
		chapters = append(chapters, makeChapter(ss[begin:i], words[begin:i]))
		begin = i
	}
	return chapters
}

func makeChapter(ss []Sentence, sentWords [][]api.Word) api.Chapter {
	freq, firstSeen := frequencies(ss)
	words := make([]string, 0, len(freq))
	for w := range freq {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if freq[words[i]] != freq[words[j]] {
			return freq[words[i]] > freq[words[j]]
		}
		return firstSeen[words[i]] < firstSeen[words[j]]
	})
	keywords := words[:min(chapterKeywords, len(words))]
	texts := SentenceTexts(ss)
	return api.Chapter{
		Headline:  ss[rankSentences(ss)[0]].Text,
		Gist:      capitalize(strings.Join(keywords[:min(gistKeywords, len(keywords))], " ")),
		Keywords:  keywords,
		Start:     ss[0].Start,
		End:       ss[len(ss)-1].End,
		Sentences: chapterSentences(ss, sentWords),
		Text:      strings.Join(texts, " "),
		Summary:   summarizeSentences(ss, SummaryGeneral),
	}
}

func chapterSentences(ss []Sentence, words [][]api.Word) api.ChapterSentences {
	out := make(api.ChapterSentences, len(ss))
	for i, s := range ss {
		out[i] = api.ChapterSentence{Sentence: s.Text, Start: s.Start, End: s.End, Words: words[i]}
	}
	return out
}

// sentenceWords gives each sentence of ss (SplitSentences of t) the words of its utterance
// whose middle falls at or before the sentence's end and after the previous sentence's: every
// word lands in exactly one sentence of its utterance, the last sentence taking any left over.
// The words are copies, so that a chapter does not alias the transcript.
func sentenceWords(t *api.Transcription, ss []Sentence) [][]api.Word {
	out := make([][]api.Word, len(ss))
	for i := 0; i < len(ss); {
		j := i
		for j < len(ss) && ss[j].Utterance == ss[i].Utterance {
			j++
		}
		assignWords(t.Utterances[ss[i].Utterance].Words, ss[i:j], out[i:j])
		i = j
	}
	return out
}

// assignWords splits ws over the sentences ss of one utterance, in order.
func assignWords(ws []api.Word, ss []Sentence, out [][]api.Word) {
	k := 0
	for _, w := range ws {
		mid := (w.Start + w.End) / 2
		for k < len(ss)-1 && mid > ss[k].End {
			k++
		}
		out[k] = append(out[k], w)
	}
}
