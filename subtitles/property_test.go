package subtitles

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asticode/go-astisub"
	"github.com/scribehook/scribehook/api"
)

// segmentAll runs the pipeline with its internals exposed: normalised words, spans, cues.
func segmentAll(t testing.TB, utts []api.Utterance, p Profile) ([]word, []span, []Cue, []Violation) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	words, names := normalize(utts, p, "")
	s := newSegmenter(words, names, p)
	cues, spans := s.build(s.run())
	return words, spans, cues, s.unavoidable(cues, spans)
}

// expectedWords is what normalisation must keep of each utterance, in order.
func expectedWords(u api.Utterance) []string {
	if len(u.Words) == 0 {
		return splitText(u.Text)
	}
	var out []string
	for _, w := range u.Words {
		if c := cleanText(w.Word); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// checkInvariants asserts every property the issue lists; it returns the first failure.
func checkInvariants(utts []api.Utterance, p Profile, words []word, spans []span, cues []Cue, issues []Violation) error {
	// 1. Every input word appears exactly once, in its utterance's order.
	got := make([][]string, len(utts))
	for _, w := range words {
		got[w.utt] = append(got[w.utt], w.text)
	}
	total := 0
	for u := range utts {
		want := expectedWords(utts[u])
		total += len(want)
		if !slices.Equal(got[u], want) {
			return fmt.Errorf("utterance %d: words %q, want %q", u, got[u], want)
		}
	}
	if total != len(words) {
		return fmt.Errorf("%d normalised words, want %d", len(words), total)
	}
	// 2. Normalised words: whole milliseconds, start ≤ end, starts sorted, no overlap.
	for i, w := range words {
		if w.start%time.Millisecond != 0 || w.end%time.Millisecond != 0 || w.start < 0 || w.end < w.start {
			return fmt.Errorf("word %d %q: times %v–%v", i, w.text, w.start, w.end)
		}
		if i > 0 && (w.start < words[i-1].start || words[i-1].end > w.start) {
			return fmt.Errorf("word %d %q: %v–%v after %v–%v", i, w.text, w.start, w.end, words[i-1].start, words[i-1].end)
		}
	}
	// 3. Cues tile the words in order, and each line is exactly consecutive words.
	if len(spans) != len(cues) {
		return fmt.Errorf("%d spans, %d cues", len(spans), len(cues))
	}
	next := 0
	for c, sp := range spans {
		if sp.i != next || sp.j <= sp.i {
			return fmt.Errorf("cue %d covers words [%d,%d), want from %d", c, sp.i, sp.j, next)
		}
		next = sp.j
		a := sp.i
		for l, line := range cues[c].Lines {
			if l == 0 {
				line = strings.TrimPrefix(line, cues[c].Label)
			}
			if cues[c].Dual {
				line = strings.TrimPrefix(line, "-")
			}
			var sb strings.Builder
			b := a
			for b < sp.j && sb.Len() < len(line) {
				if b > a && !words[b].tightBefore {
					sb.WriteByte(' ')
				}
				sb.WriteString(words[b].text)
				b++
			}
			if sb.String() != line || b == a {
				return fmt.Errorf("cue %d line %d %q is not words from %d (%q)", c, l, line, a, sb.String())
			}
			a = b
		}
		if a != sp.j {
			return fmt.Errorf("cue %d lines stop at word %d, span ends at %d", c, a, sp.j)
		}
	}
	if next != len(words) {
		return fmt.Errorf("cues stop at word %d of %d", next, len(words))
	}
	// 4. Cues sorted, end > start, gaps ≥ MinGap, whole milliseconds.
	gap := p.MinGap()
	for c, cue := range cues {
		if cue.Start%time.Millisecond != 0 || cue.End%time.Millisecond != 0 || cue.Start < 0 || cue.End <= cue.Start {
			return fmt.Errorf("cue %d: %v → %v", c, cue.Start, cue.End)
		}
		if c > 0 && cue.Start-cues[c-1].End < gap {
			return fmt.Errorf("cue %d starts %v after cue %d ends, want ≥ %v", c, cue.Start-cues[c-1].End, c-1, gap)
		}
	}
	// 5. No hard-rule violation except a word longer than a line, alone on its line (no
	// label, no dash), which Segment reported.
	var unavoidable []Violation
	for _, v := range Check(cues, p).Hard() {
		sp := spans[v.Cue]
		if v.Rule != RuleCPL || v.Line < 0 || !slices.ContainsFunc(words[sp.i:sp.j], func(w word) bool {
			return w.runes > p.MaxCharsPerLine && w.text == cues[v.Cue].Lines[v.Line]
		}) {
			return fmt.Errorf("hard violation %v in %q", v, cues[v.Cue].Lines)
		}
		unavoidable = append(unavoidable, v)
	}
	if len(unavoidable) != len(issues) {
		return fmt.Errorf("check found %d unavoidable violations, Segment reported %v", len(unavoidable), issues)
	}
	for k := range issues {
		if issues[k].Cue != unavoidable[k].Cue || issues[k].Line != unavoidable[k].Line || issues[k].Rule != unavoidable[k].Rule {
			return fmt.Errorf("reported %v, check found %v", issues[k], unavoidable[k])
		}
	}
	// 6. A cue holding a word longer than a line still lasts MinDuration (whole milliseconds,
	// at most MaxDuration): it cannot borrow words from its neighbours like other short cues,
	// so the timing must give it the time.
	minDur := min(ceilMS(p.MinDuration), max(time.Millisecond, floorMS(p.MaxDuration)))
	for c, sp := range spans {
		long := slices.ContainsFunc(words[sp.i:sp.j], func(w word) bool { return w.runes > p.MaxCharsPerLine })
		if d := cues[c].End - cues[c].Start; long && d < minDur {
			return fmt.Errorf("cue %d %q holds a word longer than a line and lasts %v, under %v", c, cues[c].Lines, d, minDur)
		}
	}
	return nil
}

// checkFiles renders SRT and WebVTT, validates them strictly and reads them back with
// astisub: same cues, same times, same text.
func checkFiles(cues []Cue) error {
	for _, f := range []Format{SRT, VTT} {
		var buf bytes.Buffer
		if err := Render(&buf, cues, f, Options{}); err != nil {
			return err
		}
		b := buf.Bytes()
		var err error
		var subs *astisub.Subtitles
		if f == SRT {
			err = ValidateSRT(b)
			if err == nil && len(cues) > 0 {
				subs, err = astisub.ReadFromSRT(bytes.NewReader(b))
			}
		} else {
			err = ValidateVTT(b)
			if err == nil && len(cues) > 0 {
				subs, err = astisub.ReadFromWebVTT(bytes.NewReader(b))
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", f, err, b)
		}
		if len(cues) == 0 {
			continue
		}
		if len(subs.Items) != len(cues) {
			return fmt.Errorf("%s: astisub read %d cues, want %d", f, len(subs.Items), len(cues))
		}
		for c, it := range subs.Items {
			if it.StartAt != cues[c].Start || it.EndAt != cues[c].End {
				return fmt.Errorf("%s cue %d: astisub read %v → %v, want %v → %v", f, c, it.StartAt, it.EndAt, cues[c].Start, cues[c].End)
			}
			var lines []string
			for _, l := range it.Lines {
				var sb strings.Builder
				for _, li := range l.Items {
					sb.WriteString(li.Text)
				}
				lines = append(lines, strings.ReplaceAll(sb.String(), "&gt;", ">"))
			}
			if !slices.Equal(lines, cues[c].Lines) {
				return fmt.Errorf("%s cue %d: astisub read %q, want %q", f, c, lines, cues[c].Lines)
			}
		}
	}
	return nil
}

// propertyProfiles covers the presets and the corners: one line, three lines, a tiny line
// length, labels, no minimum gap, no reading-speed rule.
func propertyProfiles() []Profile {
	adult := DefaultProfile()
	kids, _ := ProfileByName(NetflixKids)
	bbc, _ := ProfileByName(BBC)
	oneLine := adult
	oneLine.Name, oneLine.MaxLines = "one-line", 1
	three := adult
	three.Name, three.MaxLines, three.MaxCharsPerLine = "three-lines", 3, 20
	tiny := adult
	tiny.Name, tiny.MaxCharsPerLine, tiny.MaxDuration = "tiny", 8, 2*time.Second
	labels := adult
	labels.Name, labels.SpeakerLabels = "labels", true
	loose := adult
	loose.Name, loose.MinGapFrames, loose.MaxCPS, loose.MinDuration, loose.CloseGap, loose.PauseBreak = "loose", 0, 0, 0, 0, 0
	return []Profile{adult, kids, bbc, oneLine, three, tiny, labels, loose}
}

// propertyCase is one generated input and what the pipeline made of it.
type propertyCase struct {
	seed   uint64
	p      Profile
	utts   []api.Utterance
	words  []word
	issues []Violation
}

// runProperties segments n inputs from gen (n/10 with -short), seeded 0 to n-1 on the given
// PCG stream, each under the next of propertyProfiles, and holds every result to
// checkInvariants, then to more (when not nil), then to checkFiles.
func runProperties(t *testing.T, n int, stream uint64, gen func(rng *rand.Rand, seed uint64) []api.Utterance, more func(t *testing.T, c propertyCase)) {
	t.Helper()
	if testing.Short() {
		n /= 10
	}
	profiles := propertyProfiles()
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, stream))
		utts := gen(rng, seed)
		p := profiles[int(seed)%len(profiles)]
		words, spans, cues, issues := segmentAll(t, utts, p)
		if err := checkInvariants(utts, p, words, spans, cues, issues); err != nil {
			t.Fatalf("seed %d, profile %s: %v", seed, p.Name, err)
		}
		if more != nil {
			more(t, propertyCase{seed: seed, p: p, utts: utts, words: words, issues: issues})
		}
		if err := checkFiles(cues); err != nil {
			t.Fatalf("seed %d, profile %s: %v", seed, p.Name, err)
		}
	}
}

