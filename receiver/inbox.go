package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Failed deliveries: the inbox rows whose apply failed for good, and their replay.

// Bounds of the failed deliveries' routes.
const (
	defaultFailedLimit = 100
	maxFailedLimit     = 1000
	// maxReplayIDs bounds the ids of one POST /v1/inbox/replay.
	maxReplayIDs = 1000
	// maxFilterText bounds a job id or an error text of a filter.
	maxFilterText = 512
)

// FailedView is one failed delivery as GET /v1/inbox/failed (and the CLI's JSON) shows it:
// without its body.
type FailedView struct {
	ID          int64               `json:"id"`
	JobID       string              `json:"job_id"`
	Kind        api.CallbackKind    `json:"kind"`
	Event       string              `json:"event"`
	Route       string              `json:"route"`
	MessageType api.MessageType     `json:"message_type,omitempty"`
	Category    api.MessageCategory `json:"category,omitempty"`
	Attempts    int                 `json:"attempts"`
	LastError   string              `json:"last_error"`
	ReceivedAt  api.Time            `json:"received_at"`
	FailedAt    api.Time            `json:"failed_at"` // null for rows failed before it was kept
}

// NewFailedView is row as GET /v1/inbox/failed shows it.
func NewFailedView(row store.InboxRow) FailedView {
	return FailedView{
		ID: row.ID, JobID: row.JobID, Kind: row.Kind, Event: row.Event, Route: row.Route,
		MessageType: row.MessageType, Category: row.Category, Attempts: row.Attempts, LastError: row.LastError,
		ReceivedAt: api.NewTime(row.ReceivedAt), FailedAt: api.NewTime(row.FailedAt),
	}
}

// filterFields is the filter as the routes take it, in a query or a JSON body.
type filterFields struct {
	IDs   []int64 `json:"ids"`
	JobID string  `json:"job_id"`
	Kind  string  `json:"kind"`
	Since string  `json:"since"`
	Until string  `json:"until"`
	Error string  `json:"error"`
	All   bool    `json:"all"`
}

// queryFilter reads the filter's fields from c's query: ids as comma-separated numbers, all as
// true or false.
func queryFilter(c *fiber.Ctx) (filterFields, error) {
	f := filterFields{JobID: c.Query("job_id"), Kind: c.Query("kind"), Since: c.Query("since"),
		Until: c.Query("until"), Error: c.Query("error")}
	if s := strings.TrimSpace(c.Query("ids")); s != "" {
		for part := range strings.SplitSeq(s, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
			if err != nil || id < 1 {
				return f, errors.New("ids: must be positive integers separated by commas")
			}
			f.IDs = append(f.IDs, id)
		}
	}
	switch c.Query("all") {
	case "", "false":
	case "true":
		f.All = true
	default:
		return f, errors.New("all: must be true or false")
	}
	return f, nil
}

// filter checks the fields and makes the store's filter. Errors name the field and the rule,
// never the value given.
func (f filterFields) filter() (store.InboxFilter, error) {
	out := store.InboxFilter{IDs: f.IDs, JobID: f.JobID, Kind: api.CallbackKind(f.Kind), Error: f.Error, All: f.All}
	switch {
	case len(f.IDs) > maxReplayIDs:
		return out, fmt.Errorf("ids: at most %d", maxReplayIDs)
	case len(f.JobID) > maxFilterText:
		return out, fmt.Errorf("job_id: at most %d bytes", maxFilterText)
	case len(f.Error) > maxFilterText:
		return out, fmt.Errorf("error: at most %d bytes", maxFilterText)
	}
	for _, id := range f.IDs {
		if id < 1 {
			return out, errors.New("ids: must be positive integers")
		}
	}
	if f.Kind != "" && !out.Kind.Valid() {
		return out, fmt.Errorf("kind: must be one of %s", kindNames())
	}
	var err error
	if out.Since, err = filterTime("since", f.Since); err != nil {
		return out, err
	}
	if out.Until, err = filterTime("until", f.Until); err != nil {
		return out, err
	}
	if !out.Since.IsZero() && !out.Until.IsZero() && !out.Until.After(out.Since) {
		return out, errors.New("until: must be after since")
	}
	return out, nil
}

