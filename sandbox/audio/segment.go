package audio

import (
	"fmt"
	"math"
)

// onsetFrames voiced frames in a row start speech, so a click does not.
const onsetFrames = 2

// SegmenterConfig sets how voiced frames are grouped into segments (utterances).
type SegmenterConfig struct {
	SampleRate  int
	Threshold   float64 // VAD threshold, 0–1; higher is less sensitive
	MinSilence  float64 // seconds without voice that end speech and its segment (> 0)
	MaxSegment  float64 // seconds; a longer segment is cut there and the next voiced frame opens another (0: no limit)
	UpdateEvery float64 // seconds between SegmentUpdate events of an open segment (0: none)
}

// SegmentEventKind names what happened.
type SegmentEventKind string

// Kinds of segment events. Speech events mark voice activity; segment events mark the units
// to transcribe. They differ when a segment is cut at MaxSegment while speech goes on.
const (
	SpeechStart   SegmentEventKind = "speech_start"
	SpeechEnd     SegmentEventKind = "speech_end"
	SegmentStart  SegmentEventKind = "segment_start"
	SegmentUpdate SegmentEventKind = "segment_update"
	SegmentEnd    SegmentEventKind = "segment_end"
)

// SegmentEvent is one event of a Segmenter. Times are seconds from the first sample and fall on
// frame boundaries.
type SegmentEvent struct {
	Kind SegmentEventKind
	// Frame is the index of the frame whose analysis produced the event (the number of frames
	// at Flush). Merging the events of several channels by (Frame, channel) gives one order
	// whatever the chunking.
	Frame int64
	// Segment counts segments from 0 (segment events only).
	Segment int
	// Speech events: Start and End are both the time of the event (the start of the first
	// voiced frame, the end of the last one). Segment events: the start of the segment and the
	// end of its last voiced frame so far.
	Start, End float64
	// Cut is set on a SegmentEnd caused by MaxSegment.
	Cut bool
}

type segState int

const (
	idle     segState = iota
	inSeg             // speech, segment open
	afterCut          // speech going on after a cut, no segment open until the next voiced frame
)

// Segmenter finds stretches of speech in one channel, frame by frame: SpeechStart when voice
// begins, SegmentStart when a segment opens, SegmentUpdate at intervals while it is open,
// SpeechEnd then SegmentEnd when MinSilence of silence ends it (or SegmentEnd alone when MaxSegment cuts it). It is
// causal: the events of a frame depend only on the frames up to it, so feeding the same samples
// in any pieces gives the same events. A Segmenter is not safe for concurrent use.
type Segmenter struct {
	vad                          *VAD
	rate                         int
	minSil, maxSeg, update       int64 // in frames
	frame                        int64 // frames analysed
	state                        segState
	onset                        int
	segStart, lastVoiced, silent int64
	nextUpdate                   int64
	seg                          int
	voiced                       []bool
}

// NewSegmenter prepares a segmenter.
func NewSegmenter(cfg SegmenterConfig) (*Segmenter, error) {
	v, err := NewVAD(cfg.SampleRate, cfg.Threshold)
	if err != nil {
		return nil, err
	}
	if !(cfg.MinSilence > 0) || cfg.MinSilence > 3600 {
		return nil, fmt.Errorf("audio: segment silence %v s must be above 0", cfg.MinSilence)
	}
	if !(cfg.MaxSegment >= 0) || !(cfg.UpdateEvery >= 0) || cfg.MaxSegment > 1e6 || cfg.UpdateEvery > 1e6 {
		return nil, fmt.Errorf("audio: segment limits %v s and %v s must be 0 or above", cfg.MaxSegment, cfg.UpdateEvery)
	}
	fs := v.FrameSeconds()
	// A small tolerance keeps 0.06 s from becoming 4 frames of 0.02 s through rounding.
	frames := func(sec float64) int64 { return max(1, int64(math.Ceil(sec/fs-1e-9))) }
	s := &Segmenter{vad: v, rate: cfg.SampleRate, minSil: frames(cfg.MinSilence)}
	if cfg.MaxSegment > 0 {
		s.maxSeg = frames(cfg.MaxSegment)
	}
	if cfg.UpdateEvery > 0 {
		s.update = frames(cfg.UpdateEvery)
	}
	return s, nil
}

