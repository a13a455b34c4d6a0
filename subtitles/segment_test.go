package subtitles

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

// words builds api words from "text start end|text start end|…" (times in seconds).
func words(spec string) []api.Word {
	var out []api.Word
	for _, f := range strings.Split(spec, "|") {
		parts := strings.Fields(f)
		start, err1 := strconv.ParseFloat(parts[len(parts)-2], 64)
		end, err2 := strconv.ParseFloat(parts[len(parts)-1], 64)
		if err1 != nil || err2 != nil {
			panic("bad word spec " + f)
		}
		out = append(out, api.Word{Word: strings.Join(parts[:len(parts)-2], " "), Start: start, End: end})
	}
	return out
}

// cueString is a cue as the golden tables write it: "start → end | line | line".
func cueString(c Cue) string {
	s := timestamp(c.Start, ',') + " → " + timestamp(c.End, ',')
	for _, l := range c.Lines {
		s += " | " + l
	}
	return s
}

func speaker(n int) *int { return &n }

// slowCount is ten words of 0.6 s every 0.9 s: 9.7 s of speech without a pause.
func slowCount() []api.Word {
	var spec []string
	t := 1.0
	for _, w := range strings.Fields("one two three four five six seven eight nine ten") {
		spec = append(spec, fmt.Sprintf("%s %.3f %.3f", w, t, t+0.6))
		t += 0.9
	}
	return words(strings.Join(spec, "|"))
}

