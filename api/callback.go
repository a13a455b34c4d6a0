package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CallbackKind tells which of the callback body shapes a delivery has.
type CallbackKind string

const (
	CallbackJobSuccess     CallbackKind = "job.success"     // {id, event: transcription.success, payload: result}
	CallbackJobError       CallbackKind = "job.error"       // {id, event: transcription.error, error}
	CallbackLiveMessage    CallbackKind = "live.message"    // {id, event: live.<type>, payload: message}
	CallbackAccountWebhook CallbackKind = "account.webhook" // {event, payload: {id}}
)

// ErrUnclassified is wrapped by ClassifyCallback when a body is JSON but none of the shapes.
var ErrUnclassified = errors.New("unclassified callback body")

// Classified is a callback body with its shape recognised and the fields every shape shares.
type Classified struct {
	Kind  CallbackKind
	Event string
	// JobID is the job or session the delivery is about (the top-level id, or payload.id of a
	// thin webhook).
	JobID string
	// MessageType is the live message type of a live callback.
	MessageType MessageType
}

// ClassifyCallback recognises the shape of a callback body without decoding the result, which
// can be large. A thin webhook and a live callback can share an event name
// (live.start_session): the live callback has a top-level id and a message in payload, the
// webhook only payload.id.
func ClassifyCallback(body []byte) (Classified, error) {
	var head struct {
		ID      *string         `json:"id"`
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return Classified{}, fmt.Errorf("%w: not a JSON object: %v", ErrUnclassified, err)
	}
	if head.Event == "" {
		return Classified{}, fmt.Errorf("%w: event is missing", ErrUnclassified)
	}
	var payload map[string]json.RawMessage
	if !isNull(head.Payload) {
		if err := json.Unmarshal(head.Payload, &payload); err != nil {
			return Classified{}, fmt.Errorf("%w: payload is not an object", ErrUnclassified)
		}
	}
	if head.ID == nil {
		var id string
		if raw, ok := payload["id"]; ok && json.Unmarshal(raw, &id) == nil && id != "" {
			return Classified{Kind: CallbackAccountWebhook, Event: head.Event, JobID: id}, nil
		}
		return Classified{}, fmt.Errorf("%w: neither id nor payload.id is present", ErrUnclassified)
	}
	if *head.ID == "" {
		return Classified{}, fmt.Errorf("%w: id is empty", ErrUnclassified)
	}
	c := Classified{Event: head.Event, JobID: *head.ID}
	switch {
	case head.Event == EventTranscriptionSuccess && payload != nil:
		c.Kind = CallbackJobSuccess
	case head.Event == EventTranscriptionError && !isNull(head.Error):
		c.Kind = CallbackJobError
	case strings.HasPrefix(head.Event, "live.") && payload != nil:
		var t MessageType
		if raw, ok := payload["type"]; !ok || json.Unmarshal(raw, &t) != nil || t == "" {
			return Classified{}, fmt.Errorf("%w: live payload has no type", ErrUnclassified)
		}
		c.Kind, c.MessageType = CallbackLiveMessage, t
	default:
		return Classified{}, fmt.Errorf("%w: event %q with this body", ErrUnclassified, head.Event)
	}
	return c, nil
}
