package handlers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/plainjson"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
)

// NamingStore is what naming speakers needs of the store: the job, its artifacts (whether its
// subtitles were rendered), and the names themselves.
type NamingStore interface {
	GetJob(ctx context.Context, id string) (store.JobRecord, error)
	Artifacts(ctx context.Context, jobID string) ([]store.Artifact, error)
	store.SpeakerNaming
}

// NamerConfig is what a Namer renders with and queues to: the pipeline's own settings.
type NamerConfig struct {
	Store     NamingStore
	Subtitles SubtitleRendering
	// Sinks are the sinks the subtitles.ready event is queued for, by their filters.
	Sinks []sinks.Spec
	// Wake, when set, is told of each sink given a delivery, after the commit.
	Wake func(sink string)
	// Now stamps the artifacts, the event and the names; time.Now when nil.
	Now    func() time.Time
	Logger logrus.FieldLogger
}

// Namer stores the names of a job's speakers and renders its subtitles again with them
// (PUT /v1/jobs/{id}/speakers, scribehook speakers set).
type Namer struct {
	cfg NamerConfig
	log logrus.FieldLogger
}

// NewNamer makes a Namer of cfg.
func NewNamer(cfg NamerConfig) (*Namer, error) {
	if cfg.Store == nil {
		return nil, errors.New("namer: no store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Namer{cfg: cfg, log: logx.OrDiscard(cfg.Logger)}, nil
}

// Namer is a Namer with the pipeline's store, rendering, sinks and clock, or an error when its
// store keeps no names.
func (p *Pipeline) Namer() (*Namer, error) {
	st, ok := p.cfg.Store.(NamingStore)
	if !ok {
		return nil, fmt.Errorf("namer: the store (%T) keeps no speaker names", p.cfg.Store)
	}
	return NewNamer(NamerConfig{Store: st, Subtitles: p.cfg.Subtitles, Sinks: p.cfg.Sinks, Wake: p.cfg.Wake, Now: p.cfg.Now, Logger: p.log})
}

// SpeakersResult is what naming a job's speakers did.
type SpeakersResult struct {
	JobID string           `json:"job_id"`
	Names api.SpeakerNames `json:"names"`
	// Revision is the revision of the job's subtitles now (0: none rendered yet).
	Revision int64 `json:"revision"`
	// Changed is false when the job's speakers already had exactly these names: nothing was
	// stored, rendered or queued (the same naming twice emits once).
	Changed bool `json:"changed"`
	// EventID is the id of the subtitles.ready event of the new revision; empty when nothing
	// was rendered (no subtitles configured, no result yet, or nothing changed).
	EventID string `json:"event_id,omitempty"`
	// Files are the names of the files rendered again.
	Files []string `json:"files,omitempty"`
}

// maxNamingAttempts bounds the retries of a naming that lost a race with another.
const maxNamingAttempts = 5

// ErrNamesInvalid wraps the validation errors of names (api.ValidationErrors).
var ErrNamesInvalid = errors.New("invalid speaker names")

// SetSpeakers stores names as the job's speakers' (replacing earlier ones; empty names clear
// them) and, when the job has a result and subtitles are configured, renders its subtitles
// again with them as the next revision, in the transaction that stores the names: the
// artifacts and the subtitles.ready event (its id derived from the job and the revision) are
// committed with them, for each sink whose filter takes it. Names equal to the stored ones
// change nothing. An unknown job is store.ErrNotFound.
func (n *Namer) SetSpeakers(ctx context.Context, jobID string, names api.SpeakerNames) (SpeakersResult, error) {
	if err := names.Validate(); err != nil {
		return SpeakersResult{}, fmt.Errorf("%w: %w", ErrNamesInvalid, err)
	}
	if names == nil {
		names = api.SpeakerNames{}
	}
	for attempt := 1; ; attempt++ {
		res, queued, err := n.attempt(ctx, jobID, names)
		if errors.Is(err, store.ErrRevisionConflict) && attempt < maxNamingAttempts {
			continue
		}
		if err != nil {
			return SpeakersResult{}, fmt.Errorf("name the speakers of job %s: %w", jobID, err)
		}
		n.wake(queued)
		if res.Changed {
			n.log.WithFields(logrus.Fields{"job_id": jobID, "revision": res.Revision, "speakers": len(names)}).Info("speakers named")
		}
		return res, nil
	}
}

// attempt is one try of SetSpeakers from the state it reads; ErrRevisionConflict when another
// naming committed between the read and the write.
func (n *Namer) attempt(ctx context.Context, jobID string, names api.SpeakerNames) (SpeakersResult, []store.SinkDelivery, error) {
	rec, err := n.cfg.Store.GetJob(ctx, jobID)
	if err != nil {
		return SpeakersResult{}, nil, err
	}
	cur, err := n.cfg.Store.Speakers(ctx, jobID)
	if err != nil {
		return SpeakersResult{}, nil, err
	}
	arts, err := n.cfg.Store.Artifacts(ctx, jobID)
	if err != nil {
		return SpeakersResult{}, nil, err
	}
	revision := cur.Revision
	if revision == 0 && len(arts) > 0 {
		revision = 1 // the pipeline's rendering of the result
	}
	res := SpeakersResult{JobID: jobID, Names: names, Revision: revision}
	if cur.Names.Equal(names) {
		return res, nil, nil
	}
	res.Changed = true
	now := n.cfg.Now().UTC()
	subs, err := n.render(&rec.Job, names, revision+1, now)
	if err != nil {
		return SpeakersResult{}, nil, err
	}
	var queued []store.SinkDelivery
	if subs != nil {
		res.Revision++
		ev, err := readyEvent(rec.Job, subs, res.Revision, now)
		if err != nil {
			return SpeakersResult{}, nil, err
		}
		res.EventID = ev.ID
		for _, f := range subs.event.Files {
			res.Files = append(res.Files, f.Name)
		}
		queued = n.deliveries(ctx, ev, now)
	}
	err = n.cfg.Store.SetSpeakers(ctx, store.Speakers{JobID: jobID, Names: names, Revision: res.Revision, UpdatedAt: now}, cur.Revision,
		func(ctx context.Context, tx store.Tx) error {
			if subs == nil {
				return nil
			}
			for _, a := range subs.artifacts {
				if err := tx.PutArtifact(ctx, a); err != nil {
					return fmt.Errorf("store artifact %s: %w", a.Name, err)
				}
			}
			if len(queued) == 0 {
				return nil
			}
			return tx.EnqueueSinkDeliveries(ctx, queued)
		})
	if err != nil {
		return SpeakersResult{}, nil, err
	}
	return res, queued, nil
}

// render renders job's subtitles with names (over those of its custom_metadata), or nil when
// there is nothing to render: no subtitles configured, or no finished result.
func (n *Namer) render(job *api.Job, names api.SpeakerNames, revision int64, now time.Time) (*renderedSubtitles, error) {
	if n.cfg.Subtitles.Dir == "" || job.Status != api.StatusDone || len(job.Result) == 0 {
		return nil, nil
	}
	all, err := subtitleNames(job, names)
	if err != nil {
		n.log.WithError(err).WithField("job_id", job.ID).Warn("speaker names of custom_metadata left out")
	}
	return renderSubtitles(n.cfg.Subtitles, job, all, revision, now)
}

// readyEvent is the subtitles.ready event of a naming's rendering: its id is derived from the
// job and the revision, so that a revision is one event whatever retries it took.
func readyEvent(job api.Job, subs *renderedSubtitles, revision int64, now time.Time) (api.Event, error) {
	data, err := plainjson.Marshal(subs.event)
	if err != nil {
		return api.Event{}, fmt.Errorf("encode subtitles.ready: %w", err)
	}
	return api.Event{
		ID:             eventID("speakers:"+job.ID+":"+strconv.FormatInt(revision, 10), api.EventSubtitlesReady),
		Type:           api.EventSubtitlesReady,
		CreatedAt:      api.NewTime(now),
		JobID:          job.ID,
		Kind:           job.Kind,
		CustomMetadata: job.CustomMetadata,
		Data:           data,
	}, nil
}

// deliveries are ev's deliveries to the sinks whose filter takes it. A when that fails over
// the event does not take it (logged).
func (n *Namer) deliveries(ctx context.Context, ev api.Event, now time.Time) []store.SinkDelivery {
	view := sinks.ViewOf(&ev)
	var out []store.SinkDelivery
	for _, spec := range n.cfg.Sinks {
		ok, err := spec.Filter.Check(ctx, view)
		if err != nil {
			n.log.WithError(err).WithFields(logrus.Fields{"sink": spec.Name, "event_id": ev.ID}).Warn("the sink's when failed over subtitles.ready")
		}
		if !ok {
			continue
		}
		next := now
		if policy, err := sinks.PolicyOf(spec); err == nil {
			next = policy.FirstAttempt(now)
		}
		out = append(out, store.SinkDelivery{Sink: spec.Name, EventID: ev.ID, Event: ev, OrderKey: ev.JobID, NextAttempt: next, CreatedAt: now})
	}
	return out
}

func (n *Namer) wake(queued []store.SinkDelivery) {
	if n.cfg.Wake == nil {
		return
	}
	for _, d := range queued {
		n.cfg.Wake(d.Sink)
	}
}
