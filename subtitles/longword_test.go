package subtitles

import (
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

// longURL is longer than a line of every preset (45 runes): a word that must have a line
// to itself.
const longURL = "https://docs.example.com/scribehook/callbacks"

// timedWords builds words from (text, start, end) triples.
func timedWords(ws ...any) []api.Word {
	var out []api.Word
	for k := 0; k+2 < len(ws); k += 3 {
		out = append(out, api.Word{Word: ws[k].(string), Start: ws[k+1].(float64), End: ws[k+2].(float64)})
	}
	return out
}

// TestLongWordCueMeetsMinDuration pins the cues around a word longer than a line. On a
// held-back transcript such a word (a URL read out in 0.1 s, the next word 0.12 s later) made
// a cue of its own lasting 0.135 s. Now the word shares a cue with a neighbour, on a line of
// its own, when the profile has a second line; otherwise its cue is timed to MinDuration: into
// the pause after it (beyond MaxExtend), then the silence before it, then by pushing the next
// cue later.
func TestLongWordCueMeetsMinDuration(t *testing.T) {
	oneLine := DefaultProfile()
	oneLine.Name, oneLine.MaxLines = "one-line", 1
	heldBack := []api.Utterance{{Words: timedWords("Please", 1.0, 1.3, "visit", 1.35, 1.7, longURL, 1.75, 1.85,
		"for", 1.969, 2.1, "the", 2.12, 2.2, "details.", 2.25, 2.7)}}
	type cue struct {
		start, end int // milliseconds
		lines      []string
	}
	for _, tc := range []struct {
		name string
		p    Profile
		utts []api.Utterance
		want []cue
		long [2]int // cue and line of the word longer than a line
	}{
		{
			// Merged with the words after it, which follow closely: one cue, the URL on its
			// own line.
			name: "merged with the next words", p: DefaultProfile(), utts: heldBack,
			want: []cue{{1000, 1666, []string{"Please visit"}}, {1750, 3200, []string{longURL, "for the details."}}},
			long: [2]int{1, 0},
		},
		{
			// Merged with the words before it, a long pause after.
			name: "merged with the words before", p: DefaultProfile(),
			utts: []api.Utterance{{Words: timedWords("The", 1.0, 1.1, "docs", 1.15, 1.4, "are", 1.45, 1.55, "at", 1.6, 1.7,
				longURL+".", 1.75, 1.9, "Thanks.", 5.0, 5.4)}},
			want: []cue{{1000, 2400, []string{"The docs are at", longURL + "."}}, {5000, 5834, []string{"Thanks."}}},
			long: [2]int{0, 1},
		},
		{
			// One line per cue: the URL's cue pushes the next one later, 0.834 s after it
			// starts (MinDuration rounded up to a millisecond), then the minimum gap.
			name: "alone, next cue pushed", p: oneLine, utts: heldBack,
			want: []cue{{1000, 1666, []string{"Please visit"}}, {1750, 2584, []string{longURL}}, {2668, 3200, []string{"for the details."}}},
			long: [2]int{1, 0},
		},
		{
			// Pauses of 2.7 s on each side (a cue must end there): the cue stays up past the
			// 0.5 s MaxExtend to reach MinDuration.
			name: "alone between pauses", p: DefaultProfile(),
			utts: []api.Utterance{{Words: timedWords("See", 1.0, 1.3, longURL, 4.0, 4.2, "Thanks.", 7.0, 7.4)}},
			want: []cue{{1000, 1800, []string{"See"}}, {4000, 4834, []string{longURL}}, {7000, 7834, []string{"Thanks."}}},
			long: [2]int{1, 0},
		},
		{
			// One line per cue, the next word 0.15 s after the URL: the cue starts 0.616 s
			// early, as soon as the previous cue (its word and 0.5 s MaxExtend) and the
			// minimum gap allow, and the next cue is pushed by 52 ms only.
			name: "alone, starting early", p: oneLine,
			utts: []api.Utterance{{Words: timedWords("Hello.", 1.0, 1.3, longURL, 2.5, 2.6, "now", 2.75, 3.0, "then", 3.05, 3.4)}},
			want: []cue{{1000, 1800, []string{"Hello."}}, {1884, 2718, []string{longURL}}, {2802, 3636, []string{"now then"}}},
			long: [2]int{1, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cues, issues, err := Segment(tc.utts, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var got []cue
			for _, c := range cues {
				got = append(got, cue{int(c.Start / time.Millisecond), int(c.End / time.Millisecond), c.Lines})
			}
			if !slices.EqualFunc(got, tc.want, func(a, b cue) bool {
				return a.start == b.start && a.end == b.end && slices.Equal(a.lines, b.lines)
			}) {
				t.Fatalf("cues\n got %v\nwant %v", got, tc.want)
			}
			// The over-long line is the one violation, reported by Segment and found by Check.
			if len(issues) != 1 || issues[0].Rule != RuleCPL || issues[0].Cue != tc.long[0] || issues[0].Line != tc.long[1] {
				t.Errorf("unavoidable violations %v, want cpl on cue %d line %d", issues, tc.long[0], tc.long[1])
			}
			hard := Check(cues, tc.p).Hard()
			if len(hard) != 1 || hard[0].Rule != RuleCPL || hard[0].Cue != tc.long[0] || hard[0].Line != tc.long[1] {
				t.Errorf("hard violations %v", hard)
			}
			if d := cues[tc.long[0]].End - cues[tc.long[0]].Start; d < tc.p.MinDuration {
				t.Errorf("the long word's cue lasts %v, under %v", d, tc.p.MinDuration)
			}
		})
	}
}
