package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// ScriptedName is the name of the scripted engine in a Registry.
const ScriptedName = "scripted"

// The scripted engine recognises nothing: it finds where speech is and fills it with words,
// so that every part of the sandbox (results, subtitles, live messages) gets realistic,
// reproducible transcripts without a model.
//
// Without a sidecar, for each channel an energy voice activity detector (20 ms frames, a
// threshold relative to the noise floor, audio.Segmenter) finds voiced stretches; each becomes
// an utterance (a stretch is closed by Endpointing seconds of silence and cut at MaxUtterance
// seconds). Words are drawn from a fixed list by a generator seeded with the channel and the
// start time of the utterance, at about 2.5 words a second (0.20–0.36 s a word, 0.06–0.18 s
// gaps), from the start of the utterance; the last word is clipped to its end, or dropped when
// under 0.1 s unless it is the only one. So every word lies inside its utterance, starts before
// it ends, and the same audio always gives the same words, live or pre-recorded. Confidences
// are 0.70–0.99. Vocabulary words replace about one word in five.
//
// Speakers: with several channels the speaker is the channel index; with one channel speakers
// alternate 0, 1, 0, … from one utterance to the next, so that diarization has turns to show.
//
// Sidecar (pre-recorded only): JSON found next to the audio (<audio URL>.json), returned
// instead of generated words:
//
//	{"utterances": [
//	  {"start": 0.1, "end": 1.2, "channel": 0, "speaker": 0, "language": "en", "text": "hello world",
//	   "words": [{"word": "hello", "start": 0.1, "end": 0.4, "confidence": 0.98},
//	             {"word": "world", "start": 0.5, "end": 1.2}]}
//	]}
//
// Only "utterances" and, in each utterance, "words" (or both "start" and "end") are needed.
// Defaults: start and end span the words; channel 0; speaker by the rule above; language the
// request's first (else "en"); text the words joined by spaces; word confidence 1; utterance
// confidence the mean of its words'. Word times are returned exactly as given; utterances are
// sorted by start time. A sidecar without an "utterances" member is ignored (the URL may serve
// unrelated JSON); one with it that breaks these rules fails the job with an UnsupportedError.
type Scripted struct {
	opts ScriptedOptions
	base []string
}

// ScriptedOptions tune the segmentation of pre-recorded audio; zero fields take the defaults.
type ScriptedOptions struct {
	Endpointing  float64 // seconds of silence that end an utterance; default 0.3 (pauses between sentences, not words)
	MaxUtterance float64 // seconds; default 20
}

// wordList is the vocabulary of generated transcripts: the first test sentences of the
// pocketsphinx engine's tests (psSentences) and some common words.
const wordList = `the quick brown fox jumps over lazy dog please call stella and ask her to bring these

things with from store we will meet at train station nine tomorrow morning weather today is cloudy
chance of rain in afternoon open door turn on lights kitchen a hello world this sandbox speaks
words time people year way day thing man woman life child work week case point number group
problem fact good new first last long great little own other old right big high different small
large next early young important few public bad same able`

// NewScripted returns the scripted engine.
func NewScripted(opts ScriptedOptions) *Scripted {
	if !(opts.Endpointing > 0) {
		opts.Endpointing = 0.3
	}
	if !(opts.MaxUtterance > 0) {
		opts.MaxUtterance = 20
	}
	return &Scripted{opts: opts, base: strings.Fields(wordList)}
}

// Name is ScriptedName.
func (s *Scripted) Name() string { return ScriptedName }

// Close does nothing: the engine holds no resources.
func (s *Scripted) Close() error { return nil }

// transcribeBlock is how much audio is analysed between checks of the context: 10 s.
const transcribeBlock = 10 * SampleRate

// Transcribe returns the sidecar's words when req has a sidecar with utterances, else words
// generated over the voiced stretches of each channel. Silence gives no utterances.
func (s *Scripted) Transcribe(ctx context.Context, req Request) (Result, error) {
	if req.SampleRate != 0 && req.SampleRate != SampleRate {
		return Result{}, unsupported(ScriptedName, "audio at %d Hz; the engine takes %d Hz", req.SampleRate, SampleRate)
	}
	if err := checkChannels(ScriptedName, req.Channels); err != nil {
		return Result{}, err
	}
	res := Result{Duration: float64(len(req.Channels[0])) / SampleRate}
	lang := firstOr(req.Languages, "en")
	if req.Sidecar != nil {
		utts, ok, err := parseSidecar(req.Sidecar, len(req.Channels), lang)
		if err != nil {
			return Result{}, err
		}
		if ok {
			res.Utterances = utts
			return res, nil
		}
	}
	st, err := s.newStream(StreamConfig{
		Channels: len(req.Channels), Endpointing: s.opts.Endpointing, MaxUtterance: s.opts.MaxUtterance,
		SpeechThreshold: DefaultSpeechThreshold, Languages: req.Languages, Vocabulary: req.Vocabulary,
	}, false)
	if err != nil {
		return Result{}, err
	}
	n := len(req.Channels[0])
	var evs []Event
	for i := 0; i < n; i += transcribeBlock {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("scripted: %w", err)
		}
		block := make([][]float32, len(req.Channels))
		for c, x := range req.Channels {
			block[c] = x[i:min(i+transcribeBlock, n)]
		}
		fed, err := st.Feed(block)
		if err != nil {
			return Result{}, err
		}
		evs = append(evs, fed...)
	}
	fin, err := st.Finish()
	if err != nil {
		return Result{}, err
	}
	for _, ev := range append(evs, fin...) {
		if ev.Kind == EventFinal {
			res.Utterances = append(res.Utterances, ev.Utterance)
		}
	}
	sortUtterances(res.Utterances)
	return res, nil
}

