// Package sinks forwards scribehook's events to other systems: files, signed webhooks, brokers
// and logs. Each configured sink has a filter, and its deliveries go through a durable queue of
// their own (store.SinkQueue, whose store.SinkDelivery is a queued event) worked by the sink's
// own workers, with a retry schedule, a breaker and a dead-letter list, so one dead sink never
// delays another. The package knows nothing of Fiber, and of the store only its sink queue's
// role and types.
//
// Each kind is registered (RegisterKind) with its configuration's rules and its constructor.
// File, webhook and log are built in; the broker kinds are packages of their own that register
// themselves when a program imports them, sinks/redissink and sinks/natssink, so that only
// such a program links a broker's client.
package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

// Sink delivers events to one destination.
type Sink interface {
	// Name is the sink's configured name.
	Name() string
	// Deliver sends one event. An error that is a *Failure says how to go on; any other error
	// is retried on the schedule.
	Deliver(ctx context.Context, ev api.Event) error
	// Close releases connections and files.
	Close() error
}

// Failure is a delivery error that tells the queue what to do next.
type Failure struct {
	Err error
	// RetryAfter is the wait the destination asked for (Retry-After); the queue honours it
	// within its bounds instead of the next scheduled delay.
	RetryAfter time.Duration
	// Permanent failures go to the dead-letter list at once (a body the destination can never
	// accept); retrying them would only repeat the failure.
	Permanent bool
	// Disable stops the sink: the destination said it is gone for good (HTTP 410).
	Disable bool
}

func (f *Failure) Error() string {
	switch {
	case f.Disable:
		return "sink disabled: " + f.Err.Error()
	case f.Permanent:
		return "permanent failure: " + f.Err.Error()
	}
	return f.Err.Error()
}

func (f *Failure) Unwrap() error { return f.Err }

// AsFailure returns err's *Failure, or a plain retryable one.
func AsFailure(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return &Failure{Err: err}
}

// Spec is one sink's configuration, as the configuration file gives it (cmd maps the
// configuration's sink entries to Specs, so this package does not depend on configs).
type Spec struct {
	Name string
	// Kind is a registered kind (RegisterKind): file, webhook and log are built in,
	// redisstream and nats registered by importing sinks/redissink and sinks/natssink.
	Kind string
	// Filter selects the events the sink receives.
	Filter Filter
	// Body, when set, is delivered instead of the event's envelope: its value as JSON, signed
	// as the envelope would be (webhook sinks only; New refuses it for other kinds).
	Body *sinkexpr.Program
	// Headers are added to each webhook request, each the string value of its expression
	// (webhook sinks only); sinkexpr.CheckHeaderName refuses the ones the sink sets itself.
	Headers map[string]*sinkexpr.Program
	// Ordered keeps the events of one job or live session in order: the next waits until the
	// previous is delivered or dead-lettered.
	Ordered bool

	// file
	Dir string
	// webhook: the endpoint; redisstream, nats: the broker
	URL            string
	SigningSecrets []string      // "whsec_<base64>" or raw; several during a rotation
	Timeout        time.Duration // one attempt (default 10 s)
	Allow          []string      // CIDRs allowed despite the private-address guard
	// BrokerURL is the broker of a redisstream or nats sink when URL is empty.
	//
	// Deprecated: set URL, which the broker kinds read first.
	BrokerURL string
	// Topic is the stream or subject of a broker sink (default "scribehook.events"); "{type}"
	// is replaced by the event type.
	Topic string
	// blob (sinks/blobsink): the key prefix of the objects, and whether the raw result is
	// written too; URL is the bucket.
	Prefix string
	Raw    bool
	// Keys are a blob sink's static S3 keys (configs: access_key_env, secret_key_env,
	// session_token_env); zero, the AWS SDK's own sources are used (environment, shared files,
	// web identity, instance metadata), each request of theirs through the sink's guard too.
	Keys StaticKeys

	// Retry is the schedule of waits between attempts (default DefaultSchedule); after the
	// last one a delivery is dead-lettered.
	Retry []time.Duration
	// Jitter spreads each wait by ±Jitter (default 0.2).
	Jitter float64
	// Concurrency is how many deliveries of the sink are in flight at once (default 16; for an
	// Ordered sink at most one per job or session among them).
	Concurrency int
	// Rate bounds the sink's attempts to Rate a second (a token bucket; 0: no limit), across
	// its concurrency and retries included; a batch counts its deliveries. RateBurst is how
	// many may go at once after a quiet spell (default DefaultBurst(Rate): one second's worth).
	// The limit is the dispatcher's: each replica has its own.
	Rate      float64
	RateBurst int
	// BreakerThreshold consecutive failures open the breaker for BreakerCooldown (defaults
	// 5 and 30 s); while open, nothing is attempted, and one probe closes it again.
	BreakerThreshold int
	BreakerCooldown  time.Duration
}

