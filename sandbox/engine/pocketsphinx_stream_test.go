//go:build pocketsphinx

package engine

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// streamRun is what a live stream produced for audio fed in real-time-sized chunks.
//
// Its clocks simulate a client sending each chunk once its audio has been spoken: a chunk is
// fed at the later of its arrival and the end of the engine's work on the previous one, and
// events are emitted when the Feed that produced them returns. So latencies include the audio
// the engine must see and its processing time, without the test sleeping. The wall clock
// counts processing in wall time, which other processes on the machine inflate; the CPU clock
// counts the CPU time of the feeding thread, the engine's own cost.
type streamRun struct {
	events        []Event
	atWall, atCPU []float64 // when each event was emitted
	chunks        []chunkFed
	busy, busyCPU time.Duration
}

type chunkFed struct {
	start, end      float64 // the chunk's audio, seconds
	fedWall, fedCPU float64 // when it was fed
}

// fedAt is when the sample at audio time t was fed, on both clocks.
func (r streamRun) fedAt(t float64) (wall, cpu float64) {
	for _, c := range r.chunks {
		if t >= c.start && t < c.end {
			return c.fedWall, c.fedCPU
		}
	}
	last := r.chunks[len(r.chunks)-1]
	return last.fedWall, last.fedCPU
}

// threadCPU is the CPU time of the calling OS thread (Linux RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runStream(t testing.TB, p *Pocketsphinx, cfg StreamConfig, channels [][]float32, chunk int) streamRun {
	t.Helper()
	// One OS thread does all the work, so that its CPU time is the engine's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st, err := p.NewStream(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := len(channels[0])
	if chunk <= 0 {
		chunk = max(n, 1)
	}
	var run streamRun
	var wall, cpu float64
	step := func(from, to int, f func() ([]Event, error)) {
		arrival := float64(to) / SampleRate
		wall, cpu = max(wall, arrival), max(cpu, arrival)
		run.chunks = append(run.chunks, chunkFed{float64(from) / SampleRate, arrival, wall, cpu})
		w0, c0 := time.Now(), threadCPU()
		evs, err := f()
		if err != nil {
			t.Fatal(err)
		}
		dw, dc := time.Since(w0), threadCPU()-c0
		run.busy += dw
		run.busyCPU += dc
		wall += dw.Seconds()
		cpu += dc.Seconds()
		for range evs {
			run.atWall = append(run.atWall, wall)
			run.atCPU = append(run.atCPU, cpu)
		}
		run.events = append(run.events, evs...)
	}
	for i := 0; i < n; i += chunk {
		part := make([][]float32, len(channels))
		for c := range channels {
			part[c] = channels[c][i:min(i+chunk, n)]
		}
		step(i, min(i+chunk, n), func() ([]Event, error) { return st.Feed(part) })
	}
	step(n, n, st.Finish)
	return run
}

