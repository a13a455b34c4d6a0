package captions

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/subtitles"
)

// Defaults and bounds of Config.
const (
	DefaultSegment = 6 * time.Second
	MinSegment     = time.Second
	MaxSegment     = time.Minute
	MaxDelay       = time.Hour
)

// ErrNotListed is SegmentVTT's error for a segment the playlist does not list (yet).
var ErrNotListed = errors.New("captions: segment not listed")

// Config shapes a Track. Its zero value is usable: 6 s segments, no delay, a growing playlist,
// the subtitles package's default profile.
type Config struct {
	// Segment is each segment's duration, whole milliseconds; DefaultSegment when 0.
	Segment time.Duration
	// Delay holds a segment back this long after its end, so that the finals of its speech
	// have arrived when players fetch it: a final that comes later than its segment's listing
	// is missing from what players already fetched (its part in later segments is not).
	Delay time.Duration
	// Window, when set, makes the playlist slide: it lists the segments of the last Window
	// only (at least three segments: RFC 8216 §6.2.2). 0 keeps every segment (an EVENT
	// playlist), which lets a player seek back to the session's start.
	Window time.Duration
	// Profile cuts each final into cues (line length, lines, durations); nil is
	// subtitles.DefaultProfile().
	Profile *subtitles.Profile
	// MPEGTS is the 90 kHz timestamp that session time 0 maps to in each segment's
	// X-TIMESTAMP-MAP, for players that align by the video's timestamps; 0 when the video's
	// timestamps start with the session's audio.
	MPEGTS int64
}

// Validate names every key that is out of bounds.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Segment == 0:
	case c.Segment < MinSegment || c.Segment > MaxSegment:
		errs = append(errs, fmt.Errorf("segment must be from %s to %s (got %s)", MinSegment, MaxSegment, c.Segment))
	case c.Segment%time.Millisecond != 0:
		errs = append(errs, fmt.Errorf("segment must be whole milliseconds (got %s)", c.Segment))
	}
	if c.Delay < 0 || c.Delay > MaxDelay {
		errs = append(errs, fmt.Errorf("delay must be from 0s to %s (got %s)", MaxDelay, c.Delay))
	}
	seg := c.withDefaults().Segment
	if c.Window != 0 && c.Window < 3*seg {
		errs = append(errs, fmt.Errorf("window must be 0 (every segment) or at least three segments, %s (got %s)", 3*seg, c.Window))
	}
	if c.MPEGTS < 0 || c.MPEGTS >= 1<<33 {
		errs = append(errs, fmt.Errorf("mpegts must be from 0 to 2^33-1 (got %d)", c.MPEGTS))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Segment == 0 {
		c.Segment = DefaultSegment
	}
	if c.Profile == nil {
		p := subtitles.DefaultProfile()
		c.Profile = &p
	}
	return c
}

// Track is the caption track of one live session, built up final by final. It is not safe
// for concurrent use.
type Track struct {
	cfg   Config
	start time.Time
	cues  []subtitles.Cue // sorted by Start
	end   time.Duration   // the furthest time any final or the recording reached

	ended bool
	// listedAtEnd is how many segments the playlist listed when the session ended: they stay
	// listed as they were (RFC 8216 §6.2.1: a playlist only grows).
	listedAtEnd int
}

// NewTrack starts the track of a session whose audio started at start (the wall clock of
// session time 0). Config values out of bounds are not checked here: Validate them.
func NewTrack(cfg Config, start time.Time) *Track {
	return &Track{cfg: cfg.withDefaults(), start: start}
}

// Start is the wall-clock time of session time 0.
func (t *Track) Start() time.Time { return t.start }

// SetStart changes the wall-clock time of session time 0, when it is learnt late.
func (t *Track) SetStart(start time.Time) { t.start = start }

// Ended reports whether End was called.
func (t *Track) Ended() bool { return t.ended }

// AddFinal cuts a final transcript's utterance into cues. Finals may come in any order.
func (t *Track) AddFinal(u api.Utterance) error {
	cues, _, err := subtitles.Segment([]api.Utterance{u}, *t.cfg.Profile)
	if err != nil {
		return fmt.Errorf("cut final: %w", err)
	}
	for _, c := range cues {
		i, _ := slices.BinarySearchFunc(t.cues, c.Start, func(x subtitles.Cue, s time.Duration) int {
			if x.Start <= s {
				return -1 // after every cue that starts at the same time: arrival order
			}
			return 1
		})
		t.cues = slices.Insert(t.cues, i, c)
		t.end = max(t.end, c.End)
	}
	if ok(u.End) {
		t.end = max(t.end, seconds(u.End))
	}
	return nil
}

// End marks the session ended at wall-clock time at, its recording recording seconds long (0
// when unknown): the last segment reaches the recording's or the last cue's end, and the
// playlist ends with #EXT-X-ENDLIST. A second call changes nothing.
func (t *Track) End(recording float64, at time.Time) {
	if t.ended {
		return
	}
	t.listedAtEnd = t.liveCount(at)
	if ok(recording) {
		t.end = max(t.end, seconds(recording))
	}
	t.ended = true
}

// liveCount is how many segments are listed at now while the session runs.
func (t *Track) liveCount(now time.Time) int {
	if t.start.IsZero() {
		return 0
	}
	avail := now.Sub(t.start) - t.cfg.Delay
	if avail <= 0 {
		return 0
	}
	return int(avail / t.cfg.Segment)
}

