package receiver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// deadLetterView is one dead letter as the read API shows it.
type deadLetterView struct {
	ID        int64     `json:"id"`
	Sink      string    `json:"sink"`
	EventID   string    `json:"event_id"`
	EventType string    `json:"event_type"`
	JobID     string    `json:"job_id"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"`
	FailedAt  api.Time  `json:"failed_at"`
	CreatedAt api.Time  `json:"created_at"`
	Event     api.Event `json:"event"`
}

// deadLetters is GET /v1/deadletters[?sink=S&since=T&limit=N]: deliveries that failed their
// last attempt, newest first.
func (r *Receiver) deadLetters(c *fiber.Ctx) error {
	var since time.Time
	if s := c.Query("since"); s != "" {
		t, err := api.ParseTime(s)
		if err != nil {
			return writeError(c, fiber.StatusBadRequest, "since: must be an ISO 8601 date-time")
		}
		since = t
	}
	limit, err := queryInt(c, "limit", 100, 1, 1000)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rows, err := r.cfg.Store.DeadLetters(ctx, c.Query("sink"), since, limit)
	if err != nil {
		return r.storeFailed(c, err)
	}
	out := make([]deadLetterView, 0, len(rows))
	for _, d := range rows {
		out = append(out, deadLetterView{
			ID: d.ID, Sink: d.Sink, EventID: d.EventID, EventType: d.Event.Type, JobID: d.Event.JobID,
			Attempts: d.Attempts, LastError: d.LastError, FailedAt: api.NewTime(d.FailedAt),
			CreatedAt: api.NewTime(d.CreatedAt), Event: d.Event,
		})
	}
	return sendJSON(c, out)
}

// replayDeadLetter is POST /v1/deadletters/:id/replay: the delivery goes back to its sink's
// queue, due now, with its attempts reset.
func (r *Receiver) replayDeadLetter(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return writeError(c, fiber.StatusBadRequest, "dead letter id must be a positive integer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.cfg.Store.ReplayDeadLetter(ctx, id, r.cfg.Now()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return writeError(c, fiber.StatusNotFound, fmt.Sprintf("dead letter %d not found", id))
		}
		return r.storeFailed(c, err)
	}
	return sendJSON(c.Status(fiber.StatusAccepted), fiber.Map{"status": "queued", "id": id})
}
