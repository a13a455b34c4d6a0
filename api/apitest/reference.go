package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scribehook/scribehook/api"
)

// ReferenceClassifyCallback is api.ClassifyCallbackPayload written the straightforward way: the
// classification as it was before the payload was scanned instead of decoded into a map (commit
// 75eb1af), with the ambiguity rules of issue 12 applied after it, in the order the
// classification checks. It is the oracle of the differential tests of api (FuzzClassifyCallback)
// and of the receiver (its reference delivery), which must agree with it exactly, error text
// included; one copy, so the two cannot test against different rules.
func ReferenceClassifyCallback(body []byte) (api.Classified, json.RawMessage, error) {
	c, payload, err := referenceClassify(body)
	if aerr := referenceAmbiguity(body, c, err); aerr != nil {
		return api.Classified{}, nil, aerr
	}
	return c, payload, err
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// referenceClassify is the classification without the ambiguity rules, returning the payload
// as it decoded it.
func referenceClassify(body []byte) (api.Classified, json.RawMessage, error) {
	var head struct {
		ID      *string         `json:"id"`
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return api.Classified{}, nil, fmt.Errorf("%w: not a JSON object: %v", api.ErrUnclassified, err)
	}
	if head.Event == "" {
		return api.Classified{}, nil, fmt.Errorf("%w: event is missing", api.ErrUnclassified)
	}
	var payload map[string]json.RawMessage
	if !isNull(head.Payload) {
		if err := json.Unmarshal(head.Payload, &payload); err != nil {
			return api.Classified{}, nil, fmt.Errorf("%w: payload is not an object", api.ErrUnclassified)
		}
	}
	if head.ID == nil {
		var id string
		if raw, ok := payload["id"]; ok && json.Unmarshal(raw, &id) == nil && id != "" {
			return api.Classified{Kind: api.CallbackAccountWebhook, Event: head.Event, JobID: id}, head.Payload, nil
		}
		return api.Classified{}, nil, fmt.Errorf("%w: neither id nor payload.id is present", api.ErrUnclassified)
	}
	if *head.ID == "" {
		return api.Classified{}, nil, fmt.Errorf("%w: id is empty", api.ErrUnclassified)
	}
	c := api.Classified{Event: head.Event, JobID: *head.ID}
	switch {
	case head.Event == api.EventTranscriptionSuccess && payload != nil:
		c.Kind = api.CallbackJobSuccess
	case head.Event == api.EventTranscriptionError && !isNull(head.Error):
		c.Kind = api.CallbackJobError
	case strings.HasPrefix(head.Event, "live.") && payload != nil:
		var t api.MessageType
		if raw, ok := payload["type"]; !ok || json.Unmarshal(raw, &t) != nil || t == "" {
			return api.Classified{}, nil, fmt.Errorf("%w: live payload has no type", api.ErrUnclassified)
		}
		c.Kind, c.MessageType = api.CallbackLiveMessage, t
	default:
		return api.Classified{}, nil, fmt.Errorf("%w: event %q with this body", api.ErrUnclassified, head.Event)
	}
	return c, head.Payload, nil
}

// referenceAmbiguity is the straightforward form of the rules issue 12 added to the
// classification: keys that authorise (id, a thin webhook's payload.id, a message's
// payload.session_id) may not come in case variants, and a message may not name another
// session. It runs beside referenceClassify (its result c and err).
func referenceAmbiguity(body []byte, c api.Classified, err error) error {
	var head struct {
		ID      *string         `json:"id"`
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(body, &head) != nil {
		return nil // not an object: the classification's error stands
	}
	if err := caseVariant("", body, "id"); err != nil {
		return err
	}
	payloadIsObject := bytes.HasPrefix(bytes.TrimLeft(head.Payload, " \t\r\n"), []byte("{"))
	if head.ID == nil && head.Event != "" && payloadIsObject {
		return caseVariant("payload.", head.Payload, "id")
	}
	if err != nil || c.Kind != api.CallbackLiveMessage {
		return nil
	}
	if err := caseVariant("payload.", head.Payload, "session_id"); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(head.Payload, &m)
	if raw, ok := m["session_id"]; ok && string(raw) != "null" {
		var sid string
		if json.Unmarshal(raw, &sid) != nil || sid != "" && sid != c.JobID {
			return fmt.Errorf("%w: payload.session_id %s differs from id %q", api.ErrUnclassified, raw, c.JobID)
		}
	}
	return nil
}

// caseVariant refuses a member of object obj whose name is a case variant of name (prefix
// names where obj is, in the error).
func caseVariant(prefix string, obj []byte, name string) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		if k := t.(string); k != name && strings.EqualFold(k, name) {
			return fmt.Errorf("%w: key %s%q is a case variant of %q: the body is ambiguous", api.ErrUnclassified, prefix, k, name)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	return nil
}