// count is how many segments (from 0) are listed at now.
func (t *Track) count(now time.Time) int {
	if !t.ended {
		return t.liveCount(now)
	}
	seg := t.cfg.Segment
	return max(int((t.end+seg-1)/seg), t.listedAtEnd, 1)
}

// first is the first segment the playlist lists of count.
func (t *Track) first(count int) int {
	if t.cfg.Window == 0 {
		return 0
	}
	keep := int((t.cfg.Window + t.cfg.Segment - 1) / t.cfg.Segment)
	return max(0, count-keep)
}

// duration is segment n's duration: the whole segment but for the last one of an ended
// session, which stops at the end unless it was listed whole already.
func (t *Track) duration(n, count int) time.Duration {
	seg := t.cfg.Segment
	if t.ended && n == count-1 && n >= t.listedAtEnd {
		if rest := t.end - time.Duration(n)*seg; rest > 0 && rest < seg {
			return rest
		}
	}
	return seg
}

// SegmentPath gives the segment URIs of a playlist served at …/captions.m3u8: relative ones,
// captions/N.vtt, each followed by query (empty, or starting with "?").
func SegmentPath(query string) func(n int) string {
	return func(n int) string { return "captions/" + strconv.Itoa(n) + ".vtt" + query }
}

// Playlist is the media playlist at now; uri names segment n (SegmentPath).
func (t *Track) Playlist(now time.Time, uri func(n int) string) []byte {
	count := t.count(now)
	first := t.first(count)
	seg := t.cfg.Segment
	b := make([]byte, 0, 256+(count-first)*96)
	b = append(b, "#EXTM3U\n#EXT-X-VERSION:3\n"...)
	b = fmt.Appendf(b, "#EXT-X-TARGETDURATION:%d\n", int(math.Ceil(seg.Seconds())))
	b = fmt.Appendf(b, "#EXT-X-MEDIA-SEQUENCE:%d\n", first)
	if t.cfg.Window == 0 {
		b = append(b, "#EXT-X-PLAYLIST-TYPE:EVENT\n"...)
	}
	for n := first; n < count; n++ {
		if !t.start.IsZero() {
			at := t.start.Add(time.Duration(n) * seg).UTC()
			b = append(b, "#EXT-X-PROGRAM-DATE-TIME:"...)
			b = at.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
			b = append(b, '\n')
		}
		b = fmt.Appendf(b, "#EXTINF:%.3f,\n%s\n", t.duration(n, count).Seconds(), uri(n))
	}
	if t.ended {
		b = append(b, "#EXT-X-ENDLIST\n"...)
	}
	return b
}

// SegmentVTT is segment n at now as WebVTT: the parts of the cues within it, at their session
// times, after an X-TIMESTAMP-MAP header; ErrNotListed when the playlist does not list n.
func (t *Track) SegmentVTT(n int, now time.Time) ([]byte, error) {
	count := t.count(now)
	if n < 0 || n >= count {
		return nil, fmt.Errorf("%w: %d (listed: %d)", ErrNotListed, n, count)
	}
	from := time.Duration(n) * t.cfg.Segment
	to := from + t.duration(n, count)
	var in []subtitles.Cue
	for _, c := range t.cues {
		if c.Start >= to {
			break
		}
		if c.End <= from {
			continue
		}
		c.Start, c.End = max(c.Start, from), min(c.End, to)
		if c.End-c.Start >= time.Millisecond {
			in = append(in, c)
		}
	}
	var body bytes.Buffer
	if err := subtitles.Render(&body, in, subtitles.VTT, subtitles.Options{}); err != nil {
		return nil, fmt.Errorf("render segment %d: %w", n, err)
	}
	return withTimestampMap(body.Bytes(), t.cfg.MPEGTS), nil
}

// withTimestampMap puts X-TIMESTAMP-MAP under the WEBVTT line, and ends the file with a blank
// line: readers that join segments (ffmpeg's HLS demuxer) would read the next segment's header
// as the last cue's text without it.
func withTimestampMap(vtt []byte, mpegts int64) []byte {
	rest := bytes.TrimLeft(bytes.TrimPrefix(vtt, []byte("WEBVTT")), "\n")
	rest = bytes.TrimRight(rest, "\n")
	out := fmt.Appendf(make([]byte, 0, len(rest)+64), "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:%d,LOCAL:00:00:00.000\n\n", mpegts)
	if len(rest) > 0 {
		out = append(append(out, rest...), "\n\n"...)
	}
	return out
}

func ok(s float64) bool { return s > 0 && !math.IsInf(s, 0) && !math.IsNaN(s) && s < 1e7 }

// seconds is s as a whole-millisecond duration, as cue times are.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1000)) * time.Millisecond
}

// ErrSegmentName is ParseSegmentName's error.
var ErrSegmentName = errors.New("captions: a segment is named N.vtt, N a whole number without leading zeros")

// ParseSegmentName reads the segment number of a path's last element, "N.vtt" as SegmentPath
// writes it: one spelling per segment, so that caches and logs see one URL for each.
func ParseSegmentName(name string) (int, error) {
	digits, found := strings.CutSuffix(name, ".vtt")
	if !found || digits == "" || len(digits) > 9 || (len(digits) > 1 && digits[0] == '0') {
		return 0, ErrSegmentName
	}
	n := 0
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, ErrSegmentName
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
