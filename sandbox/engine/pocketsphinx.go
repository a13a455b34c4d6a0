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
	"slices"
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
	// -remove_silence no: with the decoder's own silence removal, word times are not audio
	// times. Logging is silenced in C rather than with -logfn (see pocketsphinx_cgo.go).
	p.args = append([]string{"-hmm", hmm, "-lm", lm, "-dict", dict, "-samprate", "16000", "-remove_silence", "no"}, opts.ExtraArgs...)
	p.slots = make(chan struct{}, p.size)
	d, err := newPSDecoder(p.args)
	if err != nil {
		return nil, err
	}
	p.idle = []*psDecoder{d}
	return p, nil
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

// addVocabulary adds the custom vocabulary words missing from the decoder's dictionary and
// returns the spelling to report for each (the dictionary is lower case: "scribehook" is
// reported as the vocabulary's "Scribehook"). Notes go to Logf when note is set: a stream
// adds the words to each channel's decoder but notes them once.
func (p *Pocketsphinx) addVocabulary(d *psDecoder, entries []string, note bool) map[string]string {
	logf := func(format string, args ...any) {
		if note {
			p.logf(format, args...)
		}
	}
	spell := map[string]string{}
	type entry struct{ word, phones string }
	var adds []entry
	for _, w := range vocabulary(entries) {
		w = strings.Trim(w, `.,;:!?"()[]{}`)
		lower := strings.ToLower(w)
		if lower == "" {
			continue
		}
		if lower != w {
			spell[lower] = w
		}
		if _, ok := d.lookup(lower); ok || slices.ContainsFunc(adds, func(e entry) bool { return e.word == lower }) {
			continue
		}
		phones := p.pronounce(d, lower)
		if phones == "" {
			logf("pocketsphinx: custom vocabulary word %q skipped: no pronunciation can be made for it (letters a–z and apostrophes only)", w)
			continue
		}
		logf("pocketsphinx: custom vocabulary word %q added as /%s/", w, phones)
		adds = append(adds, entry{lower, phones})
	}
	for i, a := range adds {
		// Rebuilding the search is slow: once, with the last word.
		if err := d.addWord(a.word, a.phones, i == len(adds)-1); err != nil {
			logf("%v", err)
		}
	}
	return spell
}

// pronounce makes a pronunciation for a word missing from the dictionary: two dictionary
// words joined ("scribehook" = "scribe" + "hook"), else crude letter-to-sound rules.
func (p *Pocketsphinx) pronounce(d *psDecoder, w string) string {
	for _, r := range w {
		if (r < 'a' || r > 'z') && r != '\'' {
			return ""
		}
	}
	for i := len(w) - 2; i >= 2; i-- {
		a, okA := d.lookup(w[:i])
		if !okA {
			continue
		}
		if b, okB := d.lookup(w[i:]); okB {
			return a + " " + b
		}
	}
	return letterToPhones(w)
}

