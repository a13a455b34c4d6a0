package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// SinkReplayWindow is what POST /v1/sinks/:name/replay asks: the events first queued in
// [Since, Until) (zero Until: no end), of a type one of Types matches (none: all).
type SinkReplayWindow struct {
	Since, Until time.Time
	Types        []string
	DryRun       bool
}

// sinkName reads :name and checks it is one of the receiver's sinks; ok false when it
// answered.
func (r *Receiver) sinkName(c *fiber.Ctx) (string, bool, error) {
	name, err := url.PathUnescape(c.Params("name"))
	if err != nil {
		return "", false, writeError(c, fiber.StatusBadRequest, "sink name: invalid percent-encoding in the path")
	}
	var names []string
	if r.cfg.Sinks != nil {
		for _, s := range r.cfg.Sinks() {
			names = append(names, s.Name)
		}
	}
	if !slices.Contains(names, name) {
		// The configured names, not the one asked: an answer never echoes a request's value.
		return "", false, writeError(c, fiber.StatusNotFound, "no sink of that name; the sinks are: "+strings.Join(names, ", "))
	}
	return name, true, nil
}

// replayFields is the body of POST /v1/sinks/:name/replay, or the same in its query.
type replayFields struct {
	Since  string   `json:"since"`
	Until  string   `json:"until"`
	Type   []string `json:"type"`
	DryRun bool     `json:"dry_run"`
}

func (f replayFields) window() (SinkReplayWindow, []string) {
	var w SinkReplayWindow
	var errs []string
	if f.Since == "" {
		errs = append(errs, "since: required, an ISO 8601 date-time")
	} else if t, err := api.ParseTime(f.Since); err != nil {
		errs = append(errs, "since: must be an ISO 8601 date-time")
	} else {
		w.Since = t
	}
	if f.Until != "" {
		if t, err := api.ParseTime(f.Until); err != nil {
			errs = append(errs, "until: must be an ISO 8601 date-time")
		} else if !w.Since.IsZero() && !t.After(w.Since) {
			errs = append(errs, "until: must be after since")
		} else {
			w.Until = t
		}
	}
	for i, p := range f.Type {
		if !slices.ContainsFunc(api.EventTypes(), func(typ string) bool { return api.MatchEventType(p, typ) }) {
			errs = append(errs, fmt.Sprintf("type[%d]: must match an event type (a glob such as job.* or live.transcript)", i))
		}
	}
	w.Types, w.DryRun = f.Type, f.DryRun
	return w, errs
}

// replaySink is POST /v1/sinks/:name/replay: the sink's events of the window go back to its
// queue under their event ids (delivered and dead ones), and a sink added later is queued the
// window's events its filter takes. The window is a JSON object in the body ({"since",
// "until", "type": [...], "dry_run"}) or the same fields in the query (type repeated), not
// both.
func (r *Receiver) replaySink(c *fiber.Ctx) error {
	if r.cfg.ReplaySink == nil {
		return writeError(c, fiber.StatusNotImplemented, "this receiver cannot replay sinks")
	}
	name, ok, err := r.sinkName(c)
	if !ok {
		return err
	}
	var f replayFields
	body := bytes.TrimSpace(c.Body())
	if len(body) > 0 {
		if len(c.Request().URI().QueryString()) > 0 {
			return writeError(c, fiber.StatusBadRequest, "window: give it in the body or in the query, not both")
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil || dec.More() {
			// Not the decoder's message: it quotes the body.
			return writeError(c, fiber.StatusBadRequest,
				"body: must be one JSON object with only since, until (strings), type (an array of strings) and dry_run (a boolean)")
		}
	} else {
		f.Since, f.Until = c.Query("since"), c.Query("until")
		for _, v := range c.Context().QueryArgs().PeekMulti("type") {
			f.Type = append(f.Type, string(v))
		}
		if s := c.Query("dry_run"); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return writeError(c, fiber.StatusBadRequest, "dry_run: must be true or false")
			}
			f.DryRun = b
		}
	}
	w, errs := f.window()
	if len(errs) > 0 {
		return sendJSON(c.Status(fiber.StatusBadRequest), apiError{Error: "invalid replay window", Status: fiber.StatusBadRequest, ValidationErrors: errs})
	}
	ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
	defer cancel()
	res, err := r.cfg.ReplaySink(ctx, name, w)
	if err != nil {
		return r.storeFailed(c, err)
	}
	r.log.WithField("sink", name).WithField("requeued", len(res.Requeued)).WithField("backfilled", len(res.Backfilled)).
		WithField("dry_run", w.DryRun).Info("read API: sink replayed")
	status := fiber.StatusAccepted
	if w.DryRun {
		status = fiber.StatusOK
	}
	return sendJSON(c.Status(status), replayView{
		Sink: name, DryRun: w.DryRun, Requeued: nonNil(res.Requeued), Backfilled: nonNil(res.Backfilled),
		AlreadyQueued: nonNil(res.AlreadyQueued), Skipped: res.Skipped,
	})
}

