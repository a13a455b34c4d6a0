package scribehook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sinks"
)

// EventHandler is Go code that receives events, with the guarantees of a sink: every event its
// filter takes is queued in the same transaction that applies the delivery causing it (an
// outbox), so it is delivered at least once even if the process dies; Func is retried on
// Retry's schedule when it returns an error, then the event is dead-lettered (visible in
// `scribehook deadletters` and GET /v1/deadletters, replayable). Func must be idempotent: an
// event can come again after a crash, with the same Event.ID.
type EventHandler struct {
	// Name identifies the handler's queue; unique among the handlers and sinks, and kept
	// across restarts (its pending events are delivered after one).
	Name string
	// Filter selects events: globs over types (job.succeeded, "live.*"), live categories, job
	// kinds, a custom_metadata subset, a CEL expression (When, sinkexpr.CompileWhen). Empty
	// fields take everything.
	Filter sinks.Filter
	// Ordered calls Func with one job's or session's events one at a time, in order.
	Ordered bool
	// Retry is the schedule of waits between attempts (default: immediate, 1 s, 5 s, 30 s,
	// 2 min, 10 min); after the last failure the event is dead-lettered.
	Retry []time.Duration
	// Concurrency is how many calls run at once (default 4; 1 when Ordered).
	Concurrency int
	// Timeout bounds one call through its context (default 30 s).
	Timeout time.Duration
	// Func handles one event. A panic counts as an error.
	Func func(ctx context.Context, ev api.Event) error
}

// DefaultHandlerRetry is the retry schedule of event handlers: quicker than a webhook's, since a
// handler in the same process fails for reasons of its own (a database down) rather than a
// remote outage.
var DefaultHandlerRetry = []time.Duration{0, time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// KindGo is the sinks.Spec kind of an event handler (shown in the read API's sink list).
const KindGo = "go"

func (h EventHandler) sink(log *logrus.Entry) (sinks.Spec, sinks.Sink, error) {
	switch {
	case h.Name == "":
		return sinks.Spec{}, nil, errors.New("event handler: Name is required")
	case h.Func == nil:
		return sinks.Spec{}, nil, fmt.Errorf("event handler %s: Func is required", h.Name)
	}
	if err := h.Filter.Validate(); err != nil {
		return sinks.Spec{}, nil, fmt.Errorf("event handler %s: Filter: %w", h.Name, err)
	}
	spec := sinks.Spec{
		Name: h.Name, Kind: KindGo, Filter: h.Filter, Ordered: h.Ordered, Retry: h.Retry,
		Concurrency: h.Concurrency, Timeout: h.Timeout,
	}
	if spec.Retry == nil {
		spec.Retry = DefaultHandlerRetry
	}
	if spec.Timeout == 0 {
		spec.Timeout = 30 * time.Second
	}
	return spec, &funcSink{name: h.Name, fn: h.Func, log: log.WithField("sink", h.Name)}, nil
}

// funcSink delivers events by calling a Go function.
type funcSink struct {
	name string
	fn   func(ctx context.Context, ev api.Event) error
	log  *logrus.Entry
}

func (s *funcSink) Name() string { return s.name }

func (s *funcSink) Deliver(ctx context.Context, ev api.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.WithFields(logrus.Fields{"event_id": ev.ID, "job_id": ev.JobID, "panic": r, "stack": string(debug.Stack())}).
				Error("event handler panicked")
			err = fmt.Errorf("event handler panicked: %v", r)
		}
	}()
	return s.fn(ctx, ev)
}

func (s *funcSink) Close() error { return nil }

// JobSucceeded adapts fn to an EventHandler's Func for job.succeeded events (filter Events:
// []string{api.EventJobSucceeded}): fn gets the finished job's record, with its result.
func JobSucceeded(fn func(ctx context.Context, ev api.Event, job api.Job) error) func(context.Context, api.Event) error {
	return decodedData(fn)
}

// JobFailed adapts fn to an EventHandler's Func for job.failed events (filter Events:
// []string{api.EventJobFailed}): fn gets the failed job's record, status error, with its
// error_code and whatever the service said of the failure.
func JobFailed(fn func(ctx context.Context, ev api.Event, job api.Job) error) func(context.Context, api.Event) error {
	return decodedData(fn)
}

// LiveMessage adapts fn to an EventHandler's Func for live events (filter Events:
// []string{"live.*"}, Categories to narrow them): fn gets the message as the service sent it.
// FinalTranscripts() is the usual filter for the final transcript of each utterance.
func LiveMessage(fn func(ctx context.Context, ev api.Event, msg api.LiveMessage) error) func(context.Context, api.Event) error {
	return decodedData(fn)
}

// FinalTranscripts is the filter of the final transcripts of live sessions.
func FinalTranscripts() sinks.Filter {
	return sinks.Filter{
		Events:     []string{api.LiveEvent(api.MessageTranscript)},
		Categories: []api.MessageCategory{api.CategoryFinalTranscripts},
	}
}

// SubtitlesReady adapts fn to an EventHandler's Func for subtitles.ready events: fn gets the
// rendered files (format, language, name and content) of a job.
func SubtitlesReady(fn func(ctx context.Context, ev api.Event, set sinks.SubtitlesReadyData) error) func(context.Context, api.Event) error {
	return decodedData(fn)
}

// decodedData adapts fn, which takes an event's data decoded as T, to an EventHandler's Func.
// Data that does not decode is an error, which the handler's sink retries and then
// dead-letters as any failed delivery.
func decodedData[T any](fn func(ctx context.Context, ev api.Event, data T) error) func(context.Context, api.Event) error {
	return func(ctx context.Context, ev api.Event) error {
		var data T
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			return fmt.Errorf("decode %s event %s: %w", ev.Type, ev.ID, err)
		}
		return fn(ctx, ev, data)
	}
}