// letterToPhones spells a lower-case word with the model's phones by greedy rules on letter
// groups. It is crude (English spelling is not phonetic) but gives the decoder a chance at
// names and coined words; words the decoder already knows never get here.
func letterToPhones(w string) string {
	w = strings.ReplaceAll(w, "'", "")
	rules := []struct{ g, ph string }{
		{"tch", "CH"}, {"igh", "AY"}, {"sch", "S K"}, {"tion", "SH AH N"}, {"sion", "ZH AH N"},
		{"ch", "CH"}, {"sh", "SH"}, {"th", "TH"}, {"ph", "F"}, {"wh", "W"}, {"ck", "K"},
		{"ng", "NG"}, {"qu", "K W"}, {"gh", ""}, {"ee", "IY"}, {"ea", "IY"}, {"oo", "UW"},
		{"ou", "AW"}, {"ow", "OW"}, {"oi", "OY"}, {"oy", "OY"}, {"ai", "EY"}, {"ay", "EY"},
		{"au", "AO"}, {"aw", "AO"}, {"ie", "IY"}, {"ei", "EY"}, {"ey", "IY"}, {"er", "ER"},
		{"ir", "ER"}, {"ur", "ER"}, {"ar", "AA R"}, {"or", "AO R"}, {"x", "K S"},
	}
	single := map[byte]string{
		'a': "AE", 'b': "B", 'c': "K", 'd': "D", 'e': "EH", 'f': "F", 'g': "G", 'h': "HH",
		'i': "IH", 'j': "JH", 'k': "K", 'l': "L", 'm': "M", 'n': "N", 'o': "AA", 'p': "P",
		'q': "K", 'r': "R", 's': "S", 't': "T", 'u': "AH", 'v': "V", 'w': "W", 'y': "IH", 'z': "Z",
	}
	vowel := func(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }
	var out []string
	emit := func(ph string) {
		if ph != "" {
			out = append(out, ph)
		}
	}
	for i := 0; i < len(w); {
		rest := w[i:]
		switch {
		case i == 0 && (strings.HasPrefix(rest, "kn") || strings.HasPrefix(rest, "wr")):
			emit(single[rest[1]])
			i += 2
			continue
		case len(rest) >= 2 && rest[0] == rest[1] && !vowel(rest[0]):
			emit(single[rest[0]]) // doubled consonants are one sound
			i += 2
			continue
		}
		matched := false
		for _, r := range rules {
			if strings.HasPrefix(rest, r.g) {
				emit(r.ph)
				i += len(r.g)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		c := w[i]
		next := byte(0)
		if i+1 < len(w) {
			next = w[i+1]
		}
		switch {
		case c == 'c' && (next == 'e' || next == 'i' || next == 'y'):
			emit("S")
		case c == 'e' && i == len(w)-1 && len(out) > 1:
			// a final e is silent ("scribe")
		case c == 'y' && i == 0:
			emit("Y")
		case c == 'y' && i == len(w)-1:
			emit("IY")
		default:
			emit(single[c])
		}
		i++
	}
	return strings.Join(out, " ")
}

// NewStream starts a live transcription on one decoder a channel, taken from the pool at once
// or not at all: a *BusyError when the pool has too few free.
func (p *Pocketsphinx) NewStream(cfg StreamConfig) (Stream, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkEnglish(cfg.Languages); err != nil {
		return nil, err
	}
	if cfg.Channels > p.size {
		return nil, unsupported(PocketsphinxName, "%d channels need %d decoders; the pool has %d", cfg.Channels, cfg.Channels, p.size)
	}
	segs := make([]*audio.Segmenter, cfg.Channels)
	for c := range segs {
		if segs[c], err = audio.NewSegmenter(audio.SegmenterConfig{
			SampleRate: SampleRate, Threshold: cfg.SpeechThreshold,
			// Utterances longer than MaxChunk are cut there too, as pre-recorded ones are: the
			// decoder's lattice grows with the utterance.
			MinSilence: cfg.Endpointing, MaxSegment: min(cfg.MaxUtterance, p.maxChunk), UpdateEvery: partialEvery,
		}); err != nil {
			return nil, fmt.Errorf("pocketsphinx: %w", err)
		}
	}
	decs, err := p.tryAcquire(cfg.Channels)
	if err != nil {
		return nil, err
	}
	st := &psStream{p: p, ch: make([]psChannel, cfg.Channels), held: true}
	for c, d := range decs {
		st.spell = p.addVocabulary(d, cfg.Vocabulary, c == 0)
		d.resetCMN()
		st.ch[c] = psChannel{dec: d, seg: segs[c]}
	}
	return st, nil
}

// psStream is a live transcription. Its mutex makes a Close from another goroutine wait for a
// Feed in progress rather than free the decoder under it.
type psStream struct {
	mu     sync.Mutex
	p      *Pocketsphinx
	spell  map[string]string
	ch     []psChannel
	nextID int
	done   bool // finished or closed: no more audio
	held   bool // the decoders are still ours
}

// psChannel is one channel of a stream. Positions are absolute sample indexes.
type psChannel struct {
	dec      *psDecoder
	seg      *audio.Segmenter
	buf      []int16 // recent audio, buf[0] at bufStart
	bufStart int64
	total    int64 // samples received
	open     bool  // an utterance is open in the decoder
	from     int64 // where its audio starts
	fed      int64 // how far it has been fed
	lastEnd  int64 // where the previous utterance's audio ended
	id       int
}

func (st *psStream) Feed(samples [][]float32) ([]Event, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return nil, errors.New("pocketsphinx: stream already finished")
	}
	if len(samples) != len(st.ch) {
		return nil, unsupported(PocketsphinxName, "%d channels fed to a stream of %d", len(samples), len(st.ch))
	}
	if err := checkChannels(PocketsphinxName, samples); err != nil {
		return nil, err
	}
	var all []taggedEvent
	for c := range st.ch {
		cs := &st.ch[c]
		cs.buf = append(cs.buf, audio.Int16(samples[c])...)
		cs.total += int64(len(samples[c]))
		for _, ev := range cs.seg.Write(samples[c]) {
			all = append(all, taggedEvent{c, ev})
		}
	}
	out, err := st.handle(all, false)
	if err != nil {
		return nil, err
	}
	for c := range st.ch {
		cs := &st.ch[c]
		// Keep the decoder up with the audio, in whole frames: the events of later frames
		// then find it exactly where they would with any other chunking.
		if err := st.feedTo(cs, cs.total/psFrame*psFrame); err != nil {
			return nil, err
		}
		cs.trim()
	}
	return out, nil
}

func (st *psStream) Finish() ([]Event, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return nil, nil
	}
	st.done = true
	defer st.release()
	var all []taggedEvent
	for c := range st.ch {
		for _, ev := range st.ch[c].seg.Flush() {
			all = append(all, taggedEvent{c, ev})
		}
	}
	return st.handle(all, true)
}

