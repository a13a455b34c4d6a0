package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const frame = 0.02 // the VAD's frame, the tolerance on every boundary

// speech builds a 16 kHz signal from stretches in seconds, voiced first and then alternating
// with silence. Voiced stretches are syllables (a vowel-like tone, 0.2 s on, 0.05 s quieter)
// so that they look like speech to the detector and not like one steady tone.
func speech(stretches ...float64) []float32 {
	var out []float32
	for i, d := range stretches {
		n := int(math.Round(d * SampleRate))
		for j := range n {
			if i%2 == 1 {
				out = append(out, 0)
				continue
			}
			tt := float64(j) / SampleRate
			amp := 0.4
			if math.Mod(tt, 0.25) >= 0.2 {
				amp = 0.05
			}
			out = append(out, float32(amp*(math.Sin(2*math.Pi*180*tt)+0.4*math.Sin(2*math.Pi*540*tt))/1.4))
		}
	}
	return out
}

// pad returns x followed by zeros up to n samples.
func pad(x []float32, n int) []float32 { return append(x, make([]float32, max(0, n-len(x)))...) }

func transcribe(t *testing.T, e *Scripted, req Request) Result {
	t.Helper()
	res, err := e.Transcribe(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res)
	return res
}

// checkResult asserts what every transcript must satisfy.
func checkResult(t *testing.T, res Result) {
	t.Helper()
	for i, u := range res.Utterances {
		if i > 0 && u.Start < res.Utterances[i-1].Start {
			t.Fatalf("utterance %d starts before the previous one", i)
		}
		if !(u.Start < u.End) || u.Start < 0 || u.End > res.Duration+1e-9 {
			t.Fatalf("utterance %d: %v–%v in %v s of audio", i, u.Start, u.End, res.Duration)
		}
		if len(u.Words) == 0 || u.Text == "" || u.Language == "" {
			t.Fatalf("utterance %d: %+v", i, u)
		}
		checkWords(t, u)
	}
}

func checkWords(t *testing.T, u Utterance) {
	t.Helper()
	var texts []string
	for j, w := range u.Words {
		if !(w.Start < w.End) || w.Start < u.Start || w.End > u.End || !(w.Confidence > 0 && w.Confidence <= 1) || w.Text == "" {
			t.Fatalf("word %d %+v in utterance %v–%v", j, w, u.Start, u.End)
		}
		if j > 0 && w.Start < u.Words[j-1].End {
			t.Fatalf("word %d overlaps the previous one: %+v", j, u.Words)
		}
		texts = append(texts, w.Text)
	}
	if u.Text != strings.Join(texts, " ") {
		t.Fatalf("text %q, words %v", u.Text, texts)
	}
}

func near(got, want float64) bool { return math.Abs(got-want) <= frame+1e-9 }

func TestTranscribeToneSilenceTone(t *testing.T) {
	res := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{speech(1, 1, 1.5, 0.5)}, SampleRate: SampleRate})
	if res.Duration != 4 {
		t.Fatalf("duration %v", res.Duration)
	}
	if len(res.Utterances) != 2 {
		t.Fatalf("%d utterances, want 2: %+v", len(res.Utterances), res.Utterances)
	}
	for i, want := range [][2]float64{{0, 1}, {2, 3.5}} {
		u := res.Utterances[i]
		if !near(u.Start, want[0]) || !near(u.End, want[1]) {
			t.Errorf("utterance %d at %v–%v, want %v–%v ± one frame", i, u.Start, u.End, want[0], want[1])
		}
		if u.Speaker != i%2 || u.Channel != 0 || u.Language != "en" {
			t.Errorf("utterance %d: speaker %d channel %d language %q", i, u.Speaker, u.Channel, u.Language)
		}
		// About 2.5 words a second.
		if n, d := len(u.Words), u.End-u.Start; float64(n) < 1.8*d || float64(n) > 3.4*d+1 {
			t.Errorf("utterance %d: %d words in %v s", i, n, d)
		}
	}
}

