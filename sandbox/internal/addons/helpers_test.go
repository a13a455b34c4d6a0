package addons

import (
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// w is a word as engines write it, with its leading space when it is not the first.
func w(text string, start, end float64) api.Word {
	return api.Word{Word: text, Start: start, End: end, Confidence: 0.9}
}

// utt builds an utterance on channel 0; speaker < 0 means none.
func utt(speaker int, text string, words ...api.Word) api.Utterance {
	u := api.Utterance{Text: text, Words: words, Confidence: 0.9, Language: "en"}
	if len(words) > 0 {
		u.Start, u.End = words[0].Start, words[len(words)-1].End
	}
	if speaker >= 0 {
		u.Speaker = api.Int(speaker)
	}
	return u
}

// transcript builds a transcription whose full transcript joins the utterance texts.
func transcript(us ...api.Utterance) *api.Transcription {
	texts := make([]string, len(us))
	for i, u := range us {
		texts[i] = u.Text
	}
	return &api.Transcription{
		FullTranscript: strings.Join(texts, " "),
		Languages:      []string{"en"},
		Utterances:     us,
	}
}

// timedWords builds an utterance from text, one word every step seconds, each lasting dur.
func timedWords(speaker int, text string, start, step, dur float64) api.Utterance {
	var ws []api.Word
	for i, f := range strings.Fields(text) {
		if i > 0 {
			f = " " + f
		}
		s := start + float64(i)*step
		ws = append(ws, w(f, s, s+dur))
	}
	return utt(speaker, text, ws...)
}

// fixedClock makes exec_time 0.
func fixedClock() Options {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return Options{Now: func() time.Time { return t0 }}
}
