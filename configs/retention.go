package configs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
)

// Keep is how long rows of one kind are kept before the pruner deletes them; 0 keeps them for
// ever. In the file and the environment it is written as a Go duration (36h, 90m), a number of
// days (7d), or forever (or 0).
type Keep time.Duration

// Forever is the Keep of a kind that is never pruned.
const Forever Keep = 0

const day = 24 * time.Hour

// Days is n days.
func Days(n int) Keep { return Keep(time.Duration(n) * day) }

// ParseKeep reads forever, 0, a number of days (7d) or a Go duration (36h).
func ParseKeep(s string) (Keep, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "forever") {
		return Forever, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, fmt.Errorf("invalid number of days %q", s)
		}
		return Days(days), nil
	}
	d, err := time.ParseDuration(s)
	return Keep(d), err
}

// String writes k as ParseKeep reads it: forever, whole days as 7d, else a Go duration.
func (k Keep) String() string {
	d := time.Duration(k)
	switch {
	case d == 0:
		return "forever"
	case d > 0 && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return durText(d)
}

// durText is d as Go writes it without its zero tails: 36h rather than 36h0m0s.
func durText(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// MarshalYAML writes k as it is read, so that Config.String shows 7d rather than nanoseconds.
func (k Keep) MarshalYAML() (any, error) { return k.String(), nil }

// RetentionConfig says how long serve keeps what it stores, kind by kind, and how often it
// prunes (docs/operations.md, Retention). Rows still at work are never pruned, whatever the
// durations: inbox rows not yet processed, sink deliveries not yet delivered, jobs not final,
// messages of live sessions not ended.
type RetentionConfig struct {
	// Interval is how often serve prunes, the first time a minute after it starts (default
	// 1h); 0 turns the background pruner off (scribehook prune still prunes).
	Interval time.Duration `yaml:"interval"`
	// BatchSize is the most rows one transaction deletes (default 500): each batch holds
	// SQLite's write lock only for the milliseconds its deletes take.
	BatchSize int `yaml:"batch_size"`
	// Inbox keeps processed inbox rows (the raw deliveries, already applied) from when they were
	// processed (default 7d, at least 24h: a redelivery of a pruned row is stored again).
	Inbox Keep `yaml:"inbox"`
	// Live keeps the messages of ended live sessions, by category, from when they were received.
	Live LiveRetention `yaml:"live"`
	// Jobs keeps finished jobs, their artifacts (the subtitle files too) and what is left of a
	// live session's messages, from when they completed (default forever). When it is not
	// forever, no category of Live may be kept longer, and it must be at least
	// receiver.token_ttl: a job completes after its callback token was minted, so its record
	// then outlasts every delivery the token authenticates (the pruner deletes tokens token_ttl
	// after they were minted).
	Jobs Keep `yaml:"jobs"`
	// SinkDelivered keeps delivered sink deliveries, from their delivery (default 7d).
	SinkDelivered Keep `yaml:"sink_delivered"`
	// DeadLetters keeps dead sink deliveries from when they died, and inbox rows that failed
	// for good from when they were received (default 30d).
	DeadLetters Keep `yaml:"dead_letters"`
	// Quarantine keeps deliveries that could not be classified, from their receipt (default
	// 30d).
	Quarantine Keep `yaml:"quarantine"`
}

// LiveRetention keeps live messages per category (api.Categories). Partials and
// acknowledgments are many and worth little once the session has ended; final transcripts are
// the session's result.
type LiveRetention struct {
	PartialTranscripts       Keep `yaml:"partial_transcripts"`        // default 2d
	FinalTranscripts         Keep `yaml:"final_transcripts"`          // default forever
	SpeechEvents             Keep `yaml:"speech_events"`              // default 30d
	PreProcessingEvents      Keep `yaml:"pre_processing_events"`      // default 30d
	RealtimeProcessingEvents Keep `yaml:"realtime_processing_events"` // default 30d
	PostProcessingEvents     Keep `yaml:"post_processing_events"`     // default 30d
	Acknowledgments          Keep `yaml:"acknowledgments"`            // default 2d
	Errors                   Keep `yaml:"errors"`                     // default 30d
	LifecycleEvents          Keep `yaml:"lifecycle_events"`           // default 30d
}

// Defaults of the retention section.
const (
	DefaultRetentionInterval = time.Hour
	DefaultRetentionBatch    = 500
)

// DefaultRetention is the retention section of Default.
func DefaultRetention() RetentionConfig {
	return RetentionConfig{
		Interval: DefaultRetentionInterval, BatchSize: DefaultRetentionBatch,
		Inbox: Days(7), Jobs: Forever, SinkDelivered: Days(7), DeadLetters: Days(30), Quarantine: Days(30),
		Live: LiveRetention{
			PartialTranscripts: Days(2), FinalTranscripts: Forever, SpeechEvents: Days(30),
			PreProcessingEvents: Days(30), RealtimeProcessingEvents: Days(30), PostProcessingEvents: Days(30),
			Acknowledgments: Days(2), Errors: Days(30), LifecycleEvents: Days(30),
		},
	}
}

// ByCategory gives the duration of each of the nine categories.
func (l LiveRetention) ByCategory() map[api.MessageCategory]Keep {
	return map[api.MessageCategory]Keep{
		api.CategoryPartialTranscripts:       l.PartialTranscripts,
		api.CategoryFinalTranscripts:         l.FinalTranscripts,
		api.CategorySpeechEvents:             l.SpeechEvents,
		api.CategoryPreProcessingEvents:      l.PreProcessingEvents,
		api.CategoryRealtimeProcessingEvents: l.RealtimeProcessingEvents,
		api.CategoryPostProcessingEvents:     l.PostProcessingEvents,
		api.CategoryAcknowledgments:          l.Acknowledgments,
		api.CategoryErrors:                   l.Errors,
		api.CategoryLifecycleEvents:          l.LifecycleEvents,
	}
}

// Bounds of the retention keys.
const (
	minKeep              = time.Hour
	minInboxKeep         = day
	minRetentionInterval = time.Minute
	maxRetentionBatch    = 100_000
)

// retention checks the retention section; tokenTTL is receiver.token_ttl, which finished jobs
// must outlast.
func (v *validator) retention(r RetentionConfig, tokenTTL time.Duration) {
	if r.Interval != 0 && r.Interval < minRetentionInterval {
		v.add("retention.interval", "must be at least %s, or 0 to turn the background pruner off (got %s)",
			durText(minRetentionInterval), durText(r.Interval))
	}
	if r.BatchSize < 1 || r.BatchSize > maxRetentionBatch {
		v.add("retention.batch_size", "must be between 1 and %d (got %d)", maxRetentionBatch, r.BatchSize)
	}
	v.keep("retention.inbox", r.Inbox, minInboxKeep,
		": a redelivery of a pruned row is stored and applied again, so rows must outlast the service's retries")
	by := r.Live.ByCategory()
	for _, c := range api.Categories {
		v.keep("retention.live."+string(c), by[c], minKeep, "")
	}
	v.keep("retention.jobs", r.Jobs, minKeep, "")
	v.keep("retention.sink_delivered", r.SinkDelivered, minKeep, "")
	v.keep("retention.dead_letters", r.DeadLetters, minKeep, "")
	v.keep("retention.quarantine", r.Quarantine, minKeep, "")
	if r.Jobs <= 0 {
		return
	}
	if time.Duration(r.Jobs) >= minKeep && time.Duration(r.Jobs) < tokenTTL {
		v.add("retention.jobs", "must be at least receiver.token_ttl (%s), or forever: a late delivery its callback token still authenticates would create a pruned job's record again and send its events again (got %s)",
			Keep(tokenTTL), r.Jobs)
	}
	for _, c := range api.Categories {
		if k := by[c]; k == Forever || k > r.Jobs {
			v.add("retention.live."+string(c), "must not be longer than retention.jobs (%s): a session's messages go with its record (got %s)", r.Jobs, k)
		}
	}
}

// keep checks a duration: forever, or at least least.
func (v *validator) keep(key string, k Keep, least time.Duration, why string) {
	switch {
	case k < 0:
		v.add(key, "must not be negative (got %s)", durText(time.Duration(k)))
	case k != Forever && time.Duration(k) < least:
		v.add(key, "must be at least %s, or forever (got %s)%s", Keep(least), k, why)
	}
}
