//go:build pocketsphinx

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store/sqlite"
)

// demoMaxWER is the word error rate the demo's transcripts of its own sample may have: the
// sample is clear synthetic speech whose every word the engine can know (the dictionary's,
// or the demo's custom vocabulary), so more than this means the sample or the demo's request
// regressed, as when the sample was 8 kHz speech and came back as nonsense.
const demoMaxWER = 0.10

// demoFinalLine is how the demo prints a live final transcript.
var demoFinalLine = regexp.MustCompile(`(?m)^   final \[[^\]]*\] (.*)$`)

// TestDemoHearsItsSample runs the demo with pocketsphinx (as `make demo` does on a machine with
// it, without the real-time pacing, which does not change what the engine hears) and measures
// the word error rate of the pre-recorded job's transcript and of the live session's finals
// against the sample's script, the words of its sidecar.
func TestDemoHearsItsSample(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	rep, err := runDemo(context.Background(), &out, demoOptions{outDir: dir})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if rep.Engine != pocketsphinxEngine {
		t.Skipf("pocketsphinx did not start (install pocketsphinx-en-us); the demo ran with %s", rep.Engine)
	}
	ref := strings.Join(sampleScript(t), " ")

	st := teststore.OpenSQLite(t, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	rec, err := st.GetJob(context.Background(), rep.JobID)
	if err != nil || len(rec.Job.Result) == 0 || apitest.MustResult(&rec.Job).Transcription == nil {
		t.Fatalf("stored job: %+v, %v", rec.Job, err)
	}
	prerecorded := apitest.MustResult(&rec.Job).Transcription.FullTranscript

	var finals []string
	for _, m := range demoFinalLine.FindAllStringSubmatch(out.String(), -1) {
		finals = append(finals, m[1])
	}
	if len(finals) != rep.LiveFinals {
		t.Fatalf("%d final lines in the output, %d finals reported:\n%s", len(finals), rep.LiveFinals, out.String())
	}
	live := strings.Join(finals, " ")

	for _, c := range []struct{ name, hyp string }{{"pre-recorded", prerecorded}, {"live", live}} {
		errs, words := wordErrors(ref, c.hyp)
		wer := float64(errs) / float64(words)
		t.Logf("%s: WER %.1f %% (%d errors in %d words): %q", c.name, 100*wer, errs, words, c.hyp)
		if wer > demoMaxWER {
			t.Errorf("%s transcript: WER %.1f %% above %.0f %%\n script: %s\n heard:  %s", c.name, 100*wer, 100*demoMaxWER, ref, c.hyp)
		}
	}
}

// wordErrors is the word-level edit distance between a reference and a hypothesis, compared
// in lower case without punctuation, and the reference's number of words.
func wordErrors(ref, hyp string) (errs, words int) {
	norm := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\'')
		})
	}
	r, h := norm(ref), norm(hyp)
	prev := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur := make([]int, len(h)+1)
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(h)], len(r)
}
