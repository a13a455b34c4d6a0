//go:build pocketsphinx

package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPocketsphinxRegistry(t *testing.T) {
	r := NewRegistry()
	if got := r.Names(); !reflect.DeepEqual(got, []string{PocketsphinxName, ScriptedName}) {
		t.Fatalf("names %v, want pocketsphinx and scripted in a build with the tag", got)
	}
	psModelOrSkip(t)
	e, err := r.New(PocketsphinxName)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Name() != PocketsphinxName {
		t.Fatalf("name %q", e.Name())
	}
}

func TestPocketsphinxMissingModel(t *testing.T) {
	_, err := NewPocketsphinx(PocketsphinxOptions{ModelDir: t.TempDir()})
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "pocketsphinx-en-us") {
		t.Fatalf("error %v", err)
	}
	psModelOrSkip(t)
	_, err = NewPocketsphinx(PocketsphinxOptions{ExtraArgs: []string{"-no_such_flag", "1"}})
	if err == nil {
		t.Fatal("an unknown decoder flag was accepted")
	}
}

// checkPSResult asserts what every transcript must satisfy: utterances in order, words inside
// their utterance and the audio, in order on their channel, confidences in (0, 1].
func checkPSResult(t *testing.T, res Result) {
	t.Helper()
	lastEnd := map[int]float64{}
	for i, u := range res.Utterances {
		if i > 0 && u.Start < res.Utterances[i-1].Start {
			t.Fatalf("utterance %d starts before the previous one", i)
		}
		if !(u.Start < u.End) || u.Start < 0 || u.End > res.Duration+1e-9 || u.Language != "en" || u.Speaker != u.Channel {
			t.Fatalf("utterance %d: %+v in %v s of audio", i, u, res.Duration)
		}
		checkWords(t, u)
		for _, w := range u.Words {
			if w.Start < lastEnd[u.Channel] {
				t.Fatalf("word %+v starts before the previous word of channel %d ends (%v)", w, u.Channel, lastEnd[u.Channel])
			}
			lastEnd[u.Channel] = w.End
			if strings.ContainsAny(w.Text, "<>[]()") {
				t.Fatalf("filler or variant left in %q", w.Text)
			}
		}
	}
}

func TestPocketsphinxSentences(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{})
	sp := speak(t, psSentences, 1)
	res, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{sp.samples}, SampleRate: SampleRate, Languages: []string{"en"}})
	if err != nil {
		t.Fatal(err)
	}
	checkPSResult(t, res)
	if want := float64(len(sp.samples)) / SampleRate; res.Duration != want {
		t.Fatalf("duration %v, want %v", res.Duration, want)
	}
	if len(res.Utterances) != len(psSentences) {
		t.Errorf("%d utterances for %d sentences separated by 1 s", len(res.Utterances), len(psSentences))
	}
	var w werCounter
	for i, u := range res.Utterances {
		if i < len(sp.spans) {
			if s := sp.spans[i]; u.Start < s[0]-0.3 || u.End > s[1]+0.3 {
				t.Errorf("utterance %d at %v–%v, the sentence at %v–%v", i, u.Start, u.End, s[0], s[1])
			}
		}
	}
	w.add(strings.Join(psSentences, " "), resultText(res))
	t.Logf("flite, %d sentences, %d words: WER %.1f %% (%d errors)", len(psSentences), w.words, 100*w.rate(), w.errs)
	for _, u := range res.Utterances {
		t.Logf("  %.2f–%.2f conf %.2f: %s", u.Start, u.End, u.Confidence, u.Text)
	}
	if w.rate() > 0.20 {
		t.Fatalf("WER %.1f %% above 20 %%", 100*w.rate())
	}
}

