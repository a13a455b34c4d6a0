package scribehook

import (
	"context"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
)

// SpeakersResult is what naming a job's speakers did: the names now stored, the revision of
// its subtitles, and, when they were rendered again, the subtitles.ready event's id and files.
// Changed is false when the names were already those (nothing stored, rendered or queued).
type SpeakersResult = handlers.SpeakersResult

// ErrNamesInvalid is SetSpeakers' error for names that break a rule; it wraps the
// api.ValidationErrors that name each speaker and rule.
var ErrNamesInvalid = handlers.ErrNamesInvalid

// SetSpeakers names the diarized speakers of a job or live session (speaker numbers as
// api.Utterance.Speaker gives them: 0, 1, …), replacing the names stored before; empty names
// clear them. When the job has a result and the kit renders subtitles, they are rendered again
// with the names (WebVTT voice spans, the SSA/ASS Name field, a label at each turn in every
// format) and a subtitles.ready event of the next revision is queued, in the transaction that
// stores the names, for the sinks whose filters take it, which are woken. Names stored before
// the result arrives are used when it is applied. The same names again change nothing. An
// unknown job is store.ErrNotFound; names that break a rule (api.SpeakerNames.Validate) are
// ErrNamesInvalid.
func (k *Kit) SetSpeakers(ctx context.Context, jobID string, names api.SpeakerNames) (SpeakersResult, error) {
	n, err := k.pipeline.Namer()
	if err != nil {
		return SpeakersResult{}, err
	}
	return n.SetSpeakers(ctx, jobID, names)
}

// SetSpeakers is Kit.SetSpeakers for a program working on the store beside a running serve
// (scribehook speakers set): subtitles rendered as cfg says, the event queued for the sinks cfg
// configures, which a running serve delivers at its next poll; now stamps them. st must
// implement store.SpeakerNaming (both drivers do).
func SetSpeakers(ctx context.Context, st store.Store, cfg configs.Config, jobID string, names api.SpeakerNames, now time.Time) (SpeakersResult, error) {
	ns, ok := st.(handlers.NamingStore)
	if !ok {
		return SpeakersResult{}, fmt.Errorf("name the speakers of job %s: the store (%T) keeps no speaker names", jobID, st)
	}
	subs, err := SubtitleRendering(cfg)
	if err != nil {
		return SpeakersResult{}, err
	}
	n, err := handlers.NewNamer(handlers.NamerConfig{Store: ns, Subtitles: subs, Sinks: ConfiguredSinkSpecs(cfg), Now: func() time.Time { return now }})
	if err != nil {
		return SpeakersResult{}, err
	}
	return n.SetSpeakers(ctx, jobID, names)
}

// Speakers reads the names stored for a job's speakers and the revision of the subtitles
// rendered with them; a job without names gives none (no error). Names given in the job's
// custom_metadata (api.SpeakersMetadataKey) are not among them: they are the job's own.
func (r *Records) Speakers(ctx context.Context, jobID string) (store.Speakers, error) {
	n, ok := r.k.store.(store.SpeakerNaming)
	if !ok {
		return store.Speakers{JobID: jobID}, nil
	}
	return n.Speakers(ctx, jobID)
}

// setSpeakersFor is Kit.SetSpeakers in the receiver's terms (PUT /v1/jobs/:id/speakers).
func (k *Kit) setSpeakersFor(ctx context.Context, jobID string, names api.SpeakerNames) (receiver.SpeakersView, error) {
	res, err := k.SetSpeakers(ctx, jobID, names)
	return receiver.SpeakersView{JobID: res.JobID, Names: res.Names, Revision: res.Revision, Changed: res.Changed,
		EventID: res.EventID, Files: res.Files}, err
}
