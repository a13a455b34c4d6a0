package engine

import (
	"fmt"
	"slices"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// segmenters find the speech of a live stream, one audio.Segmenter a channel. Both engines'
// streams read their events through it, so that both number utterances in the same order.
type segmenters []*audio.Segmenter

// newSegmenters makes one segmenter a channel, all with cfg; errors are prefixed with the
// engine's name.
func newSegmenters(engine string, channels int, cfg audio.SegmenterConfig) (segmenters, error) {
	s := make(segmenters, channels)
	for c := range s {
		seg, err := audio.NewSegmenter(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", engine, err)
		}
		s[c] = seg
	}
	return s, nil
}

// taggedEvent is a segmenter event with its channel, for merging channels.
type taggedEvent struct {
	ch int
	ev audio.SegmentEvent
}

// write gives each channel its samples and returns the events of all channels in order.
func (s segmenters) write(samples [][]float32) []taggedEvent {
	return s.collect(func(c int) []audio.SegmentEvent { return s[c].Write(samples[c]) })
}

// flush ends every channel's audio and returns the events that closes, in order.
func (s segmenters) flush() []taggedEvent {
	return s.collect(func(c int) []audio.SegmentEvent { return s[c].Flush() })
}

// collect orders the events by (frame, channel). Every call covers the same frames on every
// channel, so that is one order whatever the chunking, and utterance ids follow it.
func (s segmenters) collect(events func(c int) []audio.SegmentEvent) []taggedEvent {
	var all []taggedEvent
	for c := range s {
		for _, ev := range events(c) {
			all = append(all, taggedEvent{c, ev})
		}
	}
	slices.SortStableFunc(all, func(a, b taggedEvent) int {
		if a.ev.Frame != b.ev.Frame {
			if a.ev.Frame < b.ev.Frame {
				return -1
			}
			return 1
		}
		return a.ch - b.ch
	})
	return all
}

// engineEvents turns segmenter events into engine events: speech starts and ends as they are,
// segment events through the engine's segment, which drives its recogniser and returns the
// transcript event of one when there is one (ok).
func engineEvents(all []taggedEvent, segment func(c int, ev audio.SegmentEvent) (e Event, ok bool, err error)) ([]Event, error) {
	var out []Event
	for _, t := range all {
		switch t.ev.Kind {
		case audio.SpeechStart:
			out = append(out, Event{Kind: EventSpeechStart, Channel: t.ch, Time: t.ev.Start})
		case audio.SpeechEnd:
			out = append(out, Event{Kind: EventSpeechEnd, Channel: t.ch, Time: t.ev.Start})
		default:
			e, ok, err := segment(t.ch, t.ev)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// checkFeed validates the samples given to the Feed of a stream of the named engine with
// channels channels, done once it is finished or closed.
func checkFeed(engine string, done bool, channels int, samples [][]float32) error {
	if done {
		return fmt.Errorf("%s: stream already finished", engine)
	}
	if len(samples) != channels {
		return unsupported(engine, "%d channels fed to a stream of %d", len(samples), channels)
	}
	return checkChannels(engine, samples)
}