// checkStreamOrder asserts the event rules of the Stream interface, as the scripted engine
// keeps them: on each channel speech_start, then partials and the final of the utterance it
// opened (same id), speech_end right before the final it closes; ids numbered from 0 in the
// order utterances open; each partial before its final; no events of an utterance after it.
func checkStreamOrder(t *testing.T, evs []Event, duration float64) {
	t.Helper()
	type state struct {
		inSpeech bool
		open     int // utterance id open on the channel, -1 if none
		ended    bool
	}
	chs := map[int]*state{}
	finals := map[int]bool{}
	nextID := 0
	for i, e := range evs {
		s := chs[e.Channel]
		if s == nil {
			s = &state{open: -1}
			chs[e.Channel] = s
		}
		switch e.Kind {
		case EventSpeechStart:
			if s.inSpeech {
				t.Fatalf("event %d: speech_start inside speech", i)
			}
			s.inSpeech = true
		case EventSpeechEnd:
			if !s.inSpeech {
				t.Fatalf("event %d: speech_end outside speech", i)
			}
			s.inSpeech = false
		case EventPartial, EventFinal:
			if finals[e.UtteranceID] {
				t.Fatalf("event %d: %s of utterance %d after its final", i, e.Kind, e.UtteranceID)
			}
			if s.open != e.UtteranceID {
				if e.UtteranceID != nextID {
					t.Fatalf("event %d: utterance %d opens, want id %d", i, e.UtteranceID, nextID)
				}
				nextID++
				s.open = e.UtteranceID
			}
			u := e.Utterance
			if u.Channel != e.Channel || u.Start > u.End || u.End > duration+1e-9 {
				t.Fatalf("event %d: %+v", i, u)
			}
			if len(u.Words) > 0 {
				checkWords(t, u)
			}
			if e.Kind == EventFinal {
				finals[e.UtteranceID] = true
				s.open = -1
				// Endpointing ends speech first: the final follows its speech_end.
				if !s.inSpeech {
					prev := -1
					for k := i - 1; k >= 0; k-- {
						if evs[k].Channel == e.Channel {
							prev = k
							break
						}
					}
					if prev < 0 || evs[prev].Kind != EventSpeechEnd {
						t.Fatalf("event %d: final not right after the speech_end that closes it", i)
					}
				}
			}
		}
	}
	for c, s := range chs {
		if s.inSpeech || s.open >= 0 {
			t.Fatalf("channel %d left open: %+v", c, s)
		}
	}
}

func finalsOf(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == EventFinal {
			out = append(out, e)
		}
	}
	return out
}

func TestPocketsphinxStream(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{})
	sp := speak(t, psSentences, 1)
	dur := float64(len(sp.samples)) / SampleRate
	for _, ep := range []float64{0.3, DefaultEndpointing} {
		t.Run(fmt.Sprintf("endpointing %v", ep), func(t *testing.T) {
			cfg := StreamConfig{Endpointing: ep, SpeechThreshold: DefaultSpeechThreshold}
			run := runStream(t, p, cfg, [][]float32{sp.samples}, SampleRate/10)
			checkStreamOrder(t, run.events, dur)
			var hyp []string
			partials := 0
			for _, e := range run.events {
				switch e.Kind {
				case EventFinal:
					hyp = append(hyp, e.Utterance.Text)
				case EventPartial:
					partials++
				}
			}
			var w werCounter
			w.add(strings.Join(psSentences, " "), strings.Join(hyp, " "))
			t.Logf("live, endpointing %v s: %d finals, %d partials, WER %.1f %% (%d errors in %d words); RTF %.2f",
				ep, len(finalsOf(run.events)), partials, 100*w.rate(), w.errs, w.words, run.busy.Seconds()/dur)
			if partials == 0 {
				t.Error("no partial transcripts")
			}
			// With the service's default endpointing (50 ms) the detector ends utterances in
			// the short pauses inside sentences, cutting words and the language model's
			// context: the 20 % target holds for endpointing that waits for the pauses between
			// sentences; the default is only kept from getting worse.
			limit := 0.20
			if ep < 0.2 {
				limit = 0.30
			}
			if w.rate() > limit {
				t.Errorf("live WER %.1f %% above %.0f %%: %s", 100*w.rate(), 100*limit, strings.Join(hyp, " | "))
			}
			if ep != 0.3 {
				return
			}
			// Latency: from feeding the last sample of each sentence's speech to the final
			// that ends its utterance.
			var worstWall, worstCPU float64
			for i, span := range sp.spans {
				k := slices.IndexFunc(run.events, func(e Event) bool {
					return e.Kind == EventFinal && e.Utterance.End >= span[1]-0.3 && e.Utterance.Start < span[1]
				})
				if k < 0 {
					t.Errorf("no final for sentence %d", i)
					continue
				}
				fedWall, fedCPU := run.fedAt(span[1] - 1e-6)
				lw, lc := run.atWall[k]-fedWall, run.atCPU[k]-fedCPU
				worstWall, worstCPU = max(worstWall, lw), max(worstCPU, lc)
				t.Logf("sentence %d: final %.0f ms after its last speech sample was fed (%.0f ms counting CPU time)", i, 1000*lw, 1000*lc)
			}
			target := ep + 0.3
			t.Logf("worst final latency %.0f ms wall-clock, %.0f ms counting CPU time (target %.0f ms = endpointing + 300 ms)", 1000*worstWall, 1000*worstCPU, 1000*target)
			// CPU time, not wall time, is held to the target: other processes on a shared
			// machine inflate the wall clock, and the race detector the CPU time.
			if !raceEnabled && worstCPU > target {
				t.Errorf("final latency %.0f ms of audio and CPU time, above %.0f ms", 1000*worstCPU, 1000*target)
			}
		})
	}
}