// DefaultSchedule is immediate, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: the common webhook
// schedule, about 28 hours in all.
var DefaultSchedule = []time.Duration{
	0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Filter selects events. Empty fields match everything.
type Filter struct {
	// Events are event types with * globs: "*", "live.*", "job.succeeded", "subtitles.ready".
	Events []string
	// Categories of live events; non-live events pass when Events selects them.
	Categories []api.MessageCategory
	// Kinds of job.
	Kinds []api.JobKind
	// CustomMetadata is a JSON object that must be a subset of the event's custom_metadata.
	CustomMetadata json.RawMessage
	// When, an expression compiled by sinkexpr.CompileWhen, must be true as well; an
	// evaluation that fails (a field the event lacks) does not pass (Check returns its error).
	When *sinkexpr.Program
}

// EventTypes lists every event type a sink can be sent: the job events, subtitles.ready, and
// live.<type> for each live message type (the sixteen documented ones and the top-level
// error). A Filter's Events must each match at least one of them.
func EventTypes() []string { return api.EventTypes() }

// Validate reports a filter that can never work: an unknown category or kind, an event pattern
// that matches no event type (EventTypes), custom_metadata that is not a JSON object.
func (f Filter) Validate() error {
	for _, c := range f.Categories {
		if !c.Valid() {
			return fmt.Errorf("categories: %q is not one of the nine", c)
		}
	}
	for _, k := range f.Kinds {
		if !k.Valid() {
			return fmt.Errorf("kinds: %q is not pre-recorded or live", k)
		}
	}
	for i, e := range f.Events {
		if e == "" {
			return errors.New("events: an empty pattern matches nothing")
		}
		// A misspelt type ("job.succeded") would be taken and match nothing, ever: the sink or
		// handler would wait for events that never come.
		if !api.KnownEventPattern(e) {
			return fmt.Errorf("events[%d]: %q is not an event type nor a glob matching one (%s)", i, e, api.EventTypeRule)
		}
	}
	if len(f.CustomMetadata) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(f.CustomMetadata, &obj); err != nil || obj == nil {
			return fmt.Errorf("custom_metadata: must be a JSON object (got %s)", f.CustomMetadata)
		}
	}
	return nil
}

// Match reports whether ev passes the filter, When included (an evaluation error does not
// pass). Where several filters look at one event, Check with a shared EventView decodes its
// data once.
func (f Filter) Match(ev *api.Event) bool {
	if f.When == nil {
		return f.matchStatic(ev)
	}
	ok, _ := f.Check(context.Background(), ViewOf(ev))
	return ok
}

// matchStatic is Match without When.
func (f Filter) matchStatic(ev *api.Event) bool {
	if len(f.Events) > 0 && !slices.ContainsFunc(f.Events, func(pattern string) bool { return api.MatchEventType(pattern, ev.Type) }) {
		return false
	}
	// An event without a category (not a live message) is not narrowed by Categories.
	if len(f.Categories) > 0 && ev.Category != "" && !slices.Contains(f.Categories, ev.Category) {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, ev.Kind) {
		return false
	}
	if len(f.CustomMetadata) > 0 {
		q := api.ListQuery{CustomMetadata: f.CustomMetadata}
		if !q.Matches(&api.Job{CustomMetadata: ev.CustomMetadata}) {
			return false
		}
	}
	return true
}

// StaticKeys are an access key pair (and an optional session token) for object storage. They
// print as which of them are set, so that a Spec logged or printed never shows a key.
type StaticKeys struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// IsZero says no key was given.
func (k StaticKeys) IsZero() bool { return k == StaticKeys{} }

// String says which keys are set.
func (k StaticKeys) String() string {
	set := func(v string) string {
		if v == "" {
			return "unset"
		}
		return "set"
	}
	return "access_key:" + set(k.AccessKeyID) + ",secret_key:" + set(k.SecretAccessKey) + ",session_token:" + set(k.SessionToken)
}

// GoString keeps %#v from printing the fields.
func (k StaticKeys) GoString() string { return "sinks.StaticKeys{" + k.String() + "}" }