// Single words with 0.5 s of silence between them: each recognised word's times are within
// 0.1 s of where the word's audio is.
func TestPocketsphinxWordTimes(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{})
	words := []string{"hello", "kitchen", "morning", "yellow", "garden", "station", "window", "river", "table", "weather", "market", "office"}
	sp := speak(t, words, 0.5)
	res, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{sp.samples}})
	if err != nil {
		t.Fatal(err)
	}
	checkPSResult(t, res)
	var got []Word
	for _, u := range res.Utterances {
		got = append(got, u.Words...)
	}
	matched := 0
	var worst float64
	for i, text := range words {
		s := sp.spans[i]
		for _, w := range got {
			if w.Text != text || w.End < s[0] || w.Start > s[1] {
				continue
			}
			matched++
			dStart, dEnd := w.Start-s[0], w.End-s[1]
			worst = max(worst, math.Abs(dStart), math.Abs(dEnd))
			t.Logf("%-8s known %.3f–%.3f recognised %.3f–%.3f (%+.3f, %+.3f)", text, s[0], s[1], w.Start, w.End, dStart, dEnd)
			if math.Abs(dStart) > 0.1 || math.Abs(dEnd) > 0.1 {
				t.Errorf("%q at %.3f–%.3f, its audio at %.3f–%.3f: more than 0.1 s off", text, w.Start, w.End, s[0], s[1])
			}
		}
	}
	t.Logf("%d of %d words recognised at their place; worst boundary error %.3f s", matched, len(words), worst)
	if matched < len(words)*3/4 {
		t.Fatalf("only %d of %d isolated words recognised: %s", matched, len(words), resultText(res))
	}
}

// The LibriVox clips of pocketsphinx-testdata.
func TestPocketsphinxLibriVox(t *testing.T) {
	tr, err := os.ReadFile(filepath.Join(librivoxDir, "transcription"))
	if err != nil {
		t.Skipf("pocketsphinx-testdata not installed (%v): apt-get install pocketsphinx-testdata", err)
	}
	p := newPSEngine(t, PocketsphinxOptions{})
	var w werCounter
	var audioSec float64
	var took time.Duration
	var confRight, confWrong meanOf
	for _, line := range strings.Split(strings.TrimSpace(string(tr)), "\n") {
		i := strings.LastIndexByte(line, '(')
		id := strings.Trim(line[i:], "() ")
		ref := strings.NewReplacer("<s>", "", "</s>", "").Replace(line[:i])
		ch := readAudio16k(t, filepath.Join(librivoxDir, id+".wav"))
		start := time.Now()
		res, err := p.Transcribe(context.Background(), Request{Channels: ch})
		if err != nil {
			t.Fatal(err)
		}
		took += time.Since(start)
		audioSec += res.Duration
		checkPSResult(t, res)
		refWords := normWords(ref)
		for _, u := range res.Utterances {
			for _, wd := range u.Words {
				if slices.Contains(refWords, strings.ToLower(wd.Text)) {
					confRight.add(wd.Confidence)
				} else {
					confWrong.add(wd.Confidence)
				}
			}
		}
		e := w.add(ref, resultText(res))
		t.Logf("%s: %d errors\n  ref %s\n  hyp %s", id, e, strings.TrimSpace(ref), resultText(res))
	}
	t.Logf("LibriVox (pocketsphinx-testdata), %d words, %.1f s: WER %.1f %%, RTF %.2f", w.words, audioSec, 100*w.rate(), took.Seconds()/audioSec)
	t.Logf("mean confidence of %d words of the reference %.2f, of %d others %.2f", confRight.n, confRight.mean(), confWrong.n, confWrong.mean())
	if confRight.mean() <= confWrong.mean() {
		t.Errorf("confidences do not tell right words from wrong ones")
	}
	if w.rate() > 0.45 {
		t.Fatalf("WER %.1f %% above the 45 %% expected at worst", 100*w.rate())
	}
}

