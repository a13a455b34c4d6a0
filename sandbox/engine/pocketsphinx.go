//go:build pocketsphinx

package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// Pocketsphinx recognises US English offline with CMU pocketsphinx 0.8+5prealpha (Debian 12's
// libpocketsphinx3) and its en-us model: a continuous acoustic model, a general trigram
// language model and a 134k-word dictionary. docs/engines.md describes it for users.
//
// Pre-recorded audio: each channel is cut at pauses (a voice activity detector,
// audio.Segmenter, with Endpointing of silence), stretches longer than MaxChunk are cut again
// at their longest shorter pause, and each stretch, with up to 0.3 s of the audio around it, is
// decoded as one utterance. One stretch gives one utterance; its words carry the decoder's
// times and posterior probabilities.
//
// Live audio: the stream's own segmenter (StreamConfig's endpointing, maximum duration and
// speech threshold) opens an utterance in the decoder at speech start, 0.3 s before it, feeds
// it audio as it arrives, reads a partial hypothesis every 0.5 s of the utterance, and ends it
// when the segmenter does. Events follow the scripted engine's rules.
//
// Both feed the decoder the same way, in 20 ms blocks, with live cepstral mean normalisation
// restarted for each job and stream (see sh_reset_cmn): the same audio gives the same words
// whatever decoder of the pool decodes it and however a stream's audio is cut.
//
// Decoders are pooled: a pre-recorded job takes one (waiting for it with its context), a live
// stream one a channel (or fails at once with a *BusyError). A decoder whose dictionary grew
// for a job's custom vocabulary is freed after the job rather than reused, so every job starts
// from the same dictionary.
type Pocketsphinx struct {
	opts        PocketsphinxOptions
	args        []string
	size        int
	endpointing float64
	maxChunk    float64
	threshold   float64

	// slots holds a token for each decoder in use: its capacity is the pool size.
	slots  chan struct{}
	mu     sync.Mutex
	idle   []*psDecoder
	closed bool
}

const (
	psEndpointing = 0.3
	psMaxChunk    = 30.0
	psThreshold   = 0.4
	// psContext is the audio given to the decoder before (and, pre-recorded, after) the
	// speech the detector found: the detector misses quiet onsets and the decoder needs some
	// silence to start and end on. 15 VAD frames, so live feeding stays frame-aligned.
	psContext = 15 * psFrame
	// psFrame is the voice activity detector's frame (20 ms) and the block live audio is fed
	// to the decoder in.
	psFrame = 320
	// psHistory is the live audio kept while no utterance is open: enough for psContext before
	// a speech onset the detector confirms a few frames late.
	psHistory = SampleRate
	// psMinConfidence keeps confidences inside (0, 1] when the posterior underflows.
	psMinConfidence = 0.001
)