func TestTranscribeSilence(t *testing.T) {
	e := NewScripted(ScriptedOptions{})
	for _, x := range [][]float32{make([]float32, 3*SampleRate), {}, speech(0, 2)} {
		res := transcribe(t, e, Request{Channels: [][]float32{x, x}})
		if len(res.Utterances) != 0 || res.Duration != float64(len(x))/SampleRate {
			t.Fatalf("silence gave %+v", res)
		}
	}
}

func TestTranscribeDeterministic(t *testing.T) {
	x := speech(0.7, 0.5, 2.3, 0.4, 0.9, 0.3)
	a := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{x}})
	for range 3 {
		b := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{slices.Clone(x)}})
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
		}
	}
	// Different audio, different words.
	c := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{speech(0.2, 0.5, 2.3, 0.4, 0.9, 0.3)}})
	if reflect.DeepEqual(a.Utterances[1].Words, c.Utterances[1].Words) {
		t.Fatal("utterances at different times got the same words")
	}
}

func TestTranscribeChannels(t *testing.T) {
	n := 4 * SampleRate
	ch0 := pad(speech(1), n)
	ch1 := pad(speech(0, 1.5, 1), n)
	ch2 := make([]float32, n)
	res := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{ch0, ch1, ch2}, Languages: []string{"fr", "en"}})
	if len(res.Utterances) != 2 {
		t.Fatalf("%d utterances: %+v", len(res.Utterances), res.Utterances)
	}
	for i, want := range []struct {
		ch         int
		start, end float64
	}{{0, 0, 1}, {1, 1.5, 2.5}} {
		u := res.Utterances[i]
		if u.Channel != want.ch || u.Speaker != want.ch || !near(u.Start, want.start) || !near(u.End, want.end) || u.Language != "fr" {
			t.Errorf("utterance %d: channel %d speaker %d %v–%v %q, want channel %d %v–%v fr", i, u.Channel, u.Speaker, u.Start, u.End, u.Language, want.ch, want.start, want.end)
		}
	}
}

func TestTranscribeMaxUtterance(t *testing.T) {
	// 19.95–20 is a quiet gap between syllables: the first utterance ends on the last voiced
	// frame before the cut at 20 s.
	res := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{speech(24.9, 1)}})
	if len(res.Utterances) != 2 {
		t.Fatalf("%d utterances", len(res.Utterances))
	}
	a, b := res.Utterances[0], res.Utterances[1]
	if !near(a.Start, 0) || !near(a.End, 19.95) || !near(b.Start, 20) || !near(b.End, 24.9) {
		t.Fatalf("utterances %v–%v and %v–%v, want 0–19.95 and 20–24.9", a.Start, a.End, b.Start, b.End)
	}
}