// kindNames lists the callback kinds, comma-separated.
func kindNames() string {
	kinds := api.CallbackKinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

func filterTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := api.ParseTime(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: must be an ISO 8601 date-time", field)
	}
	return t, nil
}

// failedInbox is GET /v1/inbox/failed[?job_id=&kind=&since=&until=&error=&ids=&before=&limit=]:
// the deliveries whose apply failed for good, newest first, without their bodies. The next page
// is before=<the last id of this one>.
func (r *Receiver) failedInbox(c *fiber.Ctx) error {
	fields, err := queryFilter(c)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	f, err := fields.filter()
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	before, err := queryInt(c, "before", 0, 1, -1)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	f.BeforeID = int64(before)
	limit, err := queryInt(c, "limit", defaultFailedLimit, 1, maxFailedLimit)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rows, err := r.cfg.Store.FailedInbox(ctx, f, limit)
	if err != nil {
		return r.storeFailed(c, err)
	}
	out := make([]FailedView, 0, len(rows))
	for _, row := range rows {
		out = append(out, NewFailedView(row))
	}
	return sendJSON(c, out)
}

// replayFailed is POST /v1/inbox/:id/replay: the failed delivery goes back to pending, due now,
// its attempts reset, and the pipeline applies it.
func (r *Receiver) replayFailed(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id < 1 {
		return writeError(c, fiber.StatusBadRequest, "failed delivery id must be a positive integer")
	}
	moved, err := r.replay(store.InboxFilter{IDs: []int64{id}})
	if err != nil {
		return r.storeFailed(c, err)
	}
	if len(moved) == 0 {
		return writeError(c, fiber.StatusNotFound, fmt.Sprintf("failed delivery %d not found", id))
	}
	return sendJSON(c.Status(fiber.StatusAccepted), fiber.Map{"status": "queued", "id": id})
}

// replayFailedMany is POST /v1/inbox/replay: every failed delivery the filter selects goes back
// to pending. The filter is a JSON object in the body ({"ids": [...], "job_id", "kind",
// "since", "until", "error", "all"}) or the same fields in the query, not both; one that names
// nothing is refused unless all is true, so that a typo does not replay everything.
func (r *Receiver) replayFailedMany(c *fiber.Ctx) error {
	body := bytes.TrimSpace(c.Body())
	fields, err := queryFilter(c)
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	if len(body) > 0 {
		if len(c.Request().URI().QueryString()) > 0 {
			return writeError(c, fiber.StatusBadRequest, "filter: give it in the body or in the query, not both")
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		fields = filterFields{}
		if err := dec.Decode(&fields); err != nil || dec.More() {
			// Not the decoder's message: it quotes the body.
			return writeError(c, fiber.StatusBadRequest,
				"body: must be one JSON object with only ids (numbers), job_id, kind, since, until, error (strings) and all (a boolean)")
		}
	}
	f, err := fields.filter()
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	if f.Empty() && !f.All {
		return writeError(c, fiber.StatusBadRequest,
			"filter: give ids, job_id, kind, since, until or error; all=true replays every failed delivery")
	}
	moved, err := r.replay(f)
	if err != nil {
		return r.storeFailed(c, err)
	}
	ids := make([]int64, len(moved))
	for i, k := range moved {
		ids[i] = k.ID
	}
	return sendJSON(c.Status(fiber.StatusAccepted), fiber.Map{"status": "queued", "replayed": len(ids), "ids": ids})
}

// replayNotifier is a Notifier that is told of replayed rows as such (the pipeline: it counts
// them).
type replayNotifier interface {
	Replayed(rows []store.InboxKey)
}

// replay moves the failed rows f selects back to pending, due now on the receiver's clock, and
// tells the Notifier of those it moved (even when a later batch of them failed: what moved is
// pending).
func (r *Receiver) replay(f store.InboxFilter) ([]store.InboxKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	moved, err := r.cfg.Store.ReplayInbox(ctx, f, r.cfg.Now())
	if len(moved) > 0 && r.cfg.Notifier != nil {
		if rn, ok := r.cfg.Notifier.(replayNotifier); ok {
			rn.Replayed(moved)
		} else {
			for _, k := range moved {
				r.cfg.Notifier.Committed(k.ID, k.PartitionKey)
			}
		}
	}
	if len(moved) > 0 {
		r.log.WithField("rows", len(moved)).Info("failed deliveries replayed")
	}
	return moved, err
}
