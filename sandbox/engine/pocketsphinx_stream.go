//go:build pocketsphinx

package engine

import (
	"sync"

	"github.com/scribehook/scribehook/sandbox/audio"
)

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
	segs, err := newSegmenters(PocketsphinxName, cfg.Channels, audio.SegmenterConfig{
		SampleRate: SampleRate, Threshold: cfg.SpeechThreshold,
		// Utterances longer than MaxChunk are cut there too, as pre-recorded ones are: the
		// decoder's lattice grows with the utterance.
		MinSilence: cfg.Endpointing, MaxSegment: min(cfg.MaxUtterance, p.maxChunk), UpdateEvery: partialEvery,
	})
	if err != nil {
		return nil, err
	}
	decs, err := p.tryAcquire(cfg.Channels)
	if err != nil {
		return nil, err
	}
	st := &psStream{p: p, segs: segs, ch: make([]psChannel, cfg.Channels), held: true}
	for c, d := range decs {
		st.spell = p.addVocabulary(d, cfg.Vocabulary, c == 0)
		d.resetCMN()
		st.ch[c] = psChannel{dec: d}
	}
	return st, nil
}

// psStream is a live transcription. Its mutex makes a Close from another goroutine wait for a
// Feed in progress rather than free the decoder under it.
type psStream struct {
	mu     sync.Mutex
	p      *Pocketsphinx
	spell  map[string]string
	segs   segmenters
	ch     []psChannel
	nextID int
	done   bool // finished or closed: no more audio
	held   bool // the decoders are still ours
}

// psChannel is one channel of a stream. Positions are absolute sample indexes.
type psChannel struct {
	dec      *psDecoder
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
	if err := checkFeed(PocketsphinxName, st.done, len(st.ch), samples); err != nil {
		return nil, err
	}
	for c := range st.ch {
		cs := &st.ch[c]
		cs.buf = append(cs.buf, audio.Int16(samples[c])...)
		cs.total += int64(len(samples[c]))
	}
	out, err := st.handle(st.segs.write(samples), false)
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
	return st.handle(st.segs.flush(), true)
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

// handle turns segmenter events into engine events, driving the decoders. At the end of the
// stream (flush) utterances take every sample received.
func (st *psStream) handle(all []taggedEvent, flush bool) ([]Event, error) {
	return engineEvents(all, func(c int, ev audio.SegmentEvent) (Event, bool, error) {
		return st.segment(c, ev, flush)
	})
}

// segment feeds channel c's decoder the audio up to the event's frame (all of it at flush),
// opening and closing its utterances as the segmenter does: a partial transcript on an update
// with words, a final on the end.
func (st *psStream) segment(c int, ev audio.SegmentEvent, flush bool) (Event, bool, error) {
	cs := &st.ch[c]
	upTo := (ev.Frame + 1) * psFrame // the audio the event's frame completes
	if flush {
		upTo = cs.total
	}
	switch ev.Kind {
	case audio.SegmentStart:
		if err := cs.dec.start(); err != nil {
			return Event{}, false, err
		}
		start := int64(secondsToSample(ev.Start))
		cs.open, cs.id = true, st.nextID
		st.nextID++
		cs.from = max(start-psContext, cs.lastEnd, cs.bufStart)
		cs.fed = cs.from
		if err := st.feedTo(cs, upTo); err != nil {
			return Event{}, false, err
		}
	case audio.SegmentUpdate:
		if err := st.feedTo(cs, upTo); err != nil {
			return Event{}, false, err
		}
		if words := st.words(cs); len(words) > 0 {
			return Event{Kind: EventPartial, Channel: c, UtteranceID: cs.id, Utterance: psUtterance(words, c, 0, 0)}, true, nil
		}
	case audio.SegmentEnd:
		if err := st.feedTo(cs, upTo); err != nil {
			return Event{}, false, err
		}
		if err := cs.dec.end(); err != nil {
			return Event{}, false, err
		}
		cs.open, cs.lastEnd = false, cs.fed
		u := psUtterance(st.words(cs), c, round3(ev.Start), round3(ev.End))
		return Event{Kind: EventFinal, Channel: c, UtteranceID: cs.id, Utterance: u}, true, nil
	}
	return Event{}, false, nil
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
