package subtitles

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// Profile is the set of rules a segmentation follows. Every field can be overridden; the
// presets come from ProfileByName. A zero MinDuration, MaxCPS, MinPerWord, MaxExtend,
// CloseGap, PausePrefer or PauseBreak disables that rule.
type Profile struct {
	Name string

	// Hard limits: the segmentation never exceeds them (a single word longer than
	// MaxCharsPerLine is the one exception, and is reported).
	MaxCharsPerLine int           // runes per line, spaces, punctuation, dashes and labels included
	MaxLines        int           // lines per cue
	MaxDuration     time.Duration // display time of a cue
	MinGapFrames    int           // frames between the end of a cue and the start of the next
	FrameRate       float64       // frames per second used for MinGapFrames (ASR has none; 24 by default)

	// Soft rules: the segmentation pays a cost for breaking them, Check reports them.
	MinDuration time.Duration // display time of a cue
	MinPerWord  time.Duration // display time per word (BBC: 0.3 s)
	MaxCPS      float64       // characters per second, counted like Netflix: every visible rune

	// Timing.
	MaxExtend time.Duration // how far a cue may stay on screen after its last word to reach MinDuration/MaxCPS
	CloseGap  time.Duration // gaps up to this long are closed to MinGapFrames by extending the earlier cue

	// Pauses between words.
	PausePrefer time.Duration // a pause this long inside a cue costs: cues should break there
	PauseBreak  time.Duration // a pause this long always ends a cue

	// Speakers: api.Utterance.Speaker, or the channel when no utterance has a speaker and the
	// audio has several channels ("Channel N+1").
	DualSpeaker   bool                     // allow a two-speaker cue, one line each, with the "-" convention
	SpeakerLabels bool                     // prefix "Name: " to the first cue of each speaker turn
	SpeakerName   func(speaker int) string // display name of api.Utterance.Speaker; nil: "Speaker N+1"
}

// Profile names accepted by ProfileByName.
const (
	NetflixAdult = "netflix-adult"
	NetflixKids  = "netflix-kids"
	BBC          = "bbc"
)

// DefaultProfile is netflix-adult (Netflix English (USA) timed-text style guide).
func DefaultProfile() Profile {
	return Profile{
		Name:            NetflixAdult,
		MaxCharsPerLine: 42,
		MaxLines:        2,
		MaxDuration:     7 * time.Second,
		MinGapFrames:    2,
		FrameRate:       24,
		MinDuration:     5 * time.Second / 6, // 20 frames at 24 fps
		MaxCPS:          20,
		MaxExtend:       500 * time.Millisecond, // 12 frames at 24 fps
		CloseGap:        500 * time.Millisecond, // Netflix chaining: gaps up to 12 frames are closed
		PausePrefer:     500 * time.Millisecond,
		PauseBreak:      2 * time.Second, // Netflix's "real pause" (ellipsis threshold)
		DualSpeaker:     true,
	}
}

// ProfileNames lists the presets, default first.
func ProfileNames() []string { return []string{NetflixAdult, NetflixKids, BBC} }