func TestPocketsphinxLanguages(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{Decoders: 1})
	x := [][]float32{silence(0.5)}
	for _, ok := range [][]string{nil, {"en"}, {"EN"}, {"en-US"}, {"en_gb"}, {""}} {
		if _, err := p.Transcribe(context.Background(), Request{Channels: x, Languages: ok}); err != nil {
			t.Errorf("languages %q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"fr"}, {"en", "fr"}, {"english"}} {
		_, err := p.Transcribe(context.Background(), Request{Channels: x, Languages: bad})
		var u *UnsupportedError
		want := "pocketsphinx: only an English model (en) is installed; requested " + bad[len(bad)-1]
		if !errors.As(err, &u) || err.Error() != want {
			t.Errorf("languages %q: error %v, want %q", bad, err, want)
		}
		if _, err := p.NewStream(StreamConfig{Languages: bad}); !errors.As(err, &u) {
			t.Errorf("stream in %q: error %v", bad, err)
		}
	}
}

func TestPocketsphinxErrors(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{Decoders: 1})
	checkTranscribeMisuse(t, p)
	res, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{{}}})
	if err != nil || len(res.Utterances) != 0 || res.Duration != 0 {
		t.Fatalf("empty audio: %+v %v", res, err)
	}
	for _, opts := range []PocketsphinxOptions{{Endpointing: 100}, {MaxChunk: 0.1}, {SpeechThreshold: 2}} {
		if _, err := newPocketsphinx(opts); err == nil {
			t.Errorf("options %+v accepted", opts)
		}
	}
}

// The pool: a stream holds a decoder for its life; NewStream does not wait, Transcribe does.
func TestPocketsphinxPool(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{Decoders: 1})
	st, err := p.NewStream(StreamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var busy *BusyError
	if _, err := p.NewStream(StreamConfig{}); !errors.As(err, &busy) || busy.Size != 1 || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("second stream on a pool of one: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Transcribe(ctx, Request{Channels: [][]float32{silence(1)}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("transcribe while the only decoder is busy: %v", err)
	}
	var u *UnsupportedError
	if _, err := p.NewStream(StreamConfig{Channels: 2}); !errors.As(err, &u) {
		t.Fatalf("two channels on a pool of one: %v", err)
	}
	// Transcribe waits for the stream to end.
	done := make(chan error, 1)
	go func() {
		_, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{silence(1)}})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, err = p.NewStream(StreamConfig{})
	if err != nil {
		t.Fatalf("the decoder did not come back: %v", err)
	}
	_ = st.Close()
}

// Any decoder of the pool, fresh or not, after a live stream or not, gives the same words for
// the same audio, and decoders work side by side.
func TestPocketsphinxDeterministic(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{Decoders: 2})
	x := speak(t, psSentences[:3], 0.5).samples
	req := Request{Channels: [][]float32{x}}
	first, err := p.Transcribe(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// A live stream of other audio on the same decoders.
	runStream(t, p, StreamConfig{Endpointing: 0.3, SpeechThreshold: 0.5}, [][]float32{speak(t, psSentences[5:6], 0.3).samples}, 1600)
	var wg sync.WaitGroup
	results := make([]Result, 4)
	errs := make([]error, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = p.Transcribe(context.Background(), req)
		}()
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !reflect.DeepEqual(results[i], first) {
			t.Fatalf("run %d differs:\n%+v\n%+v", i, results[i], first)
		}
	}
}

func TestPocketsphinxChannels(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{})
	a := speak(t, psSentences[0:1], 0.5).samples
	b := append(silence(2.5), speak(t, psSentences[2:3], 0.5).samples...)
	n := max(len(a), len(b))
	res, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{pad(a, n), pad(b, n), silence(float64(n) / SampleRate)}})
	if err != nil {
		t.Fatal(err)
	}
	checkPSResult(t, res)
	if len(res.Utterances) != 2 || res.Utterances[0].Channel != 0 || res.Utterances[1].Channel != 1 {
		t.Fatalf("utterances %+v", res.Utterances)
	}
	for i, ref := range []string{psSentences[0], psSentences[2]} {
		var w werCounter
		if w.add(ref, res.Utterances[i].Text); w.rate() > 0.25 {
			t.Errorf("channel %d: %q for %q", i, res.Utterances[i].Text, ref)
		}
	}
}