// The same audio cut in different chunks gives the same events, on two channels.
func TestPocketsphinxStreamChunking(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{Decoders: 2})
	a := speak(t, psSentences[:2], 0.6).samples
	b := append(silence(1.3), speak(t, psSentences[4:5], 0.4).samples...)
	n := max(len(a), len(b))
	a, b = pad(a, n), pad(b, n)
	cfg := StreamConfig{Channels: 2, Endpointing: 0.3, MaxUtterance: 3, SpeechThreshold: DefaultSpeechThreshold}
	whole := runStream(t, p, cfg, [][]float32{a, b}, 0).events
	checkStreamOrder(t, whole, float64(n)/SampleRate)
	if len(finalsOf(whole)) < 3 {
		t.Fatalf("events %s", kinds(whole))
	}
	sizes := []int{1600, 333}
	if !testing.Short() {
		sizes = append(sizes, 1)
	}
	for _, size := range sizes {
		if got := runStream(t, p, cfg, [][]float32{a, b}, size).events; !reflect.DeepEqual(got, whole) {
			t.Fatalf("chunks of %d samples:\n got %s\nwant %s", size, kinds(got), kinds(whole))
		}
	}
}

// MaxUtterance cuts an utterance in speech; the next one takes over without losing audio.
func TestPocketsphinxStreamMaxUtterance(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{})
	sp := speak(t, psSentences[1:2], 0.5) // 3.5 s of speech
	run := runStream(t, p, StreamConfig{Endpointing: 0.3, MaxUtterance: 2, SpeechThreshold: DefaultSpeechThreshold}, [][]float32{sp.samples}, 1600)
	checkStreamOrder(t, run.events, float64(len(sp.samples))/SampleRate)
	finals := finalsOf(run.events)
	if len(finals) != 2 {
		t.Fatalf("events %s", kinds(run.events))
	}
	// The words of an utterance may start in the context before the segment (0.3 s).
	if a, b := finals[0].Utterance, finals[1].Utterance; a.End-a.Start > 2+0.3 || a.End > b.Start {
		t.Fatalf("utterances %v–%v and %v–%v; the first should be cut at 2 s", a.Start, a.End, b.Start, b.End)
	}
	var hyp []string
	for _, f := range finals {
		hyp = append(hyp, f.Utterance.Text)
	}
	var w werCounter
	w.add(psSentences[1], strings.Join(hyp, " "))
	t.Logf("cut at 2 s: %q; WER %.1f %%", hyp, 100*w.rate())
	if w.rate() > 0.3 {
		t.Fatalf("WER %.1f %% across the cut", 100*w.rate())
	}
}

func TestPocketsphinxStreamSpeechThreshold(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{})
	quiet := speak(t, psSentences[:1], 0.5).samples
	for i := range quiet {
		quiet[i] *= 0.01 // about -50 dBFS
	}
	count := func(th float64) int {
		return len(finalsOf(runStream(t, p, StreamConfig{Endpointing: 0.3, SpeechThreshold: th}, [][]float32{quiet}, 1600).events))
	}
	if lo, hi := count(0.1), count(0.95); lo == 0 || hi != 0 {
		t.Fatalf("threshold 0.1: %d finals, 0.95: %d; want some and none", lo, hi)
	}
}

func TestPocketsphinxStreamErrors(t *testing.T) {
	p := newPSEngine(t, PocketsphinxOptions{Decoders: 2})
	st, err := p.NewStream(StreamConfig{Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkStreamMisuse(t, st)
	// Finish released both decoders.
	st2, err := p.NewStream(StreamConfig{Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	_ = st2.Close()
}
