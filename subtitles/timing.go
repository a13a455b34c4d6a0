package subtitles

import (
	"math"
	"time"
)

// never stands for "no next cue".
const never = time.Duration(math.MaxInt64)

// need is how long a cue of chars visible runes and words words should stay on screen:
// MinDuration, the reading speed and BBC's time per word, whichever is longest.
func (s *segmenter) need(chars, words int) time.Duration {
	d := s.minDur
	if s.p.MaxCPS > 0 {
		d = max(d, ceilMS(time.Duration(float64(chars)/s.p.MaxCPS*float64(time.Second))))
	}
	if s.p.MinPerWord > 0 {
		d = max(d, ceilMS(time.Duration(words)*s.p.MinPerWord))
	}
	return min(d, s.maxDur)
}

// endFor times the end of a cue starting at start whose speech ends at speechEnd, when the
// next cue's first word starts at next (never for the last cue):
//
//   - the end is the speech end, extended by at most MaxExtend to meet need;
//   - it never comes closer than the minimum gap to the next word, and a gap of at most
//     CloseGap is closed to exactly the minimum gap (Netflix chaining);
//   - the cue never lasts longer than MaxDuration.
//
// The result can be ≤ start when the next word leaves no room; the caller handles that.
func (s *segmenter) endFor(start, speechEnd, next, need time.Duration) time.Duration {
	end := max(speechEnd, min(start+need, speechEnd+s.maxExt))
	limit := start + s.maxDur
	if next != never {
		stop := next - s.gap
		if end < stop && stop-end <= s.closeGap { // Netflix: gaps of up to 12 frames are closed
			end = stop
		}
		limit = min(limit, stop)
	}
	return min(end, limit)
}

// packedEnd ends a cue whose next word leaves no room (words packed closer than the minimum
// gap, or a cue already running late): the cue stays up as long as it needs but for no more
// than MaxExtend of accumulated lateness, then for one frame, and the next cue starts after
// it. This is the only case where a cue starts after its first word; it keeps the invariants
// (sorted, end > start, gaps) and bounds the drift instead of letting it grow cue after cue.
func (s *segmenter) packedEnd(start, late, need time.Duration) time.Duration {
	return start + min(max(s.frame, min(need, s.maxExt-late)), s.maxDur)
}

// time sets Start and End of the cues built from spans, in order: a cue starts at its first
// word unless the previous cue forces it later (only with words packed closer than the
// minimum gap), and ends as endFor says. This makes cues sorted, end > start, and gaps
// ≥ MinGap whatever the input.
//
// A cue holding a word longer than a line is the exception: it cannot take words from its
// neighbours when the next word follows closely (the layout puts it with them when it can),
// so it is given MinDuration by the timing. It stays up into the pause after it, beyond
// MaxExtend if need be; then starts before its word, in the silence the previous cue does
// not use; and last pushes the next cue later, as packed words do.
func (s *segmenter) time(cues []Cue, spans []span) {
	starts := s.plannedStarts(cues, spans)
	prevEnd := time.Duration(-1)
	for c := range cues {
		sp := spans[c]
		start := starts[c]
		if prevEnd >= 0 {
			start = max(start, prevEnd+s.gap)
		}
		next := never
		if c+1 < len(spans) {
			next = starts[c+1]
		}
		need := s.need(cues[c].chars(), sp.j-sp.i)
		end := s.endFor(start, s.en[sp.j-1], next, need)
		if s.hasLong(sp.i, sp.j) {
			end = max(end, start+s.minDur)
		}
		if end <= start {
			end = s.packedEnd(start, start-s.st[sp.i], need)
		}
		cues[c].Start, cues[c].End = start, end
		prevEnd = end
	}
}

// plannedStarts is where each cue would start without its predecessor's constraints: its
// first word, or, for a cue holding a word longer than a line whose next cue leaves it less
// than MinDuration, earlier by the shortfall, but not into the time the previous cue would
// take on screen without it (its speech and extension, as endFor gives them with nothing
// after it).
func (s *segmenter) plannedStarts(cues []Cue, spans []span) []time.Duration {
	starts := make([]time.Duration, len(spans))
	for c, sp := range spans {
		starts[c] = s.st[sp.i]
		if c+1 == len(spans) || s.minDur <= 0 || !s.hasLong(sp.i, sp.j) {
			continue
		}
		room := s.st[spans[c+1].i] - s.gap - starts[c]
		if room >= s.minDur {
			continue
		}
		earliest := time.Duration(0)
		if c > 0 {
			prev := spans[c-1]
			need := s.need(cues[c-1].chars(), prev.j-prev.i)
			earliest = s.endFor(s.st[prev.i], s.en[prev.j-1], never, need) + s.gap
		}
		starts[c] = min(starts[c], max(earliest, starts[c]-(s.minDur-room)))
	}
	return starts
}
