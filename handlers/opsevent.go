package handlers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/sinks"
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
	view := sinks.ViewOf(&ev)
	for _, spec := range p.cfg.Sinks {
		if slices.Contains(skip, spec.Name) || !p.takes(ctx, spec, view) {
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

// emitInboxFailed queues inbox.failed for a row that has just failed for good, after its failure
// was recorded: a crash in between loses the event, not the row, which the failed list and the
// scribehook_inbox_failed gauge still show. Each failure is its own event (a row replayed and
// failing again is announced again).
func (p *Pipeline) emitInboxFailed(ctx context.Context, row store.InboxRow, attempts int, cause error) {
	now := p.cfg.Now()
	data := api.InboxFailedData{InboxID: row.ID, JobID: row.JobID, Kind: row.Kind, Event: row.Event, Attempts: attempts, Error: cause.Error()}
	key := "inbox-failed:" + strconv.FormatInt(row.ID, 10) + ":" + strconv.FormatInt(now.UnixNano(), 10)
	ev, err := OperationalEvent(api.EventInboxFailed, key, row.JobID, kindOfRow(row), data, now)
	if err == nil {
		err = p.Emit(context.WithoutCancel(ctx), ev)
	}
	if err != nil {
		p.log.WithError(err).WithField("inbox_id", row.ID).Warn("queue inbox.failed")
	}
}

// kindOfRow is the job kind a row is about (empty when unknown).
func kindOfRow(row store.InboxRow) api.JobKind {
	switch {
	case row.Kind == api.CallbackLiveMessage || strings.HasPrefix(row.Event, "live."):
		return api.KindLive
	case row.Kind == "":
		return ""
	}
	return api.KindPreRecorded
}
