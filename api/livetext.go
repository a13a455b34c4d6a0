package api

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// LiveText is what a live message holds for a text index: its type, and in its data the
// utterance of a transcript or the translated utterance of a translation, each with its id.
// Its JSON tags are the message's.
type LiveText struct {
	Type MessageType  `json:"type"`
	Data LiveTextData `json:"data"`
}

// LiveTextData is LiveText's part of a message's data.
type LiveTextData struct {
	ID                  string        `json:"id"`
	IsFinal             bool          `json:"is_final"`
	Utterance           UtteranceText `json:"utterance"`
	UtteranceID         string        `json:"utterance_id"`
	TargetLanguage      string        `json:"target_language"`
	TranslatedUtterance UtteranceText `json:"translated_utterance"`
}

// UtteranceText is an utterance without its words.
type UtteranceText struct {
	Start    float64 `json:"start"`
	End      float64 `json:"end"`
	Text     string  `json:"text"`
	Language string  `json:"language"`
	Speaker  *int    `json:"speaker"`
}

// DecodeValidLiveText decodes a live message known to be valid JSON (one the receiver took, as
// it is stored) into a LiveText, with encoding/json's result and error. A final's words are
// most of its bytes and none of the index's: in the usual case (ASCII member names without
// escapes, strings without escapes, values of the expected types) the message is read in one
// scan that skips them; anything else takes json.Unmarshal, so the result is always its.
func DecodeValidLiveText(payload []byte) (LiveText, error) {
	var t LiveText
	if scanLiveText(payload, &t) {
		return t, nil
	}
	t = LiveText{}
	err := json.Unmarshal(payload, &t)
	return t, err
}

// scanLiveText assigns the members in order, as encoding/json would (a later member of the
// same name, in any case, wins; an object's members merge into what an earlier one set).
func scanLiveText(b []byte, t *LiveText) bool {
	m := objectMembers(b)
	for k, v := range m.all {
		if !plainKey(k) {
			return false
		}
		var ok bool
		switch {
		case bytes.EqualFold(k, []byte("type")):
			s := string(t.Type)
			ok = scanString(v, &s)
			t.Type = MessageType(s)
		case bytes.EqualFold(k, []byte("data")):
			ok = scanObject(v, func(k, v []byte) bool { return scanLiveTextData(k, v, &t.Data) })
		default:
			ok = true
		}
		if !ok {
			return false
		}
	}
	return m.ok()
}

func scanLiveTextData(k, v []byte, d *LiveTextData) bool {
	switch {
	case bytes.EqualFold(k, []byte("id")):
		return scanString(v, &d.ID)
	case bytes.EqualFold(k, []byte("is_final")):
		return scanBool(v, &d.IsFinal)
	case bytes.EqualFold(k, []byte("utterance")):
		return scanObject(v, func(k, v []byte) bool { return scanUtteranceText(k, v, &d.Utterance) })
	case bytes.EqualFold(k, []byte("utterance_id")):
		return scanString(v, &d.UtteranceID)
	case bytes.EqualFold(k, []byte("target_language")):
		return scanString(v, &d.TargetLanguage)
	case bytes.EqualFold(k, []byte("translated_utterance")):
		return scanObject(v, func(k, v []byte) bool { return scanUtteranceText(k, v, &d.TranslatedUtterance) })
	}
	return true
}

func scanUtteranceText(k, v []byte, u *UtteranceText) bool {
	switch {
	case bytes.EqualFold(k, []byte("start")):
		return scanFloat(v, &u.Start)
	case bytes.EqualFold(k, []byte("end")):
		return scanFloat(v, &u.End)
	case bytes.EqualFold(k, []byte("text")):
		return scanString(v, &u.Text)
	case bytes.EqualFold(k, []byte("language")):
		return scanString(v, &u.Language)
	case bytes.EqualFold(k, []byte("speaker")):
		return scanSpeaker(v, &u.Speaker)
	}
	return true
}

// scanObject calls member for each member of the object v, in order; null leaves what it
// would fill as it is. False on anything else, a key that is not plain, or a member refused.
func scanObject(v []byte, member func(k, v []byte) bool) bool {
	if string(v) == "null" {
		return true
	}
	m := objectMembers(v)
	for k, val := range m.all {
		if !plainKey(k) || !member(k, val) {
			return false
		}
	}
	return m.ok()
}

// scanString sets *dst to a string without escapes; null leaves it.
func scanString(v []byte, dst *string) bool {
	if string(v) == "null" {
		return true
	}
	s, ok := plainStringValue(v)
	if ok {
		*dst = string(s)
	}
	return ok
}

func scanBool(v []byte, dst *bool) bool {
	switch string(v) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	case "null":
	default:
		return false
	}
	return true
}

// scanFloat sets *dst to a JSON number; null leaves it.
func scanFloat(v []byte, dst *float64) bool {
	if string(v) == "null" {
		return true
	}
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

// scanSpeaker sets *dst to an integer written without fraction or exponent; null sets it nil,
// as encoding/json does a pointer.
func scanSpeaker(v []byte, dst **int) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	if len(v) == 0 || bytes.ContainsAny(v, ".eE+") {
		return false
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return false
	}
	*dst = &n
	return true
}