// FrameSeconds is the length of a VAD frame, the resolution of every time reported.
func (s *Segmenter) FrameSeconds() float64 { return s.vad.FrameSeconds() }

// Seconds is the time at the start of frame f.
func (s *Segmenter) Seconds(f int64) float64 {
	return float64(f*int64(s.vad.frameLen)) / float64(s.rate)
}

// Write analyses the next samples and returns the events of the frames they complete.
func (s *Segmenter) Write(samples []float32) []SegmentEvent {
	s.voiced = s.vad.Write(samples, s.voiced[:0])
	var evs []SegmentEvent
	for _, v := range s.voiced {
		evs = s.step(evs, v)
		s.frame++
	}
	return evs
}

// Flush ends the stream: an open segment ends at its last voiced frame and speech ends. A
// trailing partial frame (under 20 ms) is not analysed.
func (s *Segmenter) Flush() []SegmentEvent {
	var evs []SegmentEvent
	// Speech ends before the segment it closes, as the service sends speech_end before the
	// final transcript that the endpoint produces.
	switch s.state {
	case inSeg:
		evs = append(evs, s.speechEvent(SpeechEnd, s.lastVoiced+1), s.segEvent(SegmentEnd))
		s.seg++
	case afterCut:
		evs = append(evs, s.speechEvent(SpeechEnd, s.lastVoiced+1))
	}
	s.state, s.onset = idle, 0
	return evs
}

func (s *Segmenter) step(evs []SegmentEvent, voiced bool) []SegmentEvent {
	f := s.frame
	switch s.state {
	case idle:
		if !voiced {
			s.onset = 0
			return evs
		}
		s.onset++
		if s.onset < onsetFrames {
			return evs
		}
		first := f - int64(s.onset) + 1
		evs = append(evs, s.speechEvent(SpeechStart, first))
		return s.open(evs, first)
	case afterCut:
		if voiced {
			s.lastVoiced = f
			return s.open(evs, f)
		}
		if s.silent++; s.silent >= s.minSil {
			evs = append(evs, s.speechEvent(SpeechEnd, s.lastVoiced+1))
			s.state, s.onset = idle, 0
		}
		return evs
	}
	if voiced {
		s.lastVoiced, s.silent = f, 0
	} else {
		s.silent++
	}
	switch {
	case s.silent >= s.minSil:
		evs = append(evs, s.speechEvent(SpeechEnd, s.lastVoiced+1), s.segEvent(SegmentEnd))
		s.seg++
		s.state, s.onset = idle, 0
	case s.maxSeg > 0 && f+1-s.segStart >= s.maxSeg:
		ev := s.segEvent(SegmentEnd)
		ev.Cut = true
		evs = append(evs, ev)
		s.seg++
		s.state = afterCut
	case s.update > 0 && f+1-s.segStart >= s.nextUpdate:
		evs = append(evs, s.segEvent(SegmentUpdate))
		s.nextUpdate += s.update
	}
	return evs
}

// open starts a segment at frame first; the current frame is voiced.
func (s *Segmenter) open(evs []SegmentEvent, first int64) []SegmentEvent {
	s.state = inSeg
	s.segStart, s.lastVoiced, s.silent = first, s.frame, 0
	s.nextUpdate = s.update
	return append(evs, s.segEvent(SegmentStart))
}

func (s *Segmenter) segEvent(k SegmentEventKind) SegmentEvent {
	return SegmentEvent{Kind: k, Frame: s.frame, Segment: s.seg, Start: s.Seconds(s.segStart), End: s.Seconds(s.lastVoiced + 1)}
}

func (s *Segmenter) speechEvent(k SegmentEventKind, f int64) SegmentEvent {
	t := s.Seconds(f)
	return SegmentEvent{Kind: k, Frame: s.frame, Start: t, End: t}
}
