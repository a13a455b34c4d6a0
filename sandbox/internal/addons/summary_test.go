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
	// The whole envelope, as a pre-recorded result holds it: results is an object whose chapters
	// have their sentences as {sentence, start, end, words}, each word in one sentence.
	got, err := json.Marshal(ChapterizationAddon(tr, fixedClock()))
	if err != nil {
		t.Fatal(err)
	}
	word := func(text string, start, end float64) string {
		return fmt.Sprintf(`{"word":%q,"start":%g,"end":%g,"confidence":0.9}`, text, start, end)
	}
	sentence := func(text string, start, end float64, words ...string) string {
		return fmt.Sprintf(`{"sentence":%q,"start":%g,"end":%g,"words":[%s]}`, text, start, end, strings.Join(words, ","))
	}
	want := `{"success":true,"is_empty":false,"exec_time":0,"error":null,"results":{"chapters":[` +
		`{"headline":"Rockets need fuel.","gist":"Rockets need fuel",` + // "need" and "fuel" tie; "need" is seen first
		`"keywords":["rockets","need","fuel","engines","costly"],"start":0,"end":4.5,"sentences":[` +
		sentence("Rockets need fuel.", 0, 1.2, word("Rockets", 0, 0.5), word(" need", 0.6, 0.8), word(" fuel.", 0.9, 1.2)) + "," +
		sentence("Rockets need engines.", 1.5, 3, word(" Rockets", 1.5, 2), word(" need", 2.1, 2.3), word(" engines.", 2.4, 3)) + "," +
		sentence("Fuel is costly.", 3.5, 4.5, word("Fuel", 3.5, 3.8), word(" is", 3.9, 4), word(" costly.", 4.1, 4.5)) +
		`],"text":"Rockets need fuel. Rockets need engines. Fuel is costly.",` +
		`"summary":"Rockets need fuel. Rockets need engines. Fuel is costly."},` +
		`{"headline":"Gardens need water.","gist":"Gardens water need",` +
		`"keywords":["gardens","water","need","daily"],"start":10,"end":13,"sentences":[` +
		sentence("Gardens need water.", 10, 11.2, word("Gardens", 10, 10.5), word(" need", 10.6, 10.8), word(" water.", 10.9, 11.2)) + "," +
		sentence("Water gardens daily.", 11.5, 13, word(" Water", 11.5, 11.8), word(" gardens", 11.9, 12.3), word(" daily.", 12.4, 13)) +
		`],"text":"Gardens need water. Water gardens daily.",` +
		`"summary":"Gardens need water. Water gardens daily."}]}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
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