// NewPocketsphinx starts the engine: it checks the model files and loads one decoder, so that
// a bad model fails here rather than in the first job. More decoders are loaded when needed,
// up to the pool size.
func NewPocketsphinx(opts PocketsphinxOptions) (Engine, error) {
	p, err := newPocketsphinx(opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func newPocketsphinx(opts PocketsphinxOptions) (*Pocketsphinx, error) {
	args, err := psArgs(opts)
	if err != nil {
		return nil, err
	}
	p := &Pocketsphinx{
		opts:        opts,
		size:        opts.Decoders,
		endpointing: opts.Endpointing,
		maxChunk:    opts.MaxChunk,
		threshold:   opts.SpeechThreshold,
	}
	if p.size <= 0 {
		p.size = runtime.NumCPU()
	}
	if !(p.endpointing > 0) {
		p.endpointing = psEndpointing
	}
	if !(p.maxChunk > 0) {
		p.maxChunk = psMaxChunk
	}
	if p.threshold == 0 {
		p.threshold = psThreshold
	}
	switch {
	case p.endpointing > 60:
		return nil, fmt.Errorf("pocketsphinx: endpointing %v s above 60 s", p.endpointing)
	case p.maxChunk < 2*p.endpointing || p.maxChunk > 600:
		return nil, fmt.Errorf("pocketsphinx: maximum chunk %v s outside [2 × endpointing, 600]", p.maxChunk)
	case !(p.threshold > 0 && p.threshold <= 1):
		return nil, fmt.Errorf("pocketsphinx: speech threshold %v outside 0–1", p.threshold)
	}
	p.args = args
	p.slots = make(chan struct{}, p.size)
	d, err := newPSDecoder(p.args)
	if err != nil {
		return nil, err
	}
	p.idle = []*psDecoder{d}
	return p, nil
}

// psArgs are the decoder's arguments for opts: the model files (checked to exist), then
// opts.ExtraArgs. -remove_silence no: with the decoder's own silence removal, word times are
// not audio times. Logging is silenced in C rather than with -logfn (see pocketsphinx_cgo.go).
func psArgs(opts PocketsphinxOptions) ([]string, error) {
	dir := opts.ModelDir
	if dir == "" {
		dir = DefaultPocketsphinxModel
	}
	hmm, lm, dict := opts.HMM, opts.LM, opts.Dict
	if hmm == "" {
		hmm = filepath.Join(dir, "en-us")
	}
	if lm == "" {
		lm = filepath.Join(dir, "en-us.lm.bin")
	}
	if dict == "" {
		dict = filepath.Join(dir, "cmudict-en-us.dict")
	}
	for _, f := range []string{filepath.Join(hmm, "mdef"), lm, dict} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("pocketsphinx: model file missing (install the Debian package pocketsphinx-en-us, or set the model paths): %w", err)
		}
	}
	return append([]string{"-hmm", hmm, "-lm", lm, "-dict", dict, "-samprate", "16000", "-remove_silence", "no"}, opts.ExtraArgs...), nil
}

// Name is PocketsphinxName.
func (p *Pocketsphinx) Name() string { return PocketsphinxName }

// Close frees the idle decoders; those still held by jobs or streams are freed when they come
// back.
func (p *Pocketsphinx) Close() error {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, d := range idle {
		d.free()
	}
	return nil
}

// acquire waits for a decoder until ctx ends.
func (p *Pocketsphinx) acquire(ctx context.Context) (*psDecoder, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("pocketsphinx: waiting for a free decoder: %w", ctx.Err())
	}
	d, err := p.take()
	if err != nil {
		<-p.slots
		return nil, err
	}
	return d, nil
}

// tryAcquire takes n decoders at once, or none and a *BusyError.
func (p *Pocketsphinx) tryAcquire(n int) ([]*psDecoder, error) {
	for i := range n {
		select {
		case p.slots <- struct{}{}:
		default:
			for range i {
				<-p.slots
			}
			return nil, &BusyError{Engine: PocketsphinxName, Needed: n, Size: p.size}
		}
	}
	decs := make([]*psDecoder, 0, n)
	for len(decs) < n {
		d, err := p.take()
		if err != nil {
			for _, d := range decs {
				p.release(d)
			}
			for range n - len(decs) {
				<-p.slots
			}
			return nil, err
		}
		decs = append(decs, d)
	}
	return decs, nil
}

// take returns an idle decoder or loads a new one; the caller holds a slot.
func (p *Pocketsphinx) take() (*psDecoder, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("pocketsphinx: engine closed")
	}
	if n := len(p.idle); n > 0 {
		d := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return d, nil
	}
	p.mu.Unlock()
	return newPSDecoder(p.args)
}

// release gives a decoder back to the pool, or frees it when it cannot be reused.
func (p *Pocketsphinx) release(d *psDecoder) {
	_ = d.end() // a job that failed mid-utterance leaves it open
	p.mu.Lock()
	keep := !p.closed && !d.dirty
	if keep {
		p.idle = append(p.idle, d)
	}
	p.mu.Unlock()
	if !keep {
		d.free()
	}
	<-p.slots
}

