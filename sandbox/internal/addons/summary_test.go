package addons

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// catTranscript: "cats" 5 times, "sleep" 3, "warm" 2, every other content word once. Scores
// (sum of frequency / 5): 0.6, 3.6, 0.8, 3.2, 0.4, 1.8.
func catTranscript() *api.Transcription {
	texts := []string{
		"The weather was cold today.",
		"Cats love warm places and cats sleep a lot.",
		"My neighbour bought a new car.",
		"Warm cats purr when cats sleep.",
		"The bus was late.",
		"Sleep is important for cats.",
	}
	var us []api.Utterance
	for i, s := range texts {
		us = append(us, timedWords(i%2, s, float64(i)*4, 0.3, 0.25))
	}
	return transcript(us...)
}

func TestSummarize(t *testing.T) {
	cases := []struct {
		typ  string
		want string
	}{
		{"general", "Cats love warm places and cats sleep a lot. Warm cats purr when cats sleep. Sleep is important for cats."},
		{"", "Cats love warm places and cats sleep a lot. Warm cats purr when cats sleep. Sleep is important for cats."},
		{"unknown", "Cats love warm places and cats sleep a lot. Warm cats purr when cats sleep. Sleep is important for cats."},
		{"concise", "Cats love warm places and cats sleep a lot."},
		{"bullet_points", "- Cats love warm places and cats sleep a lot.\n- Warm cats purr when cats sleep.\n- Sleep is important for cats."},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			if got := Summarize(catTranscript(), SummaryType(&api.SummarizationConfig{Type: c.typ})); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	if got := Summarize(&api.Transcription{}, "general"); got != "" {
		t.Errorf("empty transcript: %q", got)
	}
}

func TestSummaryLength(t *testing.T) {
	cases := []struct {
		typ     string
		n, want int
	}{
		{"general", 0, 0}, {"general", 2, 2}, {"general", 6, 3}, {"general", 15, 3}, {"general", 16, 4},
		{"general", 100, 20}, {"bullet_points", 16, 4},
		{"concise", 0, 0}, {"concise", 9, 1}, {"concise", 10, 2}, {"concise", 500, 2},
	}
	for _, c := range cases {
		if got := SummaryLength(c.typ, c.n); got != c.want {
			t.Errorf("SummaryLength(%q, %d) = %d, want %d", c.typ, c.n, got, c.want)
		}
	}
}

func TestChapterize(t *testing.T) {
	tr := transcript(
		utt(0, "Rockets need fuel. Rockets need engines.",
			w("Rockets", 0, 0.5), w(" need", 0.6, 0.8), w(" fuel.", 0.9, 1.2),
			w(" Rockets", 1.5, 2.0), w(" need", 2.1, 2.3), w(" engines.", 2.4, 3)),
		utt(1, "Fuel is costly.", w("Fuel", 3.5, 3.8), w(" is", 3.9, 4), w(" costly.", 4.1, 4.5)),
		// 5.5 s of silence: a new chapter.
		utt(0, "Gardens need water. Water gardens daily.",
			w("Gardens", 10, 10.5), w(" need", 10.6, 10.8), w(" water.", 10.9, 11.2),
			w(" Water", 11.5, 11.8), w(" gardens", 11.9, 12.3), w(" daily.", 12.4, 13)),
	)
	got := Chapterize(tr, 0, 0)
	want := []api.Chapter{
		{
			Headline:  "Rockets need fuel.",
			Gist:      "Rockets need fuel", // "need" and "fuel" tie; "need" is seen first
			Keywords:  []string{"rockets", "need", "fuel", "engines", "costly"},
			Start:     0,
			End:       4.5,
			Sentences: "Rockets need fuel.\nRockets need engines.\nFuel is costly.",
			Text:      "Rockets need fuel. Rockets need engines. Fuel is costly.",
			Summary:   "Rockets need fuel. Rockets need engines. Fuel is costly.",
		},
		{
			Headline:  "Gardens need water.",
			Gist:      "Gardens water need",
			Keywords:  []string{"gardens", "water", "need", "daily"},
			Start:     10,
			End:       13,
			Sentences: "Gardens need water.\nWater gardens daily.",
			Text:      "Gardens need water. Water gardens daily.",
			Summary:   "Gardens need water. Water gardens daily.",
		},
	}
	gj, _ := json.MarshalIndent(got, "", " ")
	wj, _ := json.MarshalIndent(want, "", " ")
	if string(gj) != string(wj) {
		t.Errorf("got  %s\nwant %s", gj, wj)
	}

	// Every 2 sentences, and a pause too long to matter.
	var bounds []string
	for _, c := range Chapterize(tr, 60, 2) {
		bounds = append(bounds, fmt.Sprintf("%g-%g", c.Start, c.End))
	}
	if got, want := strings.Join(bounds, " "), "0-3 3.5-11.2 11.5-13"; got != want {
		t.Errorf("boundaries every 2 sentences: got %s, want %s", got, want)
	}

	if got := Chapterize(&api.Transcription{}, 0, 0); got == nil || len(got) != 0 {
		t.Errorf("empty transcript: %#v, want an empty non-nil list", got)
	}
}