// replayTimeout bounds a replay, which reads and matches a whole window of events.
const replayTimeout = 2 * time.Minute

type replayView struct {
	Sink          string   `json:"sink"`
	DryRun        bool     `json:"dry_run"`
	Requeued      []string `json:"requeued"`
	Backfilled    []string `json:"backfilled"`
	AlreadyQueued []string `json:"already_queued"`
	Skipped       int      `json:"skipped"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// deliveryView is one delivery of a sink as GET /v1/sinks/:name/deliveries shows it: no body.
type deliveryView struct {
	ID          int64    `json:"id"`
	EventID     string   `json:"event_id"`
	EventType   string   `json:"event_type"`
	JobID       string   `json:"job_id"`
	Status      string   `json:"status"`
	Attempts    int      `json:"attempts"`
	LastError   string   `json:"last_error"`
	CreatedAt   api.Time `json:"created_at"`
	DeliveredAt api.Time `json:"delivered_at"`
	FailedAt    api.Time `json:"failed_at"`
}

// sinkDeliveries is GET /v1/sinks/:name/deliveries[?status=&since=&limit=&before=]: the
// sink's deliveries newest first; before is the last id of the previous page.
func (r *Receiver) sinkDeliveries(c *fiber.Ctx) error {
	if r.cfg.SinkHistory == nil {
		return writeError(c, fiber.StatusNotImplemented, "this receiver keeps no sink history")
	}
	name, ok, err := r.sinkName(c)
	if !ok {
		return err
	}
	q := store.SinkHistoryQuery{Sink: name, Status: c.Query("status")}
	switch q.Status {
	case "", "queued", "delivered", "dead":
	default:
		return writeError(c, fiber.StatusBadRequest, "status: must be queued, delivered or dead")
	}
	if s := c.Query("since"); s != "" {
		t, err := api.ParseTime(s)
		if err != nil {
			return writeError(c, fiber.StatusBadRequest, "since: must be an ISO 8601 date-time")
		}
		q.Since = t
	}
	if q.Limit, err = queryInt(c, "limit", 50, 1, 1000); err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	before, err := queryInt(c, "before", 0, 1, -1)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	q.Before = int64(before)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	items, err := r.cfg.SinkHistory(ctx, q)
	if err != nil {
		return r.storeFailed(c, err)
	}
	out := make([]deliveryView, 0, len(items))
	for _, it := range items {
		out = append(out, deliveryView{
			ID: it.ID, EventID: it.EventID, EventType: it.EventType, JobID: it.JobID, Status: it.Status,
			Attempts: it.Attempts, LastError: it.LastError, CreatedAt: api.NewTime(it.CreatedAt),
			DeliveredAt: api.NewTime(it.DeliveredAt), FailedAt: api.NewTime(it.FailedAt),
		})
	}
	return sendJSON(c, out)
}
