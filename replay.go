package scribehook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// ErrUnknownSink is a replay or a history asked of a sink that is neither configured nor
// registered; the error's text lists the names there are.
var ErrUnknownSink = errors.New("unknown sink")

// ReplayWindow selects the events a replay queues again: those first queued (for any sink)
// at or after Since and before Until (zero: no end), of a type one of Types matches (event
// type globs as in a sink's filter; none: every type).
type ReplayWindow struct {
	Since, Until time.Time
	Types        []string
	// DryRun reports what the replay would queue and queues nothing.
	DryRun bool
}

// ReplayReport is what a replay queued, by event id, in queue order.
type ReplayReport struct {
	Sink string `json:"sink"`
	// Requeued were delivered or dead and are queued again, under their original ids.
	Requeued []string `json:"requeued"`
	// Backfilled had never been queued for the sink (added later) and its filter takes them.
	Backfilled []string `json:"backfilled"`
	// AlreadyQueued were waiting for the sink (or in an attempt) and are left as they were.
	AlreadyQueued []string `json:"already_queued"`
	// Skipped counts the window's events the types or the sink's filter left out.
	Skipped int  `json:"skipped"`
	DryRun  bool `json:"dry_run,omitempty"`
}

// Queued is how many deliveries the replay queued (or would have, in a dry run).
func (r ReplayReport) Queued() int { return len(r.Requeued) + len(r.Backfilled) }

// Check validates the window: Since is required, Until after it, each type pattern matches a
// known event type.
func (w ReplayWindow) Check() error {
	if w.Since.IsZero() {
		return errors.New("since: required")
	}
	if !w.Until.IsZero() && !w.Until.After(w.Since) {
		return errors.New("until: must be after since")
	}
	for i, p := range w.Types {
		if !slices.ContainsFunc(api.EventTypes(), func(typ string) bool { return api.MatchEventType(p, typ) }) {
			return fmt.Errorf("type[%d]: matches no event type (see docs/design.md, events)", i)
		}
	}
	return nil
}

// ReplaySink queues the window's events for the sink named sink, one of specs: again, under
// their original event ids, where the sink had them (delivered or dead; a queued one stays as
// it is), and for the first time where it never had them and its filter takes them (a
// backfill of a sink added later, within what retention kept). now is when they are due. It
// does not wake a dispatcher: Records.ReplaySink does, and a serve running on the store
// finds them at its next poll. st must implement store.SinkReplay (both drivers do).
func ReplaySink(ctx context.Context, st store.Store, specs []sinks.Spec, sink string, w ReplayWindow, now time.Time) (ReplayReport, error) {
	rep := ReplayReport{Sink: sink, DryRun: w.DryRun}
	spec, err := findSpec(specs, sink)
	if err != nil {
		return rep, err
	}
	if err := w.Check(); err != nil {
		return rep, fmt.Errorf("replay sink %s: %w", sink, err)
	}
	rs, ok := st.(store.SinkReplay)
	if !ok {
		return rep, fmt.Errorf("replay sink %s: the store (%T) cannot replay a window", sink, st)
	}
	req := store.SinkReplayRequest{
		Sink: sink, Since: w.Since, Until: w.Until, Now: now, DryRun: w.DryRun,
		Backfill: func(ev *api.Event) bool { return spec.Filter.Match(ev) },
	}
	if len(w.Types) > 0 {
		req.Match = func(ev *api.Event) bool {
			return slices.ContainsFunc(w.Types, func(p string) bool { return api.MatchEventType(p, ev.Type) })
		}
	}
	res, err := rs.ReplaySink(ctx, req)
	if err != nil {
		return rep, fmt.Errorf("replay sink %s: %w", sink, err)
	}
	rep.Requeued, rep.Backfilled, rep.AlreadyQueued, rep.Skipped = res.Requeued, res.Backfilled, res.AlreadyQueued, res.Skipped
	return rep, nil
}

// SinkHistory lists a sink's deliveries newest first, without their events' data (see
// store.SinkHistoryQuery); st must implement store.SinkReplay.
func SinkHistory(ctx context.Context, st store.Store, q store.SinkHistoryQuery) ([]store.SinkHistoryItem, error) {
	rs, ok := st.(store.SinkReplay)
	if !ok {
		return nil, fmt.Errorf("sink history of %s: the store (%T) keeps none", q.Sink, st)
	}
	return rs.SinkHistory(ctx, q)
}

// ConfiguredSinkSpecs are the sinks cfg configures, as the kit builds them (without their
// secrets): what a command working on the store beside a running serve knows of them.
func ConfiguredSinkSpecs(cfg configs.Config) []sinks.Spec { return SinkSpecs(cfg, configs.Secrets{}) }

func findSpec(specs []sinks.Spec, name string) (sinks.Spec, error) {
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return sinks.Spec{}, fmt.Errorf("%w %q: no sink is configured", ErrUnknownSink, name)
	}
	return sinks.Spec{}, fmt.Errorf("%w %q: the sinks are %s", ErrUnknownSink, name, strings.Join(names, ", "))
}

// sinkSpecs are the kit's configured sinks and its program's own sinks and handlers.
func (k *Kit) sinkSpecs() []sinks.Spec {
	return append(SinkSpecs(k.cfg, k.secrets), k.registered...)
}

// SinkNames lists the kit's sinks and event handlers, configured first.
func (r *Records) SinkNames() []string {
	var out []string
	for _, s := range r.k.sinkSpecs() {
		out = append(out, s.Name)
	}
	return out
}

// ReplaySink queues the window's events for one of the kit's sinks, due now, and wakes it:
// delivered and dead ones again under their original event ids (receivers dedupe on
// webhook-id), and, for a sink added later, the stored events its filter takes (a backfill).
// A delivery already queued is not queued twice; a replay twice queues again what the first
// one's attempts delivered meanwhile. An unknown sink is ErrUnknownSink.
func (r *Records) ReplaySink(ctx context.Context, sink string, w ReplayWindow) (ReplayReport, error) {
	rep, err := ReplaySink(ctx, r.k.store, r.k.sinkSpecs(), sink, w, r.k.now())
	if err != nil {
		return rep, err
	}
	if !w.DryRun && rep.Queued() > 0 {
		r.k.dispatch.Wake(sink)
	}
	return rep, nil
}

// SinkHistory lists one of the kit's sinks' deliveries newest first, without their events'
// data. An unknown sink is ErrUnknownSink.
func (r *Records) SinkHistory(ctx context.Context, q store.SinkHistoryQuery) ([]store.SinkHistoryItem, error) {
	if _, err := findSpec(r.k.sinkSpecs(), q.Sink); err != nil {
		return nil, err
	}
	return SinkHistory(ctx, r.k.store, q)
}

// replaySinkFor is Records.ReplaySink in the receiver's terms (POST /v1/sinks/:name/replay).
func (k *Kit) replaySinkFor(ctx context.Context, sink string, w receiver.SinkReplayWindow) (store.SinkReplayResult, error) {
	rep, err := k.Records().ReplaySink(ctx, sink, ReplayWindow{Since: w.Since, Until: w.Until, Types: w.Types, DryRun: w.DryRun})
	return store.SinkReplayResult{Requeued: rep.Requeued, Backfilled: rep.Backfilled, AlreadyQueued: rep.AlreadyQueued, Skipped: rep.Skipped}, err
}
