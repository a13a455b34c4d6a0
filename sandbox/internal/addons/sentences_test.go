package addons

import (
	"fmt"
	"testing"

	"github.com/scribehook/scribehook/api"
)

func TestSplitSentences(t *testing.T) {
	type sent struct {
		text       string
		start, end float64
	}
	cases := []struct {
		name string
		tr   *api.Transcription
		want []sent
	}{
		{"punctuated, times from words", transcript(
			utt(0, "Hello there. How are you? Fine!  Mr. Smith said 3.5 percent",
				w("Hello", 0, 0.3), w(" there.", 0.4, 0.7), w(" How", 1, 1.1), w(" are", 1.2, 1.3),
				w(" you?", 1.4, 1.6), w(" Fine!", 2, 2.4), w(" Mr.", 3, 3.2), w(" Smith", 3.3, 3.6),
				w(" said", 3.7, 3.9), w(" 3.5", 4, 4.4), w(" percent", 4.5, 5))),
			[]sent{{"Hello there.", 0, 0.7}, {"How are you?", 1, 1.6}, {"Fine!", 2, 2.4},
				{"Mr. Smith said 3.5 percent", 3, 5}}},
		{"punctuated text, unpunctuated words", transcript(
			utt(0, `She said "stop!" Then... silence.`,
				w("she", 0, 0.2), w(" said", 0.3, 0.5), w(" stop", 0.6, 0.9), w(" then", 1.5, 1.7),
				w(" silence", 2.5, 3))),
			[]sent{{`She said "stop!"`, 0, 0.9}, {"Then...", 1.5, 1.7}, {"silence.", 2.5, 3}}},
		{"unpunctuated: pauses", transcript(
			utt(0, "hello there how are you",
				w("hello", 0, 0.3), w(" there", 0.4, 0.7), w(" how", 1.45, 1.6), w(" are", 1.7, 1.8),
				w(" you", 2.45, 2.6)),
			utt(1, "ok", w("ok", 5, 5.2))),
			// 0.75 s before "how" splits, 0.65 s before "you" does not.
			[]sent{{"Hello there.", 0, 0.7}, {"How are you.", 1.45, 2.6}, {"Ok.", 5, 5.2}}},
		{"one punctuated utterance makes all punctuated", transcript(
			utt(0, "first part", w("first", 0, 0.3), w(" part", 2, 2.3)),
			utt(1, "Second.", w("Second.", 3, 3.5))),
			[]sent{{"first part", 0, 2.3}, {"Second.", 3, 3.5}}},
		{"no words: times spread over the utterance", &api.Transcription{Utterances: []api.Utterance{
			{Start: 10, End: 14, Text: "Abc. Def."}}},
			[]sent{{"Abc.", 10, 12}, {"Def.", 12, 14}}},
		{"utterances in start order", transcript(
			utt(1, "Later.", w("Later.", 5, 6)),
			utt(0, "Sooner.", w("Sooner.", 1, 2))),
			[]sent{{"Sooner.", 1, 2}, {"Later.", 5, 6}}},
		{"empty", &api.Transcription{}, nil},
		{"blank utterance", transcript(utt(0, "   ")), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := SplitSentences(c.tr)
			var got []sent
			for _, s := range ss {
				got = append(got, sent{s.Text, s.Start, s.End})
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestSentenceSpeakers(t *testing.T) {
	tr := transcript(utt(3, "A b. C d.", w("A", 0, 1), w(" b.", 1, 2), w(" C", 2, 3), w(" d.", 3, 4)))
	tr.Utterances[0].Channel = 1
	ss := SplitSentences(tr)
	if len(ss) != 2 || *ss[1].Speaker != 3 || ss[1].Channel != 1 || ss[1].Utterance != 0 {
		t.Errorf("got %+v", ss)
	}
}