// ProfileByName returns a preset: netflix-adult (also ""), netflix-kids or bbc.
func ProfileByName(name string) (Profile, error) {
	p := DefaultProfile()
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", NetflixAdult:
	case NetflixKids:
		p.Name = NetflixKids
		p.MaxCPS = 17
	case BBC:
		// BBC Subtitle Guidelines: 37 characters (Teletext width), 0.3 s per word, gaps under
		// 1 s closed, 25 fps, and a new subtitle when the speaker changes (dashes are legacy).
		p.Name = BBC
		p.MaxCharsPerLine = 37
		p.MinPerWord = 300 * time.Millisecond
		p.CloseGap = time.Second
		p.FrameRate = 25
		p.DualSpeaker = false
	default:
		return Profile{}, fmt.Errorf("subtitles: unknown profile %q (want one of %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// WithConfig applies a job's subtitles_config (characters per row, rows per caption, minimum
// and maximum duration) over p. Formats and style do not change the rules.
func (p Profile) WithConfig(c *api.SubtitlesConfig) Profile {
	if c == nil {
		return p
	}
	if c.MaximumCharactersPerRow != nil {
		p.MaxCharsPerLine = *c.MaximumCharactersPerRow
	}
	if c.MaximumRowsPerCaption != nil {
		p.MaxLines = *c.MaximumRowsPerCaption
	}
	if c.MinimumDuration != nil {
		p.MinDuration = seconds(*c.MinimumDuration)
	}
	if c.MaximumDuration != nil {
		p.MaxDuration = seconds(*c.MaximumDuration)
	}
	return p
}

// Validate reports the first setting Segment cannot work with.
func (p Profile) Validate() error {
	var errs []error
	if p.MaxCharsPerLine < 1 {
		errs = append(errs, fmt.Errorf("MaxCharsPerLine must be at least 1 (got %d)", p.MaxCharsPerLine))
	}
	if p.MaxLines < 1 {
		errs = append(errs, fmt.Errorf("MaxLines must be at least 1 (got %d)", p.MaxLines))
	}
	if p.MaxDuration < time.Millisecond {
		errs = append(errs, fmt.Errorf("MaxDuration must be at least 1 ms (got %v)", p.MaxDuration))
	}
	if p.MinDuration > p.MaxDuration {
		errs = append(errs, fmt.Errorf("MinDuration %v exceeds MaxDuration %v", p.MinDuration, p.MaxDuration))
	}
	if !(p.FrameRate > 0) || math.IsInf(p.FrameRate, 0) {
		errs = append(errs, fmt.Errorf("FrameRate must be positive (got %v)", p.FrameRate))
	}
	if p.MinGapFrames < 0 {
		errs = append(errs, fmt.Errorf("MinGapFrames must not be negative (got %d)", p.MinGapFrames))
	}
	if math.IsNaN(p.MaxCPS) || math.IsInf(p.MaxCPS, 0) {
		errs = append(errs, fmt.Errorf("MaxCPS must be finite (got %v)", p.MaxCPS))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"MinDuration", p.MinDuration}, {"MinPerWord", p.MinPerWord}, {"MaxExtend", p.MaxExtend},
		{"CloseGap", p.CloseGap}, {"PausePrefer", p.PausePrefer}, {"PauseBreak", p.PauseBreak}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative (got %v)", d.name, d.v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("subtitles: profile %q: %w", p.Name, err)
	}
	return nil
}

// MinGap is the minimum gap between cues: MinGapFrames at FrameRate, rounded up to a
// millisecond so that a gap written in milliseconds is never shorter than the rule.
func (p Profile) MinGap() time.Duration {
	if p.MinGapFrames <= 0 || !(p.FrameRate > 0) {
		return 0
	}
	return ceilMS(time.Duration(float64(p.MinGapFrames) * float64(time.Second) / p.FrameRate))
}

// frame is one frame rounded up to a millisecond, the shortest cue the timing ever makes.
func (p Profile) frame() time.Duration {
	if !(p.FrameRate > 0) {
		return time.Millisecond
	}
	return max(time.Millisecond, ceilMS(time.Duration(float64(time.Second)/p.FrameRate)))
}

// speakerName resolves the display name of a speaker number.
func (p Profile) speakerName(n int) string {
	if p.SpeakerName != nil {
		return p.SpeakerName(n)
	}
	return fmt.Sprintf("Speaker %d", n+1)
}

// seconds converts API seconds to a whole number of milliseconds; NaN and infinities are 0.
func seconds(s float64) time.Duration {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return time.Duration(math.Round(s*1000)) * time.Millisecond
}

// ceilMS rounds d up to a whole millisecond (minimum durations and gaps round up).
func ceilMS(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r > 0 {
		d += time.Millisecond - r
	}
	return d
}

// floorMS rounds d down to a whole millisecond (maximum durations round down).
func floorMS(d time.Duration) time.Duration {
	return d - d%time.Millisecond
}

// roundMS rounds d to the nearest millisecond: astisub floors sub-millisecond times, so
// every time handed to it is already whole.
func roundMS(d time.Duration) time.Duration {
	return d.Round(time.Millisecond)
}

// WithSpeakerNames is p showing names for the speakers they name: VTT voice spans and the
// SSA/ASS Name field carry them, and a label ("Alice Martin: ") starts each speaker turn in
// every format, SpeakerLabels being on, since a player shows neither a voice span nor a Name
// field. A speaker without a name keeps the name p gives it ("Speaker N+1"). A two-speaker cue
// keeps its dashes without labels, and a label longer than half a line is left out (the voice
// span and the Name field still carry it). No names: p unchanged.
func (p Profile) WithSpeakerNames(names api.SpeakerNames) Profile {
	if len(names) == 0 {
		return p
	}
	fallback := p.speakerName
	p.SpeakerName = func(n int) string {
		if name, ok := names[n]; ok {
			return name
		}
		return fallback(n)
	}
	p.SpeakerLabels = true
	return p
}