func sortUtterances(u []Utterance) {
	slices.SortStableFunc(u, func(a, b Utterance) int {
		if a.Start != b.Start {
			if a.Start < b.Start {
				return -1
			}
			return 1
		}
		return a.Channel - b.Channel
	})
}

func firstOr(s []string, def string) string {
	if len(s) > 0 && s[0] != "" {
		return s[0]
	}
	return def
}

// NewStream starts a live transcription.
func (s *Scripted) NewStream(cfg StreamConfig) (Stream, error) { return s.newStream(cfg, true) }

func (s *Scripted) newStream(cfg StreamConfig, partials bool) (*scriptedStream, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	update := 0.0
	if partials {
		update = partialEvery
	}
	segs, err := newSegmenters(ScriptedName, cfg.Channels, audio.SegmenterConfig{
		SampleRate: SampleRate, Threshold: cfg.SpeechThreshold,
		MinSilence: cfg.Endpointing, MaxSegment: cfg.MaxUtterance, UpdateEvery: update,
	})
	if err != nil {
		return nil, err
	}
	return &scriptedStream{
		lang:  firstOr(cfg.Languages, "en"),
		words: s.base,
		vocab: vocabulary(cfg.Vocabulary),
		segs:  segs,
		ch:    make([]channelState, cfg.Channels),
	}, nil
}

// partialEvery is the interval of partial transcripts while an utterance goes on.
const partialEvery = 0.5

func vocabulary(entries []string) []string {
	var out []string
	for _, e := range entries {
		for _, w := range strings.Fields(e) {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

type scriptedStream struct {
	lang         string
	words, vocab []string
	segs         segmenters
	ch           []channelState
	nextID       int
	done         bool
}

type channelState struct {
	gen   *wordGen // words of the open utterance
	id    int      // its id
	count int      // utterances finished on this channel
}

func (st *scriptedStream) Feed(samples [][]float32) ([]Event, error) {
	if err := checkFeed(ScriptedName, st.done, len(st.ch), samples); err != nil {
		return nil, err
	}
	return engineEvents(st.segs.write(samples), st.segment)
}

func (st *scriptedStream) Finish() ([]Event, error) {
	if st.done {
		return nil, nil
	}
	st.done = true
	return engineEvents(st.segs.flush(), st.segment)
}

func (st *scriptedStream) Close() error {
	st.done = true
	return nil
}

// segment lays the words of channel c's utterances as its segmenter opens, updates and ends
// them: a partial transcript on an update with words, a final on the end.
func (st *scriptedStream) segment(c int, ev audio.SegmentEvent) (Event, bool, error) {
	cs := &st.ch[c]
	switch ev.Kind {
	case audio.SegmentStart:
		cs.id = st.nextID
		st.nextID++
		cs.gen = newWordGen(st.words, st.vocab, c, round3(ev.Start))
	case audio.SegmentUpdate:
		end := round3(ev.End)
		if words := cs.gen.partial(end); len(words) > 0 {
			return Event{Kind: EventPartial, Channel: c, UtteranceID: cs.id, Utterance: st.utterance(c, round3(ev.Start), end, words)}, true, nil
		}
	case audio.SegmentEnd:
		end := round3(ev.End)
		u := st.utterance(c, round3(ev.Start), end, cs.gen.final(end))
		cs.count++
		cs.gen = nil
		return Event{Kind: EventFinal, Channel: c, UtteranceID: cs.id, Utterance: u}, true, nil
	}
	return Event{}, false, nil
}

func (st *scriptedStream) utterance(c int, start, end float64, words []Word) Utterance {
	speaker := c
	if len(st.ch) == 1 {
		speaker = st.ch[c].count % 2
	}
	return Utterance{
		Start: start, End: end, Confidence: meanConfidence(words), Channel: c, Speaker: speaker,
		Language: st.lang, Words: words, Text: joinWords(words),
	}
}

func meanConfidence(words []Word) float64 {
	if len(words) == 0 {
		return 1
	}
	var sum float64
	for _, w := range words {
		sum += w.Confidence
	}
	return round3(sum / float64(len(words)))
}

func joinWords(words []Word) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
