package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// CallbackKinds lists the four shapes, in the order above.
func CallbackKinds() []CallbackKind {
	return []CallbackKind{CallbackJobSuccess, CallbackJobError, CallbackLiveMessage, CallbackAccountWebhook}
}

// Valid reports whether k is one of CallbackKinds.
func (k CallbackKind) Valid() bool { return slices.Contains(CallbackKinds(), k) }

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
	c, _, err := ClassifyCallbackPayload(body)
	return c, err
}

// callbackHead is the envelope ClassifyCallback reads. Its type appears in the error of a body
// that is not an object, so it stays as it is (see classifyHead).
type callbackHead = struct {
	ID      *string         `json:"id"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
	Error   json.RawMessage `json:"error"`
}

// callbackSpans is callbackHead with payload and error kept as spans of the body instead of
// copies: a result's payload can be megabytes.
type callbackSpans struct {
	ID      *string  `json:"id"`
	Event   string   `json:"event"`
	Payload jsonSpan `json:"payload"`
	Error   jsonSpan `json:"error"`
}

// jsonSpan keeps the bytes of a value without copying them; it is only used while the decoded
// buffer is alive and unchanged.
type jsonSpan []byte

func (s *jsonSpan) UnmarshalJSON(b []byte) error {
	*s = b
	return nil
}

// classifyHead decodes the envelope of body. It decodes with spans, and only after a failure
// with callbackHead, whose error is the one to report. Both fail on the same bodies: the two
// types differ only in members that take any value.
func classifyHead(body []byte) (callbackSpans, error) {
	if spans, ok := scanCallbackHead(body); ok {
		return spans, nil
	}
	var spans callbackSpans
	if err := json.Unmarshal(body, &spans); err != nil {
		var head callbackHead
		if err := json.Unmarshal(body, &head); err != nil {
			return callbackSpans{}, err
		}
		return callbackSpans{ID: head.ID, Event: head.Event, Payload: jsonSpan(head.Payload), Error: jsonSpan(head.Error)}, nil
	}
	return spans, nil
}

// scanCallbackHead reads the envelope of a valid JSON body in one scan of its members, as
// decoding it into callbackSpans would: members matched to the fields in any case, a later one
// winning. It reports false for anything else (invalid JSON, not an object, a key with
// escapes or non-ASCII, a value of another type than the field's), which classifyHead then
// decodes the general way, for its error.
func scanCallbackHead(body []byte) (callbackSpans, bool) {
	var h callbackSpans
	if !json.Valid(body) {
		return h, false
	}
	m := objectMembers(body)
	for k, v := range m.all {
		if !plainKey(k) {
			return h, false
		}
		switch {
		case bytes.EqualFold(k, []byte("id")):
			if string(v) == "null" {
				h.ID = nil
				continue
			}
			s, ok := stringValue(v)
			if !ok {
				return h, false
			}
			h.ID = &s
		case bytes.EqualFold(k, []byte("event")):
			if string(v) == "null" {
				continue
			}
			s, ok := stringValue(v)
			if !ok {
				return h, false
			}
			h.Event = s
		case bytes.EqualFold(k, []byte("payload")):
			h.Payload = jsonSpan(v)
		case bytes.EqualFold(k, []byte("error")):
			h.Error = jsonSpan(v)
		}
	}
	return h, !m.bad
}

// ClassifyCallbackPayload is ClassifyCallback that also returns the callback's payload as it
// is in body (nil when absent), for decoding what the caller needs of it. The envelope is
// decoded once; of the payload, only the members the shape depends on are read (its type, or
// the id of a thin webhook), without decoding the rest.
func ClassifyCallbackPayload(body []byte) (Classified, json.RawMessage, error) {
	head, err := classifyHead(body)
	if err != nil {
		return Classified{}, nil, fmt.Errorf("%w: not a JSON object: %v", ErrUnclassified, err)
	}
	// The id authorises the delivery (a per-job token serves one job) and is the id applied.
	// encoding/json matches member names in any case and the last match wins, so "id" and "Id"
	// in one body could be read as two different jobs by two readers: such a body is refused.
	if err := refuseCaseVariant(body, "", "id"); err != nil {
		return Classified{}, nil, err
	}
	if head.Event == "" {
		return Classified{}, nil, fmt.Errorf("%w: event is missing", ErrUnclassified)
	}
	payload := json.RawMessage(head.Payload)
	// The payload is an object (a decoded map) or null; a map's member is the last of its name.
	isObject := false
	if !isNull(payload) {
		if payload[0] != '{' {
			return Classified{}, nil, fmt.Errorf("%w: payload is not an object", ErrUnclassified)
		}
		isObject = true
	}
	member := func(name string) (json.RawMessage, bool) {
		if !isObject {
			return nil, false
		}
		v, ok, bad := lastMember(payload, name)
		if bad {
			// Not expected of bytes encoding/json has read; the map says.
			var m map[string]json.RawMessage
			if json.Unmarshal(payload, &m) != nil {
				return nil, false
			}
			v, ok = m[name]
		}
		return v, ok
	}
	if head.ID == nil {
		var id string
		if isObject {
			if err := refuseCaseVariant(payload, "payload.", "id"); err != nil {
				return Classified{}, nil, err
			}
		}
		if raw, ok := member("id"); ok && json.Unmarshal(raw, &id) == nil && id != "" {
			return Classified{Kind: CallbackAccountWebhook, Event: head.Event, JobID: id}, payload, nil
		}
		return Classified{}, nil, fmt.Errorf("%w: neither id nor payload.id is present", ErrUnclassified)
	}
	if *head.ID == "" {
		return Classified{}, nil, fmt.Errorf("%w: id is empty", ErrUnclassified)
	}
	c := Classified{Event: head.Event, JobID: *head.ID}
	switch {
	case head.Event == EventTranscriptionSuccess && isObject:
		c.Kind = CallbackJobSuccess
	case head.Event == EventTranscriptionError && !isNull(json.RawMessage(head.Error)):
		c.Kind = CallbackJobError
	case strings.HasPrefix(head.Event, "live.") && isObject:
		var t MessageType
		if raw, ok := member("type"); !ok || json.Unmarshal(raw, &t) != nil || t == "" {
			return Classified{}, nil, fmt.Errorf("%w: live payload has no type", ErrUnclassified)
		}
		if err := refuseCaseVariant(payload, "payload.", "session_id"); err != nil {
			return Classified{}, nil, err
		}
		// The message names its session too: one that names another session is not this
		// session's message, whatever the envelope says.
		if raw, ok := member("session_id"); ok && !isNull(raw) {
			var sid string
			if json.Unmarshal(raw, &sid) != nil || sid != "" && sid != c.JobID {
				return Classified{}, nil, fmt.Errorf("%w: payload.session_id %s differs from id %q", ErrUnclassified, raw, c.JobID)
			}
		}
		c.Kind, c.MessageType = CallbackLiveMessage, t
	default:
		return Classified{}, nil, fmt.Errorf("%w: event %q with this body", ErrUnclassified, head.Event)
	}
	return c, payload, nil
}

// refuseCaseVariant returns an ErrUnclassified error when the object obj has a member whose
// name is name in another case (as encoding/json would match it), such as "Id" beside or
// instead of "id". prefix names obj in the message.
func refuseCaseVariant(obj []byte, prefix, name string) error {
	m := objectMembers(obj)
	for k := range m.all {
		if plainKey(k) && len(k) != len(name) {
			continue // an ASCII key of another length cannot fold to name
		}
		s, ok := keyName(k)
		if !ok {
			m.bad = true
			break
		}
		if s != name && strings.EqualFold(s, name) {
			return fmt.Errorf("%w: key %s%q is a case variant of %q: the body is ambiguous", ErrUnclassified, prefix, s, name)
		}
	}
	if m.bad {
		// Bytes the scanner does not take: the map decoding says which names are there.
		var all map[string]json.RawMessage
		if err := json.Unmarshal(obj, &all); err != nil {
			return fmt.Errorf("%w: %snot an object: %v", ErrUnclassified, prefix, err)
		}
		for s := range all {
			if s != name && strings.EqualFold(s, name) {
				return fmt.Errorf("%w: key %s%q is a case variant of %q: the body is ambiguous", ErrUnclassified, prefix, s, name)
			}
		}
	}
	return nil
}