func TestSegmentGolden(t *testing.T) {
	adult := DefaultProfile()
	cjk := adult
	cjk.MaxCharsPerLine = 10
	labels := adult
	labels.SpeakerLabels = true
	labels.SpeakerName = func(n int) string { return []string{"Anna", "Ben"}[n] }
	for _, tc := range []struct {
		name string
		p    Profile
		in   []api.Utterance
		want []string
	}{{
		// Start at the first word; end extended to the 5/6 s minimum (834 ms, rounded up).
		name: "minimum duration",
		p:    adult,
		in:   []api.Utterance{{Words: words("Hello 1.0 1.3|world. 1.35 1.7|How 4.0 4.2|are 4.25 4.4|you? 4.45 4.8")}},
		want: []string{
			"00:00:01,000 → 00:00:01,834 | Hello world.",
			"00:00:04,000 → 00:00:04,834 | How are you?",
		},
	}, {
		// Two short sentences 0.3 s apart: two cues would each be too short, one is not.
		name: "short cues merge",
		p:    adult,
		in:   []api.Utterance{{Words: words("One. 1.0 1.4|Two. 1.7 2.0")}},
		want: []string{"00:00:01,000 → 00:00:02,000 | One. Two."},
	}, {
		// 69 characters: two lines, broken before the preposition, not after "the" (where
		// greedy filling breaks: "…go to the" / "station…").
		name: "balanced line break",
		p:    adult,
		in: []api.Utterance{{Words: words("I 1.0 1.1|think 1.15 1.4|we 1.45 1.55|should 1.6 1.85|probably 1.9 2.3|go 2.35 2.5|" +
			"to 2.55 2.65|the 2.7 2.8|station 2.85 3.3|before 3.35 3.6|the 3.65 3.75|train 3.8 4.1|leaves. 4.15 4.6")}},
		want: []string{"00:00:01,000 → 00:00:04,600 | I think we should probably go | to the station before the train leaves."},
	}, {
		// "Ready?" alone would last 416 ms (the answer comes 100 ms later): a dual cue,
		// ending at the answer's end extended to 834 ms.
		name: "dual speaker",
		p:    adult,
		in: []api.Utterance{
			{Speaker: speaker(0), Words: words("Ready? 1.0 1.4")},
			{Speaker: speaker(1), Words: words("Yes. 1.5 1.7")},
		},
		want: []string{"00:00:01,000 → 00:00:01,834 | -Ready? | -Yes."},
	}, {
		// BBC: no dual cues; the speaker change is a cue boundary and the first cue is cut
		// 2 frames at 25 fps (80 ms) before the next.
		name: "speaker change",
		p:    must(ProfileByName(BBC)),
		in: []api.Utterance{
			{Speaker: speaker(0), Words: words("Ready? 1.0 1.4")},
			{Speaker: speaker(1), Words: words("Yes. 1.5 1.7")},
		},
		want: []string{
			"00:00:01,000 → 00:00:01,420 | Ready?",
			"00:00:01,500 → 00:00:02,200 | Yes.",
		},
	}, {
		// A pause of 2 s or more always ends a cue, even after "to".
		name: "long pause",
		p:    adult,
		in:   []api.Utterance{{Words: words("We 1.0 1.2|went 1.25 1.5|to 1.55 1.65|the 4.0 4.1|market 4.15 4.6|today. 4.65 5.0")}},
		want: []string{
			"00:00:01,000 → 00:00:01,834 | We went to",
			"00:00:04,000 → 00:00:05,000 | the market today.",
		},
	}, {
		// 9.7 s of speech: two cues under 7 s, balanced; the first closes the 300 ms gap
		// to 84 ms (2 frames at 24 fps).
		name: "maximum duration",
		p:    adult,
		in:   []api.Utterance{{Words: slowCount()}},
		want: []string{
			"00:00:01,000 → 00:00:05,416 | one two three four five",
			"00:00:05,500 → 00:00:09,700 | six seven eight nine ten",
		},
	}, {
		// Chinese words join without spaces and break anywhere; 10 runes per line.
		name: "CJK",
		p:    cjk,
		in: []api.Utterance{{Language: "zh", Words: words("我们 1.0 1.3|今天 1.3 1.6|下午 1.6 1.9|一起 1.9 2.2|去 2.2 2.35|" +
			"北京 2.35 2.7|看看 2.7 3.0|朋友， 3.0 3.4|好吗？ 3.4 3.8")}},
		want: []string{"00:00:01,000 → 00:00:03,800 | 我们今天下午一起去 | 北京看看朋友，好吗？"},
	}, {
		// Emoji count as runes (👩‍💻 is three); 31 runes fit one line.
		name: "emoji",
		p:    adult,
		in:   []api.Utterance{{Words: words("I 1.0 1.1|love 1.1 1.4|coding 1.4 1.8|👩‍💻 1.8 2.0|so 2.0 2.2|much 2.2 2.5|😀! 2.5 2.8")}},
		want: []string{"00:00:01,000 → 00:00:02,800 | I love coding 👩‍💻 so much 😀!"},
	}, {
		name: "speaker labels",
		p:    labels,
		in: []api.Utterance{
			{Speaker: speaker(0), Words: words("Hello 1.0 1.3|there. 1.35 1.7")},
			{Speaker: speaker(1), Words: words("Hi 4.0 4.2|Anna, 4.25 4.6|how 4.65 4.8|are 4.85 5.0|you 5.05 5.2|doing 5.25 5.5|" +
				"on 5.55 5.65|this 5.7 5.85|fine 5.9 6.2|morning? 6.25 6.7|I 9.0 9.1|am 9.15 9.3|fine. 9.35 9.7")},
		},
		want: []string{
			"00:00:01,000 → 00:00:01,900 | Anna: Hello there.",
			"00:00:04,000 → 00:00:06,700 | Ben: Hi Anna, how are you doing | on this fine morning?",
			"00:00:09,000 → 00:00:09,834 | I am fine.",
		},
	}, {
		// Text markup and separators are kept raw in cues; only "-->" is replaced.
		name: "hostile text",
		p:    adult,
		in:   []api.Utterance{{Words: words("AT&T 1.0 1.4|<inaudible> 1.5 2.0|a --> b 2.1 2.4|x>y 2.5 2.7")}},
		want: []string{"00:00:01,000 → 00:00:02,700 | AT&T <inaudible> a → b x>y"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cues, issues, err := Segment(tc.in, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if len(issues) != 0 {
				t.Errorf("issues: %v", issues)
			}
			var got []string
			for _, c := range cues {
				got = append(got, cueString(c))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if hard := Check(cues, tc.p).Hard(); len(hard) != 0 {
				t.Errorf("hard violations: %v", hard)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A single word longer than a line is the one hard violation that cannot be helped: it gets
// a line of its own and is reported, with the cue, the line and the numbers. Here it shares a
// cue with "It's", which alone would have lasted 0.166 s.
func TestSegmentLongWord(t *testing.T) {
	cues, issues, err := Segment([]api.Utterance{{Words: words(
		"It's 1.0 1.2|Pneumonoultramicroscopicsilicovolcanoconiosis 1.25 3.5|really. 3.6 4.0")}}, DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"00:00:01,000 → 00:00:03,516 | It's | Pneumonoultramicroscopicsilicovolcanoconiosis",
		"00:00:03,600 → 00:00:04,434 | really.",
	}
	if len(cues) != len(want) {
		t.Fatalf("%d cues, want %d", len(cues), len(want))
	}
	for i, c := range cues {
		if cueString(c) != want[i] {
			t.Errorf("cue %d: %s, want %s", i, cueString(c), want[i])
		}
	}
	if len(issues) != 1 || issues[0].Rule != RuleCPL || issues[0].Cue != 0 || issues[0].Line != 1 || issues[0].Value != 45 || issues[0].Limit != 42 || !issues[0].Hard {
		t.Fatalf("issues %v", issues)
	}
	hard := Check(cues, DefaultProfile()).Hard()
	if len(hard) != 1 || hard[0].Cue != 0 || hard[0].Line != 1 {
		t.Fatalf("check: %v", hard)
	}
}

// Normalisation repairs times exactly as documented.
func TestNormalizeTimes(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	utts := []api.Utterance{
		// Listed second but earlier: utterances are sorted.
		{Start: 5, End: 6, Words: words("later 5.0 5.5")},
		{Start: 1, End: 4, Words: []api.Word{
			{Word: " Hello", Start: 1.0, End: 1.5},     // leading space (Whisper)
			{Word: "big", Start: nan, End: nan},        // missing: interpolated, 3/4 of the gap for 3 runes
			{Word: "wide", Start: 2.0, End: 2.6},       // overlaps the next word: trimmed to 2.3
			{Word: "world", Start: 2.3, End: 2.2},      // end before start: clamped
			{Word: "again", Start: 2.1, End: 2.9},      // starts before the previous: moved to 2.3
			{Word: "zero", Start: 3.5, End: 3.5},       // zero length: lengthened up to the next word
			{Word: "", Start: 3.6, End: 3.7},           // empty: dropped
			{Word: "tail", Start: 3.6000004, End: 3.8}, // sub-millisecond: rounded
		}},
	}
	got, _ := normalize(utts, DefaultProfile(), "")
	want := []string{"Hello 1s 1.5s", "big 1.5s 1.875s", "wide 2s 2.3s", "world 2.3s 2.3s", "again 2.3s 2.9s",
		"zero 3.5s 3.6s", "tail 3.6s 3.8s", "later 5s 5.5s"}
	for i, w := range got {
		if s := fmt.Sprintf("%s %v %v", w.text, w.start, w.end); i >= len(want) || s != want[i] {
			t.Errorf("word %d: %s, want %s", i, s, want[min(i, len(want)-1)])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d words, want %d", len(got), len(want))
	}
}

// A translation arrives as text spread over the utterance; CJK text is split per character.
func TestSplitText(t *testing.T) {
	for in, want := range map[string]string{
		"Bonjour  Zoë.": "Bonjour|Zoë.",
		"我们去北京。好吗？":     "我|们|去|北|京。|好|吗？",
		"用iPhone拍「照片」。": "用|iPhone|拍|「照|片」。",
		"a --> b ->c":   "a|→|b|→c",
	} {
		got := strings.Join(splitText(in), "|")
		if got != want {
			t.Errorf("splitText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProfiles(t *testing.T) {
	for _, name := range ProfileNames() {
		p := must(ProfileByName(name))
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if p := must(ProfileByName("")); p.Name != NetflixAdult || p.MaxCharsPerLine != 42 || p.MaxLines != 2 ||
		p.MinDuration != 5*time.Second/6 || p.MaxDuration != 7*time.Second || p.MaxCPS != 20 || p.MinGapFrames != 2 || p.FrameRate != 24 {
		t.Errorf("default profile %+v", p)
	}
	if p := must(ProfileByName("Netflix-Kids")); p.MaxCPS != 17 {
		t.Errorf("kids %+v", p)
	}
	if p := must(ProfileByName("bbc")); p.MaxCharsPerLine != 37 || p.DualSpeaker {
		t.Errorf("bbc %+v", p)
	}
	if _, err := ProfileByName("dvd"); err == nil {
		t.Error("unknown profile accepted")
	}
	if p := DefaultProfile(); p.MinGap() != 84*time.Millisecond {
		t.Errorf("min gap %v", p.MinGap())
	}
	one, five, cpr, rows := 1.0, 5.5, 32, 3
	p := DefaultProfile().WithConfig(&api.SubtitlesConfig{MinimumDuration: &one, MaximumDuration: &five,
		MaximumCharactersPerRow: &cpr, MaximumRowsPerCaption: &rows})
	if p.MinDuration != time.Second || p.MaxDuration != 5500*time.Millisecond || p.MaxCharsPerLine != 32 || p.MaxLines != 3 || p.MaxCPS != 20 {
		t.Errorf("with config %+v", p)
	}
	if DefaultProfile().WithConfig(nil).MaxCharsPerLine != 42 {
		t.Error("nil config changed the profile")
	}
	bad := DefaultProfile()
	bad.MaxLines, bad.FrameRate, bad.MinDuration = 0, 0, 8*time.Second
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "MaxLines") || !strings.Contains(err.Error(), "FrameRate") {
		t.Errorf("validate: %v", err)
	}
	if _, _, err := Segment(nil, bad); err == nil {
		t.Error("Segment accepted an invalid profile")
	}
}

// A job's own subtitles_config is followed: 3 rows of 20 characters, cues of at most 4 s.
func TestSegmentWithConfig(t *testing.T) {
	cpr, rows, maxDur := 20, 3, 4.0
	p := DefaultProfile().WithConfig(&api.SubtitlesConfig{MaximumCharactersPerRow: &cpr, MaximumRowsPerCaption: &rows, MaximumDuration: &maxDur})
	cues, issues, err := Segment(benchTranscript(2000), p)
	if err != nil || len(issues) != 0 {
		t.Fatal(err, issues)
	}
	three := 0
	for _, c := range cues {
		if len(c.Lines) == 3 {
			three++
		}
	}
	r := Check(cues, p)
	if len(r.Hard()) != 0 || three == 0 {
		t.Fatalf("hard %v, %d three-line cues", r.Hard(), three)
	}
}