func (p *Pocketsphinx) logf(format string, args ...any) {
	if p.opts.Logf != nil {
		p.opts.Logf(format, args...)
	}
}

// checkEnglish accepts English (en, en-US, en_GB…) only: the model is US English.
func checkEnglish(langs []string) error {
	for _, l := range langs {
		if l == "" {
			continue
		}
		base, _, _ := strings.Cut(strings.ToLower(l), "-")
		base, _, _ = strings.Cut(base, "_")
		if base != "en" {
			return unsupported(PocketsphinxName, "only an English model (en) is installed; requested %s", l)
		}
	}
	return nil
}

// Transcribe decodes each channel, stretch by stretch, on one decoder of the pool, which it
// waits for until ctx ends. ctx is checked every second of audio decoded.
func (p *Pocketsphinx) Transcribe(ctx context.Context, req Request) (Result, error) {
	if req.SampleRate != 0 && req.SampleRate != SampleRate {
		return Result{}, unsupported(PocketsphinxName, "audio at %d Hz; the engine takes %d Hz", req.SampleRate, SampleRate)
	}
	if err := checkChannels(PocketsphinxName, req.Channels); err != nil {
		return Result{}, err
	}
	if err := checkEnglish(req.Languages); err != nil {
		return Result{}, err
	}
	n := len(req.Channels[0])
	res := Result{Duration: float64(n) / SampleRate}
	// Finding speech needs no decoder: do it before taking one.
	plans := make([][]psSpan, len(req.Channels))
	for c, x := range req.Channels {
		var err error
		if plans[c], err = p.plan(x); err != nil {
			return Result{}, err
		}
	}
	d, err := p.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer p.release(d)
	spell := p.addVocabulary(d, req.Vocabulary, true)
	d.resetCMN()
	for c, x := range req.Channels {
		for _, sp := range plans[c] {
			if err := ctx.Err(); err != nil {
				return Result{}, fmt.Errorf("pocketsphinx: %w", err)
			}
			if err := d.start(); err != nil {
				return Result{}, err
			}
			pcm := audio.Int16(x[sp.from:sp.to])
			// A second at a time, so that a cancelled job stops soon; the blocks the decoder
			// sees are the same.
			for i := 0; i < len(pcm); i += SampleRate {
				if err := ctx.Err(); err != nil {
					return Result{}, fmt.Errorf("pocketsphinx: %w", err)
				}
				if err := d.process(pcm[i:min(i+SampleRate, len(pcm))], psFrame); err != nil {
					return Result{}, err
				}
			}
			if err := d.end(); err != nil {
				return Result{}, err
			}
			words := psWords(d.words(), int64(sp.from), float64(sp.to)/SampleRate, spell)
			if len(words) > 0 {
				res.Utterances = append(res.Utterances, psUtterance(words, c, 0, 0))
			}
		}
	}
	sortUtterances(res.Utterances)
	return res, nil
}

// psSpan is a stretch of samples to decode as one utterance.
type psSpan struct{ from, to int }