func TestTranscribeErrors(t *testing.T) {
	e := NewScripted(ScriptedOptions{})
	checkTranscribeMisuse(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Transcribe(ctx, Request{Channels: [][]float32{speech(30)}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestTranscribeVocabulary(t *testing.T) {
	x := speech(6, 0.5, 6)
	plain := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{x}})
	vocab := transcribe(t, NewScripted(ScriptedOptions{}), Request{Channels: [][]float32{x}, Vocabulary: []string{"Scribehook", "Watermill Fiber"}})
	var n, total int
	for i, u := range vocab.Utterances {
		for j, w := range u.Words {
			p := plain.Utterances[i].Words[j]
			if w.Start != p.Start || w.End != p.End {
				t.Fatal("vocabulary must not move words")
			}
			total++
			if w.Text == "Scribehook" || w.Text == "Watermill" || w.Text == "Fiber" {
				n++
			}
		}
	}
	if n == 0 || n > total/2 {
		t.Fatalf("%d of %d words from the vocabulary", n, total)
	}
}

func TestSidecar(t *testing.T) {
	e := NewScripted(ScriptedOptions{})
	x := speech(3, 1)
	sc := `{"utterances":[
		{"start":2.0,"end":3.1,"speaker":4,"channel":1,"words":[{"word":"second","start":2.05,"end":2.5,"confidence":0.5},{"word":"one","start":2.6,"end":3.1,"confidence":0.7}]},
		{"words":[{"word":"hello","start":0.1,"end":0.4,"confidence":0.98},{"word":"world","start":0.5,"end":0.9}], "language":"de"},
		{"start":1.0,"end":1.5,"text":"[music]","words":[]}
	]}`
	res, err := e.Transcribe(context.Background(), Request{Channels: [][]float32{x, x}, Sidecar: []byte(sc)})
	if err != nil {
		t.Fatal(err)
	}
	want := []Utterance{
		{Start: 0.1, End: 0.9, Confidence: 0.99, Channel: 0, Speaker: 0, Language: "de", Text: "hello world",
			Words: []Word{{"hello", 0.1, 0.4, 0.98}, {"world", 0.5, 0.9, 1}}},
		{Start: 1, End: 1.5, Confidence: 1, Channel: 0, Speaker: 0, Language: "en", Text: "[music]"},
		{Start: 2, End: 3.1, Confidence: 0.6, Channel: 1, Speaker: 4, Language: "en", Text: "second one",
			Words: []Word{{"second", 2.05, 2.5, 0.5}, {"one", 2.6, 3.1, 0.7}}},
	}
	if !reflect.DeepEqual(res.Utterances, want) {
		t.Fatalf("got  %+v\nwant %+v", res.Utterances, want)
	}
	t.Run("mono speakers alternate", func(t *testing.T) {
		res, err := e.Transcribe(context.Background(), Request{Channels: [][]float32{x}, Sidecar: []byte(`{"utterances":[{"start":0,"end":1},{"start":1,"end":2},{"start":2,"end":3}]}`)})
		if err != nil {
			t.Fatal(err)
		}
		for i, u := range res.Utterances {
			if u.Speaker != i%2 {
				t.Fatalf("utterance %d speaker %d", i, u.Speaker)
			}
		}
	})
	t.Run("empty script: empty transcript", func(t *testing.T) {
		res, err := e.Transcribe(context.Background(), Request{Channels: [][]float32{x}, Sidecar: []byte(`{"utterances":[]}`)})
		if err != nil || len(res.Utterances) != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("JSON that is not a script is ignored", func(t *testing.T) {
		res, err := e.Transcribe(context.Background(), Request{Channels: [][]float32{x}, Sidecar: []byte(`{"error":"not found"}`)})
		if err != nil || len(res.Utterances) != 1 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	for _, bad := range []struct{ sidecar, msg string }{
		{`[1,2]`, "scripted: sidecar: json: cannot unmarshal array into Go value of type engine.sidecar"},
		{`{"utterances":[{"channel":2,"start":0,"end":1}]}`, "scripted: sidecar: utterance 0: channel 2; the audio has 1"},
		{`{"utterances":[{"start":0,"end":1},{"words":[{"word":" ","start":0,"end":1}]}]}`, "scripted: sidecar: utterance 1: word 0 is empty"},
		{`{"utterances":[{"words":[{"word":"a","start":0.5}]}]}`, `scripted: sidecar: utterance 0: word 0 ("a") needs start and end`},
		{`{"utterances":[{"words":[{"word":"a","start":0.5,"end":0.2}]}]}`, `scripted: sidecar: utterance 0: word 0 ("a") has start 0.5 and end 0.2; times are seconds ≥ 0 and start ≤ end`},
		{`{"utterances":[{"words":[{"word":"a","start":0,"end":1,"confidence":2}]}]}`, `scripted: sidecar: utterance 0: word 0 ("a") has confidence 2 outside 0–1`},
		{`{"utterances":[{"text":"hi"}]}`, "scripted: sidecar: utterance 0: needs words or start and end"},
		{`{"utterances":[{"start":-1,"end":1}]}`, "scripted: sidecar: utterance 0: start -1 and end 1; times are seconds ≥ 0 and start ≤ end"},
	} {
		_, err := e.Transcribe(context.Background(), Request{Channels: [][]float32{x}, Sidecar: []byte(bad.sidecar)})
		var u *UnsupportedError
		if err == nil || err.Error() != bad.msg || !errors.As(err, &u) {
			t.Errorf("sidecar %s: error %v, want %q", bad.sidecar, err, bad.msg)
		}
	}
}

// feed runs a stream over channels cut into chunks of the given sizes (samples; 0: all at once).
func feed(t *testing.T, cfg StreamConfig, channels [][]float32, size int) []Event {
	t.Helper()
	st, err := NewScripted(ScriptedOptions{}).NewStream(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := len(channels[0])
	if size == 0 {
		size = max(n, 1)
	}
	var evs []Event
	for i := 0; i < n; i += size {
		chunk := make([][]float32, len(channels))
		for c := range channels {
			chunk[c] = channels[c][i:min(i+size, n)]
		}
		got, err := st.Feed(chunk)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, got...)
	}
	fin, err := st.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return append(evs, fin...)
}

func kinds(evs []Event) string {
	var s []string
	for _, e := range evs {
		k := string(e.Kind)
		if e.Kind == EventPartial || e.Kind == EventFinal {
			k = fmt.Sprintf("%s#%d", k, e.UtteranceID)
		}
		s = append(s, fmt.Sprintf("%s@%d", k, e.Channel))
	}
	return strings.Join(s, " ")
}

func TestStreamEvents(t *testing.T) {
	cfg := StreamConfig{SpeechThreshold: DefaultSpeechThreshold}
	evs := feed(t, cfg, [][]float32{speech(1.2, 1, 0.6, 0.5)}, 1600)
	want := "speech_start@0 partial_transcript#0@0 partial_transcript#0@0 speech_end@0 final_transcript#0@0 " +
		"speech_start@0 partial_transcript#1@0 speech_end@0 final_transcript#1@0"
	if got := kinds(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if !near(evs[0].Time, 0) || !near(evs[3].Time, 1.2) || !near(evs[5].Time, 2.2) || !near(evs[7].Time, 2.8) {
		t.Errorf("speech events at %v %v %v %v", evs[0].Time, evs[3].Time, evs[5].Time, evs[7].Time)
	}
	for _, fi := range []int{4, 8} {
		final := evs[fi].Utterance
		checkWords(t, final)
		if final.Speaker != (fi/5)%2 {
			t.Errorf("final %d speaker %d", fi, final.Speaker)
		}
		// Partials hold a prefix of the final's words.
		for _, p := range evs[:fi] {
			if p.Kind == EventPartial && p.UtteranceID == evs[fi].UtteranceID {
				checkWords(t, p.Utterance)
				if len(p.Utterance.Words) > len(final.Words) || !reflect.DeepEqual(p.Utterance.Words, final.Words[:len(p.Utterance.Words)]) {
					t.Errorf("partial %v is not a prefix of final %v", p.Utterance.Words, final.Words)
				}
				if p.Utterance.Start != final.Start || p.Utterance.End > final.End {
					t.Errorf("partial %v–%v, final %v–%v", p.Utterance.Start, p.Utterance.End, final.Start, final.End)
				}
			}
		}
	}
	if u := evs[4].Utterance; !near(u.Start, 0) || !near(u.End, 1.2) {
		t.Errorf("first utterance %v–%v, want 0–1.2", u.Start, u.End)
	}
	if p := evs[1].Utterance; !near(p.End, 0.5) {
		t.Errorf("first partial ends at %v, want 0.5", p.End)
	}
}

// The final comes as soon as the silence reaches endpointing, not before.
func TestStreamEndpointing(t *testing.T) {
	for _, ep := range []float64{0.05, 0.3, 1} {
		st, _ := NewScripted(ScriptedOptions{}).NewStream(StreamConfig{Endpointing: ep, SpeechThreshold: 0.6})
		x := speech(1, 3)
		var finalAt float64 = -1
		for i := 0; i < len(x); i += 160 { // 10 ms steps
			evs, err := st.Feed([][]float32{x[i : i+160]})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Kind == EventFinal {
					finalAt = float64(i+160) / SampleRate
				}
			}
			if finalAt >= 0 {
				break
			}
		}
		if finalAt < 1+ep-1e-9 || finalAt > 1+ep+frame+0.01+1e-9 {
			t.Errorf("endpointing %v: final after %v s of audio, want about %v", ep, finalAt, 1+ep)
		}
	}
}

func TestStreamMaxUtterance(t *testing.T) {
	evs := feed(t, StreamConfig{MaxUtterance: 5, SpeechThreshold: 0.6}, [][]float32{speech(7.4, 1)}, 1600)
	var finals []Utterance
	var speech int
	for _, e := range evs {
		switch e.Kind {
		case EventFinal:
			finals = append(finals, e.Utterance)
		case EventSpeechStart, EventSpeechEnd:
			speech++
		}
	}
	if speech != 2 || len(finals) != 2 {
		t.Fatalf("events %s", kinds(evs))
	}
	if !near(finals[0].Start, 0) || !near(finals[0].End, 4.95) || !near(finals[1].Start, 5) || !near(finals[1].End, 7.4) {
		t.Fatalf("finals %v–%v and %v–%v, want 0–4.95 and 5–7.4", finals[0].Start, finals[0].End, finals[1].Start, finals[1].End)
	}
	if finals[0].Speaker == finals[1].Speaker {
		t.Fatal("mono speakers alternate per utterance")
	}
}

// The same audio fed in one piece, in 100 ms chunks, in 37 ms chunks or sample by sample gives
// the same events.
func TestStreamChunkingInvariance(t *testing.T) {
	n := 6 * SampleRate
	channels := [][]float32{
		pad(speech(1.3, 0.4, 0.3, 0.07, 2.2, 0.5, 0.6), n),
		pad(speech(0, 0.9, 3.1, 0.2, 0.45), n),
	}
	cfg := StreamConfig{Channels: 2, MaxUtterance: 2, SpeechThreshold: 0.5}
	whole := feed(t, cfg, channels, 0)
	if len(whole) < 20 {
		t.Fatalf("only %d events: %s", len(whole), kinds(whole))
	}
	for _, size := range []int{1600, 592, 1, 333} {
		if got := feed(t, cfg, channels, size); !reflect.DeepEqual(got, whole) {
			t.Fatalf("chunks of %d samples:\n got %s\nwant %s", size, kinds(got), kinds(whole))
		}
	}
	ids := map[int]int{}
	for _, e := range whole {
		if e.Kind == EventFinal {
			if _, dup := ids[e.UtteranceID]; dup {
				t.Fatalf("utterance id %d finalised twice", e.UtteranceID)
			}
			ids[e.UtteranceID] = e.Channel
		}
	}
	for id := range len(ids) {
		if _, ok := ids[id]; !ok {
			t.Fatalf("utterance ids are not 0..%d: %v", len(ids)-1, ids)
		}
	}
}

// Pre-recorded and live transcripts of the same audio agree when the settings do.
func TestTranscribeMatchesStream(t *testing.T) {
	x := speech(1.3, 0.4, 0.3, 0.07, 6.2, 0.5, 0.6)
	res := transcribe(t, NewScripted(ScriptedOptions{Endpointing: 0.05, MaxUtterance: 5}), Request{Channels: [][]float32{x}})
	var finals []Utterance
	for _, e := range feed(t, StreamConfig{SpeechThreshold: DefaultSpeechThreshold}, [][]float32{x}, 1600) {
		if e.Kind == EventFinal {
			finals = append(finals, e.Utterance)
		}
	}
	if len(finals) < 3 || !reflect.DeepEqual(res.Utterances, finals) {
		t.Fatalf("pre-recorded %+v\nlive %+v", res.Utterances, finals)
	}
}

func TestStreamSpeechThreshold(t *testing.T) {
	quiet := speech(1, 1)
	for i := range quiet {
		quiet[i] *= 0.03
	}
	count := func(th float64) int {
		n := 0
		for _, e := range feed(t, StreamConfig{SpeechThreshold: th}, [][]float32{quiet}, 1600) {
			if e.Kind == EventFinal {
				n++
			}
		}
		return n
	}
	if count(0.1) != 1 || count(0.95) != 0 {
		t.Fatalf("threshold 0.1: %d finals, 0.95: %d; want 1 and 0", count(0.1), count(0.95))
	}
}

func TestStreamErrors(t *testing.T) {
	st, err := NewScripted(ScriptedOptions{}).NewStream(StreamConfig{Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkStreamMisuse(t, st)
}

func BenchmarkTranscribeMinute(b *testing.B) {
	x := speech(5, 1, 10, 0.5, 20, 2, 15, 6.5)
	e := NewScripted(ScriptedOptions{})
	for b.Loop() {
		if _, err := e.Transcribe(context.Background(), Request{Channels: [][]float32{x}}); err != nil {
			b.Fatal(err)
		}
	}
}