// Speech longer than MaxChunk without a pause of Endpointing is cut at a shorter pause.
func TestPocketsphinxLongSpeech(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{})
	texts := append(slices.Clone(psSentences), psSentences[:4]...)
	sp := speak(t, texts, 0.15) // pauses under the 0.3 s that split utterances
	spans, err := p.plan(sp.samples)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) < 2 {
		t.Fatalf("%.1f s of speech in %d pieces", float64(len(sp.samples))/SampleRate, len(spans))
	}
	for i, s := range spans {
		if d := float64(s.to-s.from) / SampleRate; d > psMaxChunk+2*float64(psContext)/SampleRate {
			t.Errorf("piece %d lasts %.1f s", i, d)
		}
		if i == 0 {
			continue
		}
		cut := float64(s.from) / SampleRate
		inGap := false
		for j := 1; j < len(sp.spans); j++ {
			if cut >= sp.spans[j-1][1] && cut <= sp.spans[j][0] {
				inGap = true
			}
		}
		if !inGap {
			t.Errorf("cut at %.2f s is not in a pause between sentences", cut)
		}
	}
	res, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{sp.samples}})
	if err != nil {
		t.Fatal(err)
	}
	checkPSResult(t, res)
	var w werCounter
	w.add(strings.Join(texts, " "), resultText(res))
	t.Logf("%.1f s of speech, %d pieces: WER %.1f %%", float64(len(sp.samples))/SampleRate, len(spans), 100*w.rate())
	if w.rate() > 0.20 {
		t.Fatalf("WER %.1f %%: %s", 100*w.rate(), resultText(res))
	}
}

func TestPocketsphinxVocabulary(t *testing.T) {
	var notes []string
	var mu sync.Mutex
	p := newPSEngine(t, PocketsphinxOptions{Decoders: 1, Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, fmt.Sprintf(f, a...))
	}})
	sp := speak(t, []string{"please open scribehook on the server"}, 0.5)
	plain, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{sp.samples}})
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := p.Transcribe(context.Background(), Request{Channels: [][]float32{sp.samples}, Vocabulary: []string{"Scribehook", "Stella", "R2D2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without vocabulary: %q; with: %q; notes %q", resultText(plain), resultText(vocab), notes)
	if strings.Contains(strings.ToLower(resultText(plain)), "scribehook") || !strings.Contains(resultText(vocab), "Scribehook") {
		t.Fatalf("without vocabulary %q, with %q", resultText(plain), resultText(vocab))
	}
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, `"R2D2" skipped`) }) {
		t.Errorf("no note for the word without a pronunciation: %q", notes)
	}
	// Live too.
	var live []string
	for _, e := range finalsOf(runStream(t, p, StreamConfig{Endpointing: 0.3, SpeechThreshold: DefaultSpeechThreshold, Vocabulary: []string{"Scribehook"}}, [][]float32{sp.samples}, 1600).events) {
		live = append(live, e.Utterance.Text)
	}
	if !strings.Contains(strings.Join(live, " "), "Scribehook") {
		t.Errorf("live with the vocabulary: %q", live)
	}
	// The decoder that learnt the word is not reused.
	p.mu.Lock()
	idle := len(p.idle)
	p.mu.Unlock()
	d, err := p.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(d)
	if _, ok := d.lookup("scribehook"); ok || idle != 0 {
		t.Fatalf("a decoder with the added word went back to the pool (%d idle)", idle)
	}
}

func TestLetterToPhones(t *testing.T) {
	phones := map[string]bool{}
	for _, ph := range strings.Fields("AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH") {
		phones[ph] = true
	}
	for word, want := range map[string]string{
		"zork":      "Z AO R K",
		"knight":    "N AY T",
		"cyber":     "S IH B ER",
		"mochi":     "M AA CH IH",
		"yelp":      "Y EH L P",
		"grape":     "G R AE P",
		"fizzbuzz":  "F IH Z B AH Z",
		"quokka's":  "K W AA K AE S",
		"xanthippe": "K S AE N TH IH P",
	} {
		got := letterToPhones(word)
		if got != want {
			t.Errorf("%s: %q, want %q", word, got, want)
		}
		for _, ph := range strings.Fields(got) {
			if !phones[ph] {
				t.Errorf("%s: %q is not a phone of the model", word, ph)
			}
		}
	}
}

type meanOf struct {
	sum float64
	n   int
}

func (m *meanOf) add(v float64) { m.sum += v; m.n++ }

func (m meanOf) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}
