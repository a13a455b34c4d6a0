package addons

import (
	"fmt"
	"sort"
	"strings"

	"github.com/scribehook/scribehook/api"
)

// DisplayMode writes the transcript as "Speaker N: text" lines in spoken order. N is the
// utterance's speaker field as it is (0-based, so that a line can be matched to its utterances),
// or its channel when the utterance has no speaker.
//
// The words of all utterances are put in order of their start times (ties keep the utterances'
// order by start time, then channel), and consecutive words of the same utterance form one line.
// Without overlap this is one line per utterance, with the utterance text as written. Where
// speakers overlap, each change from one utterance's words to another's starts a new line: an
// utterance 0–6 s whose words are interrupted by another 2–3 s gives three lines, the first
// utterance's words before 2 s, the second utterance, and the first utterance's remaining words.
// A line that holds only part of an utterance is written from its words. An utterance without
// words is one line at its start time.
func DisplayMode(t *api.Transcription) []string {
	if t == nil {
		return nil
	}
	type item struct {
		utt   int // index in t.Utterances
		rank  int // position of the utterance in start order
		start float64
		text  string
	}
	var items []item
	total := make(map[int]int) // displayable words per utterance
	for rank, ui := range orderedUtterances(t) {
		u := &t.Utterances[ui]
		ws := displayWords(u)
		if len(u.Words) == 0 {
			// Keep the utterance text whole rather than spreading it out.
			if text := cleanWord(u.Text); text != "" {
				items = append(items, item{ui, rank, u.Start, text})
				total[ui] = 1
			}
			continue
		}
		for _, w := range ws {
			items = append(items, item{ui, rank, w.start, w.text})
		}
		total[ui] = len(ws)
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].start != items[j].start {
			return items[i].start < items[j].start
		}
		return items[i].rank < items[j].rank
	})
	var lines []string
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].utt == items[i].utt {
			j++
		}
		u := &t.Utterances[items[i].utt]
		text := cleanWord(u.Text)
		if j-i != total[items[i].utt] || text == "" {
			parts := make([]string, 0, j-i)
			for _, it := range items[i:j] {
				parts = append(parts, it.text)
			}
			text = strings.Join(parts, " ")
		}
		lines = append(lines, fmt.Sprintf("Speaker %d: %s", speakerOf(u), text))
		i = j
	}
	return lines
}

func speakerOf(u *api.Utterance) int {
	if u.Speaker != nil {
		return *u.Speaker
	}
	return u.Channel
}

// SpeakerLimit returns the most speakers cfg allows: number_of_speakers when set, else
// max_speakers when above 0, else 0 for no limit. min_speakers is not used: without a model the
// sandbox cannot invent speakers.
func SpeakerLimit(cfg *api.DiarizationConfig) int {
	if cfg == nil {
		return 0
	}
	if cfg.NumberOfSpeakers != nil && *cfg.NumberOfSpeakers >= 1 {
		return *cfg.NumberOfSpeakers
	}
	if cfg.MaxSpeakers != nil && *cfg.MaxSpeakers > 0 {
		return *cfg.MaxSpeakers
	}
	return 0
}

// Diarize returns copies of the utterances, in the transcription's order, with speaker set. The
// engine's speakers are kept; an utterance without one gets its channel (on multi-channel audio
// each channel is usually one person). When there are more distinct speakers than
// SpeakerLimit(cfg), speakers are renumbered 0, 1, 2… in order of first appearance (by start
// time) and then folded modulo the limit, so that the first speakers keep distinct numbers and
// the result never names more speakers than asked for.
func Diarize(t *api.Transcription, cfg *api.DiarizationConfig) []api.Utterance {
	if t == nil {
		return []api.Utterance{}
	}
	out := make([]api.Utterance, len(t.Utterances))
	for i := range t.Utterances {
		out[i] = copyUtterance(t.Utterances[i])
		out[i].Speaker = api.Int(speakerOf(&t.Utterances[i]))
	}
	limit := SpeakerLimit(cfg)
	if limit == 0 {
		return out
	}
	first := map[int]int{} // engine speaker -> order of first appearance
	for _, ui := range orderedUtterances(t) {
		sp := *out[ui].Speaker
		if _, ok := first[sp]; !ok {
			first[sp] = len(first)
		}
	}
	if len(first) <= limit {
		return out
	}
	for i := range out {
		out[i].Speaker = api.Int(first[*out[i].Speaker] % limit)
	}
	return out
}