// plan finds the stretches of speech of one channel: the segmenter's segments, cut to at most
// maxChunk at pauses, with context around them.
func (p *Pocketsphinx) plan(x []float32) ([]psSpan, error) {
	seg, err := audio.NewSegmenter(audio.SegmenterConfig{SampleRate: SampleRate, Threshold: p.threshold, MinSilence: p.endpointing})
	if err != nil {
		return nil, fmt.Errorf("pocketsphinx: %w", err)
	}
	var speech [][2]int
	for _, ev := range append(seg.Write(x), seg.Flush()...) {
		if ev.Kind == audio.SegmentEnd {
			speech = append(speech, [2]int{secondsToSample(ev.Start), min(secondsToSample(ev.End), len(x))})
		}
	}
	maxLen := int(p.maxChunk * SampleRate)
	var voiced []bool
	var pieces [][2]int
	for _, s := range speech {
		for s[1]-s[0] > maxLen {
			if voiced == nil {
				// The same decisions as the segmenter's: the same detector from the same start.
				vad, err := audio.NewVAD(SampleRate, p.threshold)
				if err != nil {
					return nil, fmt.Errorf("pocketsphinx: %w", err)
				}
				voiced = vad.Write(x, nil)
			}
			cut := cutAtPause(x, voiced, s[0], maxLen)
			pieces = append(pieces, [2]int{s[0], cut})
			s[0] = cut
		}
		pieces = append(pieces, s)
	}
	spans := make([]psSpan, len(pieces))
	for i, pc := range pieces {
		lo, hi := max(0, pc[0]-psContext), min(len(x), pc[1]+psContext)
		// Context stops halfway to the neighbours, so no word is decoded twice.
		if i > 0 {
			lo = max(lo, (pieces[i-1][1]+pc[0])/2)
		}
		if i+1 < len(pieces) {
			hi = min(hi, (pc[1]+pieces[i+1][0])/2)
		}
		spans[i] = psSpan{lo, hi}
	}
	return spans, nil
}

// cutAtPause picks where to end a piece of speech that starts at from and runs past maxLen
// samples: in the middle of the longest unvoiced run in its second half, or, in speech without
// a single unvoiced frame, at the quietest frame there.
func cutAtPause(x []float32, voiced []bool, from, maxLen int) int {
	lo, hi := (from+maxLen/2)/psFrame, min((from+maxLen)/psFrame, len(voiced))
	bestLen, bestAt := 0, -1
	for f := lo; f < hi; {
		if voiced[f] {
			f++
			continue
		}
		g := f
		for g < hi && !voiced[g] {
			g++
		}
		if g-f > bestLen {
			bestLen, bestAt = g-f, (f+g)*psFrame/2
		}
		f = g
	}
	if bestAt < 0 {
		quietest := math.Inf(1)
		for f := lo; f < hi; f++ {
			var e float64
			for _, v := range x[f*psFrame : (f+1)*psFrame] {
				e += float64(v) * float64(v)
			}
			if e < quietest {
				quietest, bestAt = e, f*psFrame+psFrame/2
			}
		}
	}
	return min(max(bestAt, from+psFrame), from+maxLen)
}

func secondsToSample(t float64) int { return int(math.Round(t * SampleRate)) }

// psWords turns decoder segments into words: fillers (<s>, </s>, <sil>, [NOISE], [SPEECH])
// dropped, alternate pronunciations "word(2)" named by their word, inclusive end frames made
// exclusive, times offset by where the utterance started and kept inside the audio (limit).
func psWords(raw []rawWord, offset int64, limit float64, spell map[string]string) []Word {
	base := float64(offset) / SampleRate
	var out []Word
	for _, r := range raw {
		text := r.text
		if text == "" || strings.ContainsAny(text[:1], "<[+") {
			continue
		}
		if i := strings.LastIndexByte(text, '('); i > 0 && strings.HasSuffix(text, ")") {
			text = text[:i]
		}
		if s, ok := spell[text]; ok {
			text = s
		}
		start := round3(base + float64(r.sf)/psFrameRate)
		end := round3(min(base+float64(r.ef+1)/psFrameRate, limit))
		if !(start < end) {
			continue
		}
		conf := r.conf
		if !(conf >= psMinConfidence) { // NaN too
			conf = psMinConfidence
		}
		out = append(out, Word{Text: text, Start: start, End: end, Confidence: round3(min(conf, 1))})
	}
	return out
}

// psUtterance spans its words. Words are never empty here, except in a live final without
// words, which spans the segment (start, end).
func psUtterance(words []Word, channel int, start, end float64) Utterance {
	if len(words) > 0 {
		start, end = words[0].Start, words[len(words)-1].End
	}
	return Utterance{
		Start: start, End: end, Confidence: meanConfidence(words), Channel: channel, Speaker: channel,
		Language: "en", Words: words, Text: joinWords(words),
	}
}
