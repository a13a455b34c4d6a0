package addons

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

// FuzzApply feeds arbitrary text through every add-on: nothing may panic, the result must
// encode, and cues must respect the row limits whenever every word fits a row.
func FuzzApply(f *testing.F) {
	f.Add("Hello world. Tom & Jerry <live>. Go --> now", 16, 2, false)
	f.Add("dr. Smith said 3.5… «ok» ?! ,", 5, 1, true)
	f.Add("", 42, 2, false)
	f.Add("a\u0301 ß\u200b 日本語のテキスト", 3, 5, true)
	f.Fuzz(func(t *testing.T, text string, chars, rows int, compliance bool) {
		if !utf8.ValidString(text) {
			return
		}
		style := "default"
		if compliance {
			style = "compliance"
		}
		req := everything()
		req.SubtitlesConfig = &api.SubtitlesConfig{
			Formats: []string{"srt", "vtt"}, MaximumCharactersPerRow: api.Int(chars),
			MaximumRowsPerCaption: api.Int(rows), Style: style,
		}
		if fields := strings.Fields(text); len(fields) > 0 {
			req.CustomSpellingConfig = &api.CustomSpellingConfig{SpellingDictionary: map[string][]string{
				"X": {fields[0], strings.Join(fields[:min(3, len(fields))], " ")},
			}}
		}
		tr := transcript(timedWords(0, text, 0, 0.3, 0.25), api.Utterance{Start: 1, End: 2, Text: text})
		res, err := Apply(context.Background(), req, tr, fixedClock())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("encode: %v", err)
		}
		checkChapterWords(t, res)
		s := ResolveSubtitles(req.SubtitlesConfig)
		longest := 0
		for _, u := range res.Transcription.Utterances {
			for _, w := range displayWords(&u) {
				longest = max(longest, utf8.RuneCountInString(w.text))
			}
		}
		for _, c := range Cues(res.Transcription, s) {
			if len(c.Lines) > s.MaxRows {
				t.Fatalf("%d rows, max %d", len(c.Lines), s.MaxRows)
			}
			for _, l := range c.Lines {
				if strings.ContainsAny(l, "\r\n") {
					t.Fatalf("line break inside row %q", l)
				}
				if longest <= s.MaxCharsPerRow && utf8.RuneCountInString(l) > s.MaxCharsPerRow {
					t.Fatalf("row %q longer than %d", l, s.MaxCharsPerRow)
				}
			}
		}
	})
}

// checkChapterWords fails unless the chapters hold each word of every utterance that has a
// sentence exactly once.
func checkChapterWords(t *testing.T, res *api.Result) {
	t.Helper()
	want := 0
	seen := map[int]bool{}
	for _, s := range SplitSentences(res.Transcription) {
		if !seen[s.Utterance] {
			seen[s.Utterance] = true
			want += len(res.Transcription.Utterances[s.Utterance].Words)
		}
	}
	got := 0
	for _, c := range res.Chapterization.Results.Chapters {
		for _, s := range c.Sentences {
			got += len(s.Words)
		}
	}
	if got != want {
		t.Fatalf("chapters hold %d words, the sentences' utterances %d", got, want)
	}
}
