package api

import (
	"bytes"
)

// DecodeValidLiveMessageHead is DecodeLiveMessageHead of a payload known to be valid JSON (the
// span of a body encoding/json has decoded, as ClassifyCallbackPayload returns it). In the
// usual case, an object whose member names are ASCII without escapes and whose members the
// head depends on have values of the expected types, it reads the head in one scan of the
// members, assigning them in order as encoding/json would (a later member of the same name,
// in any case, wins); anything else takes DecodeLiveMessageHead, so the result and the error
// are always that function's.
func DecodeValidLiveMessageHead(payload []byte) (LiveMessageHead, error) {
	if h, ok := scanLiveMessageHead(payload); ok {
		return h, nil
	}
	return DecodeLiveMessageHead(payload)
}

// liveHeadFields are the members DecodeLiveMessageHead decodes.
var liveHeadFields = [...]string{"session_id", "created_at", "type", "acknowledged", "error", "data"}

func scanLiveMessageHead(payload []byte) (LiveMessageHead, bool) {
	var h LiveMessageHead
	m := objectMembers(payload)
	for k, v := range m.all {
		if !plainKey(k) {
			return h, false
		}
		// No two names fold to the same, so the case-insensitive match is the exact one too.
		field := -1
		for i, name := range liveHeadFields {
			if bytes.EqualFold(k, []byte(name)) {
				field = i
				break
			}
		}
		null := string(v) == "null"
		switch field {
		case 0, 2: // session_id, type: a string without escapes, or null (no change)
			if null {
				continue
			}
			s, ok := plainStringValue(v)
			if !ok {
				return h, false
			}
			if field == 2 {
				h.Type = MessageType(s)
			}
		case 1: // created_at
			var p timeProbe
			if p.UnmarshalJSON(v) != nil {
				return h, false
			}
			h.CreatedAt = p.t
		case 3: // acknowledged: *bool
			switch string(v) {
			case "true", "false":
				b := v[0] == 't'
				h.Acknowledged = &b
			case "null":
				h.Acknowledged = nil
			default:
				return h, false
			}
		case 4:
			var p errorProbe
			_ = p.UnmarshalJSON(v)
			h.HasError = bool(p)
		case 5:
			var p finalProbe
			_ = p.UnmarshalJSON(v)
			h.IsFinal = bool(p)
		}
	}
	return h, !m.bad
}
