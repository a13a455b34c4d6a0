package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// outbox finishes an inbox row's transaction: the subtitle artifacts and their
// subtitles.ready event, then every event queued for each sink whose filter takes it. Queued in
// the same transaction that marks the row done, an event reaches its sinks even if the process
// dies the moment after (the dispatcher finds the deliveries at its next start), and a row
// replayed after a crash queues nothing twice (the queue ignores a known sink and event id).
func (p *Pipeline) outbox(ctx context.Context, tx store.Tx, row store.InboxRow, job api.Job, events *[]api.Event, subs *renderedSubtitles) error {
	if subs != nil {
		if err := checkNames(ctx, tx, job.ID, subs.stored); err != nil {
			return err
		}
		for _, a := range subs.artifacts {
			if err := tx.PutArtifact(ctx, a); err != nil {
				return fmt.Errorf("store artifact %s of job %s: %w", a.Name, a.JobID, err)
			}
		}
		data, err := plainjson.Marshal(subs.event)
		if err != nil {
			return fmt.Errorf("encode subtitles.ready: %w", err)
		}
		*events = append(*events, api.Event{
			ID:             eventID(row.DedupeKey, api.EventSubtitlesReady),
			Type:           api.EventSubtitlesReady,
			CreatedAt:      api.NewTime(row.ReceivedAt),
			JobID:          job.ID,
			Kind:           job.Kind,
			CustomMetadata: job.CustomMetadata,
			Data:           data,
		})
	}
	if len(p.cfg.Sinks) == 0 {
		return nil
	}
	now := p.cfg.Now().UTC()
	// Each attempt at a sink continues the span of this apply (tracing.go).
	traceparent, tracestate := p.traceContext(ctx)
	message, located := row.Message.Of(row.Body)
	var queued []store.SinkDelivery
	for i := range *events {
		ev := &(*events)[i]
		var from int64
		if located && sameSpan(ev.Data, message) {
			// The live message's own event: its data stays in the inbox row (rule 8).
			from = row.ID
		}
		view := sinks.ViewOf(ev) // the event's data decoded once for every sink's when
		for _, spec := range p.cfg.Sinks {
			if !p.takes(ctx, spec, view) {
				continue
			}
			queued = append(queued, store.SinkDelivery{
				Sink: spec.Name, EventID: ev.ID, Event: *ev, OrderKey: ev.JobID,
				NextAttempt: p.firstAttempt(spec, now), CreatedAt: now, DataFrom: from,
				TraceParent: traceparent, TraceState: tracestate,
			})
		}
	}
	if len(queued) == 0 {
		return nil
	}
	if err := tx.EnqueueSinkDeliveries(ctx, queued); err != nil {
		return fmt.Errorf("queue sink deliveries: %w", err)
	}
	return nil
}

// sameSpan reports whether a and b are the same bytes in memory, not only equal ones: an
// event's data that is the row's message itself, not a value that happens to read the same.
func sameSpan(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// wakeSinks tells the dispatcher that committed deliveries wait, so they go out now rather than
// at its next poll.
func (p *Pipeline) wakeSinks(events []api.Event) {
	if p.cfg.Wake == nil {
		return
	}
	views := make([]*sinks.EventView, len(events))
	for i := range events {
		views[i] = sinks.ViewOf(&events[i])
	}
	for _, spec := range p.cfg.Sinks {
		for _, v := range views {
			// The outbox counted and logged a failing when already.
			if ok, _ := spec.Filter.Check(context.Background(), v); ok {
				p.cfg.Wake(spec.Name)
				break
			}
		}
	}
}

// subtitlesFor renders the subtitles of a job that has just succeeded: the service's record when
// it could be read, else the callback's result with the request parameters scribehook recorded
// when it submitted the job (its subtitles_config).
// metadata is the callback's custom_metadata, for a job of which neither has any (the names it
// may give, api.SpeakersMetadataKey).
func (p *Pipeline) subtitlesFor(ctx context.Context, id string, fetched *api.Job, result, metadata json.RawMessage) (*renderedSubtitles, error) {
	if p.cfg.Subtitles.Dir == "" {
		return nil, nil
	}
	job := api.Job{ID: id, Kind: api.KindPreRecorded, Result: result, CustomMetadata: metadata}
	if fetched != nil && fetched.Status == api.StatusDone {
		job = *fetched
	} else if rec, err := p.cfg.Store.GetJob(ctx, id); err == nil {
		job.Kind, job.RequestParams = rec.Job.Kind, rec.Job.RequestParams
		if len(rec.Job.CustomMetadata) > 0 {
			job.CustomMetadata = rec.Job.CustomMetadata
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("read job %s: %w", id, err)
	}
	stored, err := p.storedNames(ctx, id)
	if err != nil {
		return nil, err
	}
	names, err := subtitleNames(&job, stored)
	if err != nil {
		p.logFor(ctx).WithError(err).WithField("job_id", id).Warn("speaker names of custom_metadata left out")
	}
	subs, err := renderSubtitles(p.cfg.Subtitles, &job, names, 1, p.cfg.Now())
	if subs != nil {
		subs.stored = stored
	}
	if err != nil {
		// A result we cannot render is no reason to lose the delivery: the job is stored,
		// without subtitles, and the reason is logged for `scribehook export` to retry.
		p.logFor(ctx).WithError(err).WithField("job_id", id).Error("render subtitles")
		return nil, nil
	}
	return subs, nil
}

// storedNames reads the names stored for a job's speakers, nil when the store keeps none.
func (p *Pipeline) storedNames(ctx context.Context, id string) (api.SpeakerNames, error) {
	n, ok := p.cfg.Store.(store.SpeakerNaming)
	if !ok {
		return nil, nil
	}
	sp, err := n.Speakers(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read speaker names of %s: %w", id, err)
	}
	return sp.Names, nil
}

// errNamesChanged fails an apply whose subtitles were rendered with names that a naming
// replaced meanwhile: the retry renders them with the new ones.
var errNamesChanged = errors.New("speaker names changed while the subtitles were rendered")

// checkNames makes sure the names stored for job id are still those the subtitles were rendered
// with (under the job's lock, taken by the transaction's Job read).
func checkNames(ctx context.Context, tx store.Tx, id string, rendered api.SpeakerNames) error {
	sp, err := tx.Speakers(ctx, id)
	if err != nil {
		return err
	}
	if !sp.Names.Equal(rendered) {
		return fmt.Errorf("job %s: %w", id, errNamesChanged)
	}
	return nil
}

// firstAttempt is when a sink's new delivery is due: its schedule's first wait after now.
func (p *Pipeline) firstAttempt(spec sinks.Spec, now time.Time) time.Time {
	policy, err := sinks.PolicyOf(spec)
	if err != nil {
		return now // the dispatcher refuses such a spec; deliver as soon as it can
	}
	return policy.FirstAttempt(now)
}
