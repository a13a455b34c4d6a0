package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// jobDeliveries is the callback a finished pre-recorded job's record stands for, as the
// service would have sent it (docs/spec/provider-facts.md): the result on success, the error
// code on error.
func jobDeliveries(job *api.Job, now time.Time) ([]store.Delivery, error) {
	type body struct {
		ID             string             `json:"id"`
		Event          string             `json:"event"`
		Payload        json.RawMessage    `json:"payload,omitempty"`
		Error          *api.CallbackError `json:"error,omitempty"`
		CustomMetadata json.RawMessage    `json:"custom_metadata,omitempty"`
	}
	b := body{ID: job.ID, Event: api.EventTranscriptionSuccess, Payload: job.Result, CustomMetadata: job.CustomMetadata}
	kind := api.CallbackJobSuccess
	if job.Status == api.StatusError {
		kind, b.Event, b.Payload = api.CallbackJobError, api.EventTranscriptionError, nil
		code := 0
		if job.ErrorCode != nil {
			code = *job.ErrorCode
		}
		b.Error = &api.CallbackError{Code: code, Message: "the service reports error code " + strconv.Itoa(code) + " (fetched by reconciliation)"}
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode the callback of job %s: %w", job.ID, err)
	}
	return []store.Delivery{{
		DedupeKey: store.JobDedupeKey(job.ID, b.Event), Route: store.RouteReconcile, Kind: kind, Event: b.Event,
		JobID: job.ID, PartitionKey: job.ID, Headers: headers(), Body: raw, ReceivedAt: now,
	}}, nil
}

func headers() map[string]string {
	return map[string]string{"content-type": "application/json"}
}

// missingMessages are the messages of a finished session's record (result.messages) that the
// session's callbacks would have brought and the store lacks, in the record's order, each as
// the live callback that would have brought it.
func (r *Reconciler) missingMessages(ctx context.Context, job *api.Job, now time.Time) ([]store.Delivery, error) {
	var res struct {
		Messages []string `json:"messages"`
	}
	if len(job.Result) > 0 {
		if err := json.Unmarshal(job.Result, &res); err != nil {
			return nil, fmt.Errorf("decode the messages of session %s: %w", job.ID, err)
		}
	}
	if len(res.Messages) == 0 {
		return nil, nil
	}
	params, err := job.LiveParams()
	if err != nil {
		return nil, fmt.Errorf("read the settings of session %s: %w", job.ID, err)
	}
	if params == nil || params.Callback == nil || !*params.Callback {
		return nil, nil // no message came, or was to come, by callback
	}
	cats := params.CallbackConfig.CallbackCategories()
	have, err := r.storedMessages(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	var out []store.Delivery
	for i, text := range res.Messages {
		msg := []byte(text)
		d, head, ok := fetchedLive(job.ID, msg, now)
		if !ok {
			// Not a message the receiver would take from a callback either (it would set it
			// aside): the store has no place for it.
			r.log.WithField("session_id", job.ID).WithField("index", i).Warn("a message of the session's record is not one of its messages; left out")
			continue
		}
		if !cats.Has(head.Categories()...) {
			continue
		}
		id, err := Identity(msg)
		if err != nil {
			return nil, fmt.Errorf("session %s: result.messages[%d]: %w", job.ID, i, err)
		}
		if have[id] > 0 {
			have[id]--
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// storedMessages counts the session's stored messages by Identity.
func (r *Reconciler) storedMessages(ctx context.Context, sessionID string) (map[string]int, error) {
	have := map[string]int{}
	var after int64
	for {
		page, err := r.cfg.Store.LiveMessages(ctx, sessionID, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("read the stored messages of session %s: %w", sessionID, err)
		}
		for _, m := range page {
			id, err := Identity(m.Payload)
			if err != nil {
				return nil, fmt.Errorf("stored message %d of session %s: %w", m.Seq, sessionID, err)
			}
			have[id]++
			after = m.Seq
		}
		if len(page) < 1000 {
			return have, nil
		}
	}
}

// fetchedLive is the live callback that would have brought msg, a message of session's record,
// and the message's head; ok is false for a text the receiver would not take as a message of
// the session (not a message, a type the model does not know, another session's id).
func fetchedLive(session string, msg []byte, now time.Time) (store.Delivery, api.LiveMessageHead, bool) {
	head, err := api.DecodeLiveMessageHead(msg)
	if err != nil {
		return store.Delivery{}, head, false
	}
	cat, ok := head.Category()
	if !ok {
		return store.Delivery{}, head, false
	}
	d := liveDelivery(session, head, cat, msg, now)
	c, _, err := api.ClassifyCallbackPayload(d.Body)
	if err != nil || c.Kind != api.CallbackLiveMessage || c.JobID != session || c.MessageType != head.Type {
		return store.Delivery{}, head, false
	}
	return d, head, true
}

// liveDelivery is the live callback that would have brought msg: its body the envelope of
// provider-facts.md with msg as its payload, located in it as the receiver locates it.
func liveDelivery(sessionID string, head api.LiveMessageHead, cat api.MessageCategory, msg []byte, now time.Time) store.Delivery {
	id, _ := json.Marshal(sessionID)
	event := api.LiveEvent(head.Type)
	ev, _ := json.Marshal(event)
	body := make([]byte, 0, len(msg)+len(id)+len(ev)+32)
	body = append(append(append(append(body, `{"id":`...), id...), `,"event":`...), ev...)
	body = append(body, `,"payload":`...)
	off := len(body)
	body = append(append(body, msg...), '}')
	return store.Delivery{
		DedupeKey: store.LiveDedupeKey(sessionID, msg), Route: store.RouteReconcile, Kind: api.CallbackLiveMessage,
		Event: event, JobID: sessionID, MessageType: head.Type, Category: cat, PartitionKey: sessionID,
		Headers: headers(), Body: body, ReceivedAt: now,
		Message: store.Span{Off: off, Len: len(msg)}, MessageAt: head.CreatedAt,
	}
}
