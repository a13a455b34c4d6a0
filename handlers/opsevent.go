package handlers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/store"
)

// OperationalEvent builds an event that no inbox row causes (job.overdue, sink.disabled…), of
// type typ about jobID (empty for a sink's event), with data encoded. key names the occurrence:
// the same key and type give the same event id, so that an event emitted again (after a crash,
// or by another replica that saw the same thing) is one event for the sinks.
func OperationalEvent(typ, key, jobID string, kind api.JobKind, data any, at time.Time) (api.Event, error) {
	b, err := plainjson.Marshal(data)
	if err != nil {
		return api.Event{}, fmt.Errorf("encode %s: %w", typ, err)
	}
	return api.Event{
		ID: eventID("ops:"+key, typ), Type: typ, CreatedAt: api.NewTime(at.UTC()),
		JobID: jobID, Kind: kind, Data: b,
	}, nil
}

// Emit queues ev for every sink whose filter takes it but those named in skip (a sink is not
// told of its own disabling), outside any inbox row, and wakes them. The queue ignores a sink and
// event id pair already queued, delivered or dead: emitting an event twice sends it once.
func (p *Pipeline) Emit(ctx context.Context, ev api.Event, skip ...string) error {
	now := p.cfg.Now().UTC()
	var queued []store.SinkDelivery
	for _, spec := range p.cfg.Sinks {
		if slices.Contains(skip, spec.Name) || !spec.Filter.Match(&ev) {
			continue
		}
		queued = append(queued, store.SinkDelivery{
			Sink: spec.Name, EventID: ev.ID, Event: ev, OrderKey: ev.JobID,
			NextAttempt: p.firstAttempt(spec, now), CreatedAt: now,
		})
	}
	p.m.opsEvents.WithLabelValues(ev.Type).Inc()
	if len(queued) == 0 {
		return nil
	}
	if err := p.cfg.Store.EnqueueSinkDeliveries(ctx, queued); err != nil {
		return fmt.Errorf("queue %s: %w", ev.Type, err)
	}
	for _, d := range queued {
		if p.cfg.Wake != nil {
			p.cfg.Wake(d.Sink)
		}
	}
	return nil
}
