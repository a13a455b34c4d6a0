package addons

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scribehook/scribehook/api"
)

func smallTranscript() *api.Transcription {
	return transcript(
		utt(0, "Hello world. Tom & Jerry <live>.",
			w("Hello", 0.5, 0.9), w(" world.", 1.0, 1.4), w(" Tom", 1.5, 1.7), w(" &", 1.75, 1.8),
			w(" Jerry", 1.85, 2.2), w(" <live>.", 2.25, 2.6)),
		utt(1, "Yes.", w(" Yes", 3.0, 3.15), w(".", 3.15, 3.2)),
		utt(0, "Go --> now", w(" Go", 3.5, 3.7), w(" -->", 3.7, 3.8), w(" now", 3.8, 4.0)),
	)
}

func TestSubtitlesGolden(t *testing.T) {
	cfg := &api.SubtitlesConfig{Formats: []string{"srt", "vtt"}, MaximumCharactersPerRow: api.Int(16)}
	got := Subtitles(smallTranscript(), cfg)
	wantSRT := "1\n" +
		"00:00:00,500 --> 00:00:02,600\n" +
		"Hello world. Tom\n" +
		"& Jerry <live>.\n" +
		"\n" +
		"2\n" +
		"00:00:03,000 --> 00:00:03,500\n" +
		"Yes.\n" +
		"\n" +
		"3\n" +
		"00:00:03,500 --> 00:00:04,500\n" +
		"Go -> now\n"
	wantVTT := "WEBVTT\n" +
		"\n" +
		"00:00:00.500 --> 00:00:02.600\n" +
		"Hello world. Tom\n" +
		"&amp; Jerry &lt;live&gt;.\n" +
		"\n" +
		"00:00:03.000 --> 00:00:03.500\n" +
		"Yes.\n" +
		"\n" +
		"00:00:03.500 --> 00:00:04.500\n" +
		"Go --&gt; now\n"
	want := []api.Subtitle{{Format: "srt", Subtitles: wantSRT}, {Format: "vtt", Subtitles: wantVTT}}
	if len(got) != len(want) {
		t.Fatalf("got %d subtitle files, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Format != want[i].Format || got[i].Subtitles != want[i].Subtitles {
			t.Errorf("file %d:\ngot  %q\nwant %q", i, got[i], want[i])
		}
	}
}

func TestSubtitlesDefaults(t *testing.T) {
	got := Subtitles(smallTranscript(), nil)
	if len(got) != 1 || got[0].Format != "srt" {
		t.Fatalf("default formats: got %+v, want one srt", got)
	}
	// 42 characters per row: the first utterance fits one row.
	if !strings.Contains(got[0].Subtitles, "\nHello world. Tom & Jerry <live>.\n") {
		t.Errorf("default row length not applied:\n%s", got[0].Subtitles)
	}
	if strings.HasPrefix(got[0].Subtitles, "\ufeff") {
		t.Error("SRT starts with a BOM")
	}
}