func (st *psStream) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done = true
	st.release()
	return nil
}

func (st *psStream) release() {
	if !st.held {
		return
	}
	st.held = false
	for c := range st.ch {
		st.p.release(st.ch[c].dec)
		st.ch[c].dec = nil
	}
}

// handle turns segmenter events into engine events, driving the decoders. Ordering by
// (frame, channel) gives one order whatever the chunking, as in the scripted engine. At the
// end of the stream (flush) utterances take every sample received.
func (st *psStream) handle(all []taggedEvent, flush bool) ([]Event, error) {
	slices.SortStableFunc(all, func(a, b taggedEvent) int {
		if a.ev.Frame != b.ev.Frame {
			if a.ev.Frame < b.ev.Frame {
				return -1
			}
			return 1
		}
		return a.ch - b.ch
	})
	var out []Event
	for _, t := range all {
		c, ev := t.ch, t.ev
		cs := &st.ch[c]
		upTo := (ev.Frame + 1) * psFrame // the audio the event's frame completes
		if flush {
			upTo = cs.total
		}
		switch ev.Kind {
		case audio.SpeechStart:
			out = append(out, Event{Kind: EventSpeechStart, Channel: c, Time: ev.Start})
		case audio.SpeechEnd:
			out = append(out, Event{Kind: EventSpeechEnd, Channel: c, Time: ev.Start})
		case audio.SegmentStart:
			if err := cs.dec.start(); err != nil {
				return nil, err
			}
			start := int64(secondsToSample(ev.Start))
			cs.open, cs.id = true, st.nextID
			st.nextID++
			cs.from = max(start-psContext, cs.lastEnd, cs.bufStart)
			cs.fed = cs.from
			if err := st.feedTo(cs, upTo); err != nil {
				return nil, err
			}
		case audio.SegmentUpdate:
			if err := st.feedTo(cs, upTo); err != nil {
				return nil, err
			}
			if words := st.words(cs); len(words) > 0 {
				out = append(out, Event{Kind: EventPartial, Channel: c, UtteranceID: cs.id, Utterance: psUtterance(words, c, 0, 0)})
			}
		case audio.SegmentEnd:
			if err := st.feedTo(cs, upTo); err != nil {
				return nil, err
			}
			if err := cs.dec.end(); err != nil {
				return nil, err
			}
			cs.open, cs.lastEnd = false, cs.fed
			u := psUtterance(st.words(cs), c, round3(ev.Start), round3(ev.End))
			out = append(out, Event{Kind: EventFinal, Channel: c, UtteranceID: cs.id, Utterance: u})
		}
	}
	return out, nil
}

func (st *psStream) words(cs *psChannel) []Word {
	return psWords(cs.dec.words(), cs.from, float64(cs.fed)/SampleRate, st.spell)
}

// feedTo gives the open utterance the audio up to sample upTo.
func (st *psStream) feedTo(cs *psChannel, upTo int64) error {
	if !cs.open || upTo <= cs.fed {
		return nil
	}
	if err := cs.dec.process(cs.buf[cs.fed-cs.bufStart:upTo-cs.bufStart], psFrame); err != nil {
		return err
	}
	cs.fed = upTo
	return nil
}

// trim drops audio no utterance will need: all but psHistory, or what the open utterance has
// been fed. Cuts fall on frames, so utterances still start on frames.
func (cs *psChannel) trim() {
	keep := (cs.total - psHistory) / psFrame * psFrame
	if cs.open {
		keep = min(keep, cs.fed/psFrame*psFrame)
	}
	if keep > cs.bufStart {
		cs.buf = cs.buf[keep-cs.bufStart:]
		cs.bufStart = keep
	}
}
