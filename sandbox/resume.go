package sandbox

import (
	"bytes"

	"github.com/scribehook/scribehook/api"
)

// A resumed session must count each byte once. After a drop the SDKs resend every byte after
// the end of the last acknowledgment they saw; acknowledgments still in flight at the drop are
// lost, so the session has already processed a part of what comes again. The client does not
// say where its resend starts, but it can only start at the end of an acknowledgment the session
// sent: the session keeps the raw bytes and acknowledgment ends of its recent audio, compares
// the first bytes of the new socket with them, and skips the part it already has.

const (
	// resumeTailBytes and resumeMarks bound what a session keeps for that comparison: a resend
	// that starts further back is taken as new audio (counted twice, as before issue 27).
	resumeTailBytes = 2 << 20
	resumeMarks     = 256
)

// ackMark is the end of one acknowledgment: where a resend may start.
type ackMark struct {
	byteEnd int64
	timeEnd float64
}

// resumeTail is the recent audio of a session as received: raw bytes from marks[0].byteEnd on,
// and the ends of the acknowledgments sent over them.
type resumeTail struct {
	marks []ackMark
	bytes []byte
}

func newResumeTail() resumeTail { return resumeTail{marks: []ackMark{{}}} }

// add records a chunk that was acknowledged up to end, and forgets what is past the bounds. An
// empty chunk ends where the previous one did: no new place to start.
func (r *resumeTail) add(chunk []byte, end ackMark) {
	if len(chunk) == 0 {
		return
	}
	r.bytes = append(r.bytes, chunk...)
	r.marks = append(r.marks, end)
	drop := 0
	for len(r.marks)-drop > 1 && (len(r.marks)-drop > resumeMarks || end.byteEnd-r.marks[drop].byteEnd > resumeTailBytes) {
		drop++
	}
	if drop > 0 {
		r.bytes = r.bytes[r.marks[drop].byteEnd-r.marks[0].byteEnd:]
		r.marks = r.marks[drop:]
	}
}

// repeats reports whether the bytes from at to the end equal as many bytes just before at.
func (r *resumeTail) repeats(at int64) bool {
	last := r.marks[len(r.marks)-1].byteEnd
	n := last - at
	if at-n < r.marks[0].byteEnd {
		return false
	}
	return bytes.Equal(r.from(at - n)[:n], r.from(at)[:n])
}

// from returns the kept bytes from offset at on.
func (r *resumeTail) from(at int64) []byte { return r.bytes[at-r.marks[0].byteEnd:] }

// aligner finds where the first socket of a resume starts in the session's audio. Candidates are
// the acknowledgment ends; the last one (everything received) needs no evidence and wins when no
// other is proven. An earlier end X is proven when the bytes that follow it, up to everything
// received, come again. Audio that repeats itself would prove an end that is not the start, and
// taking new audio for a resend drops it, which the SDKs cannot take back (counting some audio
// twice harms less): so an end is no candidate when what follows it is one byte value (digital
// silence) or equals the same length of audio before it (a periodic signal, such as a test
// tone). Recorded speech does neither.
type aligner struct {
	tail    *resumeTail
	frames  [][]byte // held until the start is known
	pending []byte   // the same bytes, joined, for comparison
	alive   []candidate
}

// candidate is an acknowledgment end not yet refuted, and how many of the bytes after it
// pending has matched so far.
type candidate struct {
	mark    int // index in tail.marks
	checked int
}

// newAligner returns nil when no acknowledgment end but the last can be proven: the resume
// then starts there, with nothing to hold.
func newAligner(tail *resumeTail) *aligner {
	a := &aligner{tail: tail}
	last := tail.marks[len(tail.marks)-1].byteEnd
	run := constantRunStart(tail.bytes) + tail.marks[0].byteEnd
	for i, m := range tail.marks[:len(tail.marks)-1] {
		if m.byteEnd < min(run, last) && !tail.repeats(m.byteEnd) {
			a.alive = append(a.alive, candidate{mark: i})
		}
	}
	if len(a.alive) == 0 {
		return nil
	}
	return a
}

// constantRunStart is where the run of b's last byte value that ends b starts (0 for an empty b).
func constantRunStart(b []byte) int64 {
	i := len(b)
	for i > 0 && b[i-1] == b[len(b)-1] {
		i--
	}
	return int64(i)
}

// push holds one frame and reports whether the start is now known: every candidate but the last
// is refuted or proven.
func (a *aligner) push(frame []byte) bool {
	a.frames = append(a.frames, frame)
	a.pending = append(a.pending, frame...)
	last := a.tail.marks[len(a.tail.marks)-1].byteEnd
	kept := a.alive[:0]
	undecided := false
	for _, c := range a.alive {
		at := a.tail.marks[c.mark].byteEnd
		want := a.tail.from(at)[:last-at]
		n := min(len(want), len(a.pending))
		if !bytes.Equal(want[c.checked:n], a.pending[c.checked:n]) {
			continue
		}
		c.checked = n
		kept = append(kept, c)
		undecided = undecided || n < len(want)
	}
	a.alive = kept
	return !undecided
}

// start is the acknowledgment end where the resend starts: the earliest proven candidate, or
// the last end. Candidates not yet proven when the client stops cannot be the start (a resend
// holds at least every byte after its start that the session received), so they lose.
func (a *aligner) start() ackMark {
	last := a.tail.marks[len(a.tail.marks)-1]
	for _, c := range a.alive {
		if m := a.tail.marks[c.mark]; int64(c.checked) == last.byteEnd-m.byteEnd {
			return m
		}
	}
	return last
}

// skip is how many bytes of the held frames the session already has, given the start.
func (a *aligner) skip(start ackMark) int64 {
	return a.tail.marks[len(a.tail.marks)-1].byteEnd - start.byteEnd
}

// receiveLocked takes one chunk of audio from the client: at once, or, at the start of a
// resumed socket, once the aligner knows where the resend starts. It reports true when the
// session reached its maximum duration.
func (sess *session) receiveLocked(chunk []byte) bool {
	if sess.align == nil {
		return sess.audioLocked(chunk)
	}
	if len(chunk) >= maxFrameBytes {
		return sess.audioLocked(chunk) // refused, and not held
	}
	if !sess.align.push(chunk) {
		return false
	}
	return sess.resumeLocked()
}

// resumeLocked ends an alignment: it acknowledges once more, in one range, the resent bytes
// that the session already has (the client's acknowledgments for them were lost, and it trims
// its buffer by them), then processes the rest of the held frames.
func (sess *session) resumeLocked() bool {
	a := sess.align
	sess.align = nil
	start := a.start()
	skip := a.skip(start)
	if skip > 0 {
		last := a.tail.marks[len(a.tail.marks)-1]
		sess.emitLocked(api.MessageAudioChunk, api.AudioChunkAckData{
			ByteRange: [2]int64{start.byteEnd, last.byteEnd},
			TimeRange: [2]float64{start.timeEnd, last.timeEnd},
		}, api.Bool(true))
		sess.log.WithField("bytes", skip).Info("live session resumed: resent audio skipped")
	}
	for _, f := range a.frames {
		if skip > 0 && skip >= int64(len(f)) {
			skip -= int64(len(f))
			continue
		}
		f, skip = f[skip:], 0
		if sess.audioLocked(f) {
			return true
		}
	}
	return false
}