func TestResolveSubtitles(t *testing.T) {
	def := SubtitleSettings{Formats: []string{"srt"}, MaxCharsPerRow: 42, MaxRows: 2, MinDuration: 1, MaxDuration: 7, Style: "default"}
	cases := []struct {
		name string
		cfg  *api.SubtitlesConfig
		want SubtitleSettings
	}{
		{"nil", nil, def},
		{"empty", &api.SubtitlesConfig{}, def},
		{"all set", &api.SubtitlesConfig{
			Formats: []string{"vtt", "srt", "vtt"}, MaximumCharactersPerRow: api.Int(32), MaximumRowsPerCaption: api.Int(3),
			MinimumDuration: api.Float(0), MaximumDuration: api.Float(30), Style: "compliance",
		}, SubtitleSettings{Formats: []string{"vtt", "srt"}, MaxCharsPerRow: 32, MaxRows: 3, MinDuration: 0, MaxDuration: 30, Style: "compliance"}},
		{"out of bounds take defaults", &api.SubtitlesConfig{
			Formats: []string{"ass"}, MaximumCharactersPerRow: api.Int(0), MaximumRowsPerCaption: api.Int(6),
			MinimumDuration: api.Float(-1), MaximumDuration: api.Float(31), Style: "fancy",
		}, def},
		{"min above max is lowered", &api.SubtitlesConfig{MinimumDuration: api.Float(5), MaximumDuration: api.Float(2)},
			SubtitleSettings{Formats: []string{"srt"}, MaxCharsPerRow: 42, MaxRows: 2, MinDuration: 2, MaxDuration: 2, Style: "default"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ResolveSubtitles(c.cfg)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// longTranscript is 600 words of 1 to 10 letters, three utterances, 0.3 s per word.
func longTranscript() *api.Transcription {
	pool := strings.Fields("a be sea deep lunar planet orbiting telescope astronomy spacecraft")
	var us []api.Utterance
	for u := 0; u < 3; u++ {
		words := make([]string, 200)
		for i := range words {
			words[i] = pool[(i*7+u*3+i/11)%len(pool)]
		}
		us = append(us, timedWords(u%2, strings.Join(words, " "), float64(u)*70, 0.3, 0.25))
	}
	return transcript(us...)
}

func TestCuesLimits(t *testing.T) {
	tr := longTranscript()
	var allWords []string
	for _, u := range tr.Utterances {
		allWords = append(allWords, strings.Fields(u.Text)...)
	}
	for _, chars := range []int{10, 16, 42, 80} {
		for _, rows := range []int{1, 2, 3} {
			for _, style := range []string{"default", "compliance"} {
				for _, maxDur := range []float64{1, 7, 30} {
					name := fmt.Sprintf("chars%d_rows%d_%s_max%g", chars, rows, style, maxDur)
					t.Run(name, func(t *testing.T) {
						s := ResolveSubtitles(&api.SubtitlesConfig{
							MaximumCharactersPerRow: api.Int(chars), MaximumRowsPerCaption: api.Int(rows),
							MaximumDuration: api.Float(maxDur), Style: style,
						})
						cues := Cues(tr, s)
						checkCues(t, cues, s, allWords)
					})
				}
			}
		}
	}
}

func checkCues(t *testing.T, cues []Cue, s SubtitleSettings, allWords []string) {
	t.Helper()
	var seen []string
	for i, c := range cues {
		if len(c.Lines) == 0 || len(c.Lines) > s.MaxRows {
			t.Fatalf("cue %d has %d rows, max %d", i, len(c.Lines), s.MaxRows)
		}
		chars := -1
		for _, l := range c.Lines {
			n := utf8.RuneCountInString(l)
			if n > s.MaxCharsPerRow {
				t.Fatalf("cue %d row %q has %d characters, max %d", i, l, n, s.MaxCharsPerRow)
			}
			chars += n + 1
			seen = append(seen, strings.Fields(l)...)
		}
		if c.End < c.Start || c.End-c.Start > s.MaxDuration+1e-9 {
			t.Fatalf("cue %d lasts %v–%v, max %v", i, c.Start, c.End, s.MaxDuration)
		}
		if i+1 < len(cues) && c.End > cues[i+1].Start+1e-9 {
			t.Fatalf("cue %d ends at %v after cue %d starts at %v", i, c.End, i+1, cues[i+1].Start)
		}
		if i+1 < len(cues) && c.End-c.Start < s.MinDuration-1e-9 && math.Abs(c.End-cues[i+1].Start) > 1e-9 {
			t.Fatalf("cue %d lasts %v, under the minimum, without touching the next cue", i, c.End-c.Start)
		}
		if s.Style == StyleCompliance && len(strings.Fields(strings.Join(c.Lines, " "))) > 1 {
			if speed := float64(chars) / max(c.End-c.Start, s.MinDuration); speed > ComplianceMaxReadSpeed+1e-9 {
				t.Fatalf("cue %d reads at %.1f characters/s", i, speed)
			}
		}
	}
	if strings.Join(seen, " ") != strings.Join(allWords, " ") {
		t.Fatal("cues do not hold every word once, in order")
	}
}

func TestCuesMinimumDuration(t *testing.T) {
	tr := transcript(
		utt(0, "Hi", w("Hi", 0, 0.2)),
		utt(1, "Bye", w("Bye", 0.6, 0.8)),
		utt(0, "Later", w("Later", 5.0, 5.2)),
	)
	got := Cues(tr, ResolveSubtitles(nil))
	want := []Cue{
		{Start: 0, End: 0.6, Lines: []string{"Hi"}},      // stopped by the next cue
		{Start: 0.6, End: 1.6, Lines: []string{"Bye"}},   // extended to 1 s
		{Start: 5.0, End: 6.0, Lines: []string{"Later"}}, // last cue: extended freely
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestCuesBreaks(t *testing.T) {
	cases := []struct {
		name string
		tr   *api.Transcription
		cfg  *api.SubtitlesConfig
		want []Cue
	}{
		{"long pause starts a cue", transcript(utt(0, "one two",
			w("one", 0, 0.5), w(" two", 3.0, 3.5))), nil,
			[]Cue{{0, 1, []string{"one"}}, {3, 4, []string{"two"}}}},
		{"maximum duration starts a cue", transcript(timedWords(0, "a b c d", 0, 1, 0.5)),
			&api.SubtitlesConfig{MaximumDuration: api.Float(2), MinimumDuration: api.Float(0)},
			[]Cue{{0, 1.5, []string{"a b"}}, {2, 3.5, []string{"c d"}}}},
		{"a word longer than a row stands alone", transcript(timedWords(0, "tiny extraordinarily x", 0, 0.4, 0.3)),
			&api.SubtitlesConfig{MaximumCharactersPerRow: api.Int(6), MaximumRowsPerCaption: api.Int(3)},
			[]Cue{{0, 1.1, []string{"tiny", "extraordinarily", "x"}}}},
		{"compliance splits fast speech", transcript(timedWords(0, "abcdefghi abcdefghi abcdefghi", 0, 0.2, 0.2)),
			&api.SubtitlesConfig{Style: "compliance"},
			// 19 characters in the minimum 1 s are fine, 29 are not: the third word opens a
			// cue, and the first cannot be lengthened past it.
			[]Cue{{0, 0.4, []string{"abcdefghi abcdefghi"}}, {0.4, 1.4, []string{"abcdefghi"}}}},
		{"default style keeps fast speech", transcript(timedWords(0, "abcdefghi abcdefghi abcdefghi", 0, 0.2, 0.2)),
			nil, []Cue{{0, 1, []string{"abcdefghi abcdefghi abcdefghi"}}}},
		{"no words: text spread over the utterance", &api.Transcription{Utterances: []api.Utterance{
			{Start: 1, End: 3, Text: "ab cd"}}}, nil,
			[]Cue{{1, 3, []string{"ab cd"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Cues(c.tr, ResolveSubtitles(c.cfg))
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestTimestamp(t *testing.T) {
	cases := []struct {
		sec  float64
		want string
	}{
		{0, "00:00:00,000"},
		{1.0006, "00:00:01,001"},
		{59.9999, "00:01:00,000"},
		{3723.456, "01:02:03,456"},
		{360000, "100:00:00,000"},
		{-2, "00:00:00,000"},
		{math.NaN(), "00:00:00,000"},
	}
	for _, c := range cases {
		if got := timestamp(c.sec, ','); got != c.want {
			t.Errorf("timestamp(%v) = %q, want %q", c.sec, got, c.want)
		}
	}
}

func TestRenderEmpty(t *testing.T) {
	if got := RenderSRT(nil); got != "" {
		t.Errorf("SRT of no cue: %q", got)
	}
	if got := RenderVTT(nil); got != "WEBVTT\n" {
		t.Errorf("VTT of no cue: %q", got)
	}
}
