package receiver

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// SpeakersView is the answer of PUT /v1/jobs/:id/speakers: the names stored, the revision of
// the job's subtitles, and, when the naming rendered them again, the subtitles.ready event's
// id and the files. Changed is false when the names were already those.
type SpeakersView struct {
	JobID    string           `json:"job_id"`
	Names    api.SpeakerNames `json:"names"`
	Revision int64            `json:"revision"`
	Changed  bool             `json:"changed"`
	EventID  string           `json:"event_id,omitempty"`
	Files    []string         `json:"files,omitempty"`
}

// speakersOf reads the names stored for a job, none when the store keeps no names.
func (r *Receiver) speakersOf(id string) (store.Speakers, error) {
	n, ok := r.cfg.Store.(store.SpeakerNaming)
	if !ok {
		return store.Speakers{JobID: id}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return n.Speakers(ctx, id)
}

// getSpeakers is GET /v1/jobs/:id/speakers: the names shown for the job's speakers (its
// custom_metadata's, the stored ones on top) and the revision of its subtitles.
func (r *Receiver) getSpeakers(c *fiber.Ctx) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	rec, _, ok, err := r.storedJob(c, id)
	if !ok {
		return err
	}
	sp, err := r.speakersOf(id)
	if err != nil {
		return r.storeFailed(c, err)
	}
	v := LocalView{}.WithSpeakers(rec.Job, sp)
	if v.Speakers == nil {
		v.Speakers = api.SpeakerNames{}
	}
	return sendJSON(c, SpeakersView{JobID: id, Names: v.Speakers, Revision: sp.Revision})
}

// putSpeakers is PUT /v1/jobs/:id/speakers with {"0": "Alice Martin", "1": "Bob Stone"}: the
// names replace the job's earlier ones ({} clears them), its subtitles are rendered again with
// them and subtitles.ready is queued with the next revision. The same names again change
// nothing (200, changed false).
func (r *Receiver) putSpeakers(c *fiber.Ctx) error {
	if r.cfg.SetSpeakers == nil {
		return writeError(c, fiber.StatusNotImplemented, "this receiver cannot name speakers")
	}
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	names, err := api.ParseSpeakerNames(c.Body())
	if err != nil {
		return writeNames(c, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	v, err := r.cfg.SetSpeakers(ctx, id, names)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return writeError(c, fiber.StatusNotFound, "job not found")
	case errors.Is(err, api.ErrValidation):
		return writeNames(c, err)
	case err != nil:
		return r.storeFailed(c, err)
	}
	if v.Changed {
		r.log.WithField("job_id", id).WithField("revision", v.Revision).Info("read API: speakers named")
	}
	return sendJSON(c, v)
}

func writeNames(c *fiber.Ctx, err error) error {
	body := apiError{Error: "invalid speaker names", Status: fiber.StatusBadRequest}
	var ve api.ValidationErrors
	if errors.As(err, &ve) {
		body.ValidationErrors = ve.Sentences()
	}
	return sendJSON(c.Status(fiber.StatusBadRequest), body)
}