func TestPropertiesHostile(t *testing.T) {
	runProperties(t, 3000, 0x5eed, func(rng *rand.Rand, _ uint64) []api.Utterance { return genHostile(rng, 60) }, nil)
}

func TestPropertiesSpeech(t *testing.T) {
	gen := func(rng *rand.Rand, seed uint64) []api.Utterance {
		utts := genSpeech(rng, 20+rng.IntN(400), rng.IntN(4))
		if seed%3 == 0 {
			// URLs longer than a line among ordinary speech: each must get a line of its own
			// and a cue of MinDuration (checkInvariants).
			utts = withLongWords(rng, utts, 40)
		}
		return utts
	}
	runProperties(t, 600, 0xc0ffee, gen, func(t *testing.T, c propertyCase) {
		// Utterances of one stream that do not overlap keep the global input order.
		var in []string
		for _, u := range c.utts {
			in = append(in, expectedWords(u)...)
		}
		out := make([]string, len(c.words))
		for i, w := range c.words {
			out[i] = w.text
		}
		if !slices.Equal(in, out) {
			t.Fatalf("seed %d: word order changed", c.seed)
		}
		// Only words longer than a line are reported (checkInvariants checks which).
		if long := slices.ContainsFunc(c.words, func(w word) bool { return w.runes > c.p.MaxCharsPerLine }); len(c.issues) != 0 && !long {
			t.Fatalf("seed %d: unexpected issues %v", c.seed, c.issues)
		}
	})
}
