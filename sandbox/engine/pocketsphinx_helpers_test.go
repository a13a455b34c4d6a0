//go:build pocketsphinx

package engine

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// The test speech: flite's "slt" voice reading a fixed list of sentences, generated at test
// time (flite is a Debian package; the audio is not committed). The words of the first five
// are also the scripted engine's vocabulary (wordList).
var psSentences = []string{
	"the quick brown fox jumps over the lazy dog",
	"please call stella and ask her to bring these things with her from the store",
	"we will meet at the train station at nine tomorrow morning",
	"the weather today is cloudy with a chance of rain in the afternoon",
	"open the door and turn on the lights in the kitchen",
	"she sells fresh bread at the market every saturday",
	"the children played in the park until it got dark",
	"please send the report to my office before noon",
}

// psModelOrSkip skips a test on a machine without the model.
func psModelOrSkip(t testing.TB) {
	t.Helper()
	for _, f := range []string{"en-us/mdef", "en-us.lm.bin", "cmudict-en-us.dict"} {
		if _, err := os.Stat(filepath.Join(DefaultPocketsphinxModel, f)); err != nil {
			t.Skipf("pocketsphinx model not installed (%v): apt-get install pocketsphinx-en-us", err)
		}
	}
}

func newPSEngine(t testing.TB, opts PocketsphinxOptions) *Pocketsphinx {
	t.Helper()
	psModelOrSkip(t)
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	p, err := newPocketsphinx(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// flite synthesises text at 16 kHz, or skips the test when flite is missing.
func flite(t testing.TB, text string) []float32 {
	t.Helper()
	bin, err := exec.LookPath("flite")
	if err != nil {
		t.Skip("flite not installed: apt-get install flite")
	}
	f, err := os.CreateTemp("", "flite-*.wav")
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	defer os.Remove(f.Name())
	if out, err := exec.Command(bin, "-voice", "slt", "-t", text, "-o", f.Name()).CombinedOutput(); err != nil {
		t.Fatalf("flite: %v: %s", err, out)
	}
	return readAudio16k(t, f.Name())[0]
}

// librivoxDir holds the LibriVox clips of pocketsphinx-testdata: real speech, with its
// transcription.
const librivoxDir = "/usr/share/pocketsphinx/test/data/librivox"

// readAudio16k decodes an audio file into its channels at 16 kHz.
func readAudio16k(t testing.TB, path string) [][]float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := audio.DecodeBytes(b, audio.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := a.Resample16k()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func silence(sec float64) []float32 { return make([]float32, int(math.Round(sec*SampleRate))) }

// spoken is test audio with the known place of each piece of speech in it.
type spoken struct {
	samples []float32
	texts   []string
	spans   [][2]float64 // seconds: where each text's voiced samples are
}

// speak lays the texts out one after another, gap seconds of silence before each and after the
// last; spans are measured on the synthesised audio (voiced 10 ms frames).
func speak(t testing.TB, texts []string, gap float64) spoken {
	t.Helper()
	var s spoken
	for _, text := range texts {
		s.samples = append(s.samples, silence(gap)...)
		x := trimSilence(flite(t, text))
		at := float64(len(s.samples)) / SampleRate
		s.samples = append(s.samples, x...)
		s.texts = append(s.texts, text)
		s.spans = append(s.spans, [2]float64{at, at + float64(len(x))/SampleRate})
	}
	s.samples = append(s.samples, silence(gap)...)
	return s
}

// trimSilence cuts the quiet 10 ms frames (RMS under -40 dBFS) at both ends of synthesised
// speech, so that its length is the span of the speech.
func trimSilence(x []float32) []float32 {
	const fl = SampleRate / 100
	loud := func(f int) bool {
		var e float64
		for _, v := range x[f*fl : (f+1)*fl] {
			e += float64(v) * float64(v)
		}
		return math.Sqrt(e/fl) > 0.01
	}
	n := len(x) / fl
	a, b := 0, n
	for a < n && !loud(a) {
		a++
	}
	for b > a && !loud(b-1) {
		b--
	}
	return x[a*fl : b*fl]
}

// normWords lower-cases and strips punctuation, as word error rates are counted.
func normWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// wordErrors is the word-level Levenshtein distance between reference and hypothesis.
func wordErrors(ref, hyp []string) int {
	d := make([]int, len(hyp)+1)
	for j := range d {
		d[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		prev := d[0]
		d[0] = i
		for j := 1; j <= len(hyp); j++ {
			cur := d[j]
			sub := prev
			if ref[i-1] != hyp[j-1] {
				sub++
			}
			d[j] = min(sub, d[j]+1, d[j-1]+1)
			prev = cur
		}
	}
	return d[len(hyp)]
}

// WordErrors is wordErrors for the end-to-end test, which is outside the package.
var WordErrors = wordErrors

// werCounter sums word errors over several references.
type werCounter struct{ errs, words int }

func (w *werCounter) add(ref, hyp string) int {
	r, h := normWords(ref), normWords(hyp)
	e := wordErrors(r, h)
	w.errs += e
	w.words += len(r)
	return e
}

func (w werCounter) rate() float64 {
	if w.words == 0 {
		return 0
	}
	return float64(w.errs) / float64(w.words)
}

func resultText(res Result) string {
	var parts []string
	for _, u := range res.Utterances {
		parts = append(parts, u.Text)
	}
	return strings.Join(parts, " ")
}
