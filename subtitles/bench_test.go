package subtitles

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

// greedy is the plain writer most ASR tools use (openai/whisper's SubtitlesWriter with
// max_line_width and max_line_count, plus Deepgram's cut at a speaker change): fill a line
// until the next word would not fit, open a new cue when the lines are full, when the
// speaker changes or after a pause of more than 3 s measured start to start; a cue runs
// from its first word's start to its last word's end. It is the baseline of the quality
// comparison in docs/benchmarks.md.
func greedy(utts []api.Utterance, p Profile) []Cue {
	var cues []Cue
	var cur *Cue
	var line []string
	var lastStart time.Duration
	var lastSpk string
	flushLine := func() {
		if len(line) > 0 {
			cur.Lines = append(cur.Lines, strings.Join(line, " "))
			cur.Speakers = append(cur.Speakers, cur.Speakers[0])
			line = line[:0]
		}
	}
	flushCue := func() {
		if cur != nil {
			flushLine()
			cur.Speakers = cur.Speakers[1:]
			cues = append(cues, *cur)
		}
		cur = nil
	}
	for _, u := range utts {
		spk := ""
		if u.Speaker != nil {
			spk = fmt.Sprint("Speaker ", *u.Speaker+1)
		}
		for _, w := range u.Words {
			text := cleanText(w.Word)
			if text == "" {
				continue
			}
			start, end := seconds(w.Start), seconds(w.End)
			if cur != nil && (spk != lastSpk || start-lastStart > 3*time.Second) {
				flushCue()
			}
			if cur != nil && len(line) > 0 && len(strings.Join(line, " "))+1+len(text) > p.MaxCharsPerLine {
				flushLine()
				if len(cur.Lines) >= p.MaxLines {
					flushCue()
				}
			}
			if cur == nil {
				cur = &Cue{Start: start, Speakers: []string{spk}, Language: u.Language, SpeechStart: start}
			}
			line = append(line, text)
			cur.End, cur.SpeechEnd = end, end
			lastStart, lastSpk = start, spk
		}
	}
	flushCue()
	return cues
}

// benchTranscript is the benchmark input: about n words of two-speaker speech.
func benchTranscript(n int) []api.Utterance {
	return genSpeech(rand.New(rand.NewPCG(30000, 1)), n, 2)
}

func countWords(utts []api.Utterance) int {
	n := 0
	for _, u := range utts {
		n += len(u.Words)
	}
	return n
}

// BenchmarkSegment30k segments a 30,000-word transcript.
func BenchmarkSegment30k(b *testing.B) {
	utts := benchTranscript(30000)
	p := DefaultProfile()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Segment(utts, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender30k renders the cues of a 30,000-word transcript to SRT and WebVTT.
func BenchmarkRender30k(b *testing.B) {
	cues, _, err := Segment(benchTranscript(30000), DefaultProfile())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range []Format{SRT, VTT} {
			if err := Render(io.Discard, cues, f, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPipeline30k is the target (≤ 100 ms on 2 cores): a 30,000-word
// transcript segmented and rendered to SRT and WebVTT.
func BenchmarkPipeline30k(b *testing.B) {
	utts := benchTranscript(30000)
	p := DefaultProfile()
	b.ReportAllocs()
	for b.Loop() {
		cues, _, err := Segment(utts, p)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []Format{SRT, VTT} {
			if err := Render(io.Discard, cues, f, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestQualityVsGreedy compares the rates of our segmenter and of the greedy writer on the
// benchmark transcript, for each preset; run with -v to print the table that
// docs/benchmarks.md quotes.
func TestQualityVsGreedy(t *testing.T) {
	n := 30000
	if testing.Short() {
		n = 3000
	}
	utts := benchTranscript(n)
	var out bytes.Buffer
	fmt.Fprintf(&out, "%d words\n", countWords(utts))
	fmt.Fprintln(&out, "| profile | writer | cues | hard | CPL | lines | CPS | duration (<min / >max) | gap | overlap | orphans | bad breaks | one-line | mean CPS |")
	fmt.Fprintln(&out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	pct := func(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }
	for _, name := range ProfileNames() {
		p, _ := ProfileByName(name)
		ours, _, err := Segment(utts, p)
		if err != nil {
			t.Fatal(err)
		}
		base := greedy(utts, p)
		ro, rg := Check(ours, p), Check(base, p)
		for _, row := range []struct {
			writer string
			r      Report
		}{{"scribehook", ro}, {"greedy", rg}} {
			r := row.r.Rates
			fmt.Fprintf(&out, "| %s | %s | %d | %d | %s | %s | %s | %s (%s / %s) | %s | %s | %s | %s | %s | %.1f |\n",
				name, row.writer, row.r.Cues, len(row.r.Hard()), pct(r.CPL), pct(r.Lines), pct(r.CPS),
				pct(r.Duration), pct(r.MinDuration), pct(r.MaxDuration), pct(r.Gap), pct(r.Overlap),
				pct(r.Orphans), pct(r.BadBreaks), pct(r.OneLine), row.r.MeanCPS)
		}
		if len(ro.Hard()) != 0 {
			t.Errorf("%s: hard violations %v", name, ro.Hard()[:min(5, len(ro.Hard()))])
		}
		better := func(rule string, o, g float64) {
			if o > g {
				t.Errorf("%s: %s rate %.3f is worse than greedy's %.3f", name, rule, o, g)
			}
		}
		better("cps", ro.Rates.CPS, rg.Rates.CPS)
		better("duration", ro.Rates.Duration, rg.Rates.Duration)
		better("orphans", ro.Rates.Orphans, rg.Rates.Orphans)
		better("bad breaks", ro.Rates.BadBreaks, rg.Rates.BadBreaks)
		better("gap", ro.Rates.Gap, rg.Rates.Gap)
	}
	t.Log("\n" + out.String())
}
