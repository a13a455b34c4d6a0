package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/scribehook/scribehook/internal/plainjson"
)

// A job record and an event are assembled from bytes scribehook holds, not re-encoded from a
// decoded model: the members scribehook writes are encoded (a few hundred bytes), and the
// result, often megabytes, is spliced in as the service sent it.

// jobHead is a Job without its result and its unknown members, in Job's member order.
type jobHead struct {
	ID                  string          `json:"id"`
	RequestID           string          `json:"request_id"`
	Version             int             `json:"version"`
	Status              JobStatus       `json:"status"`
	CreatedAt           Time            `json:"created_at"`
	PostSessionMetadata json.RawMessage `json:"post_session_metadata,omitempty"`
	Kind                JobKind         `json:"kind"`
	CompletedAt         *Time           `json:"completed_at,omitempty"`
	CustomMetadata      json.RawMessage `json:"custom_metadata,omitempty"`
	ErrorCode           *int            `json:"error_code,omitempty"`
	File                *File           `json:"file"`
	RequestParams       json.RawMessage `json:"request_params"`
}

// AppendJob appends the record j: its members encoded as json.Marshal encodes them (without
// HTML escaping unless escapeHTML), then its result exactly as it is held, then its unknown
// members sorted by name, as they came. A result that is not valid JSON is an error.
func AppendJob(dst []byte, j *Job, escapeHTML bool) ([]byte, error) {
	params := j.RequestParams
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	head, err := marshal(jobHead{
		ID: j.ID, RequestID: j.RequestID, Version: j.Version, Status: j.Status, CreatedAt: j.CreatedAt,
		PostSessionMetadata: j.PostSessionMetadata, Kind: j.Kind, CompletedAt: j.CompletedAt,
		CustomMetadata: j.CustomMetadata, ErrorCode: j.ErrorCode, File: j.File, RequestParams: params,
	}, escapeHTML)
	if err != nil {
		return nil, err
	}
	result := j.Result
	if isNull(result) {
		result = nil
	} else if !json.Valid(result) {
		return nil, fmt.Errorf("encode job %s: result is not valid JSON", j.ID)
	}
	if dst == nil {
		dst = make([]byte, 0, len(head)+len(result)+len(`,"result":`)+extraSize(j.Extra))
	}
	start := len(dst)
	dst = append(dst, head[:len(head)-1]...)
	if result != nil {
		dst = append(dst, `,"result":`...)
		dst = append(dst, result...)
	}
	dst = append(dst, '}')
	type plain Job
	return appendExtras(dst, start, j.Extra, fieldNames(reflect.TypeFor[plain]()))
}

// EncodeJob is AppendJob(nil, j, escapeHTML).
func EncodeJob(j *Job, escapeHTML bool) ([]byte, error) { return AppendJob(nil, j, escapeHTML) }

// EncodeEvent is json.Marshal(*ev), or, without escapeHTML, plainjson.Marshal(*ev) (the bytes a
// sink sends: a transcript's "<" stays "<"). The encoder grows its buffer by doubling while it
// compacts the event's data, then copies the result out: for a 2-hour result about three times
// the data. Here the event without its data is encoded (data is its last member,
// "data":null) and the data compacted once into a buffer of the final size (data that is
// compact already, as a service sends it, goes byte for byte), then, with escapeHTML, escaped
// as json.Marshal escapes it (<, >, &, U+2028, U+2029) when it holds such a character. Empty
// and invalid data take the encoder itself.
func EncodeEvent(ev *Event, escapeHTML bool) ([]byte, error) {
	const tail = `null}`
	if len(ev.Data) == 0 {
		return marshal(*ev, escapeHTML)
	}
	head := *ev
	head.Data = nil
	h, err := marshal(head, escapeHTML)
	if err != nil || !bytes.HasSuffix(h, []byte(`"data":`+tail)) {
		return marshal(*ev, escapeHTML)
	}
	h = h[:len(h)-len(tail)]
	buf := bytes.NewBuffer(make([]byte, 0, len(h)+len(ev.Data)+1))
	buf.Write(h)
	if err := json.Compact(buf, ev.Data); err != nil {
		return marshal(*ev, escapeHTML)
	}
	if data := buf.Bytes()[len(h):]; escapeHTML && bytes.ContainsAny(data, "<>&\u2028\u2029") {
		// Each escaped character takes \u00XX (6 bytes) for 1, or \u20XX for 3.
		grow := 5*(bytes.Count(data, []byte("<"))+bytes.Count(data, []byte(">"))+bytes.Count(data, []byte("&"))) +
			3*(bytes.Count(data, []byte("\u2028"))+bytes.Count(data, []byte("\u2029")))
		esc := bytes.NewBuffer(make([]byte, 0, len(h)+len(data)+grow+1))
		esc.Write(h)
		json.HTMLEscape(esc, data)
		buf = esc
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// marshal is json.Marshal, or without escapeHTML plainjson.Marshal.
func marshal(v any, escapeHTML bool) ([]byte, error) {
	if escapeHTML {
		return json.Marshal(v)
	}
	return plainjson.Marshal(v)
}

// EventHead is the part of EncodeEvent(ev, false) before the event's data, when that data is
// valid JSON and compact already (as an event read back from the store holds it): the event
// is then head, ev.Data and "}", byte for byte, and a sink sends or writes it from those
// pieces without copying its data. ok is false otherwise (use EncodeEvent).
func EventHead(ev *Event) (head []byte, ok bool) {
	const tail = `null}`
	if len(ev.Data) == 0 || !compactJSON(ev.Data) || !json.Valid(ev.Data) {
		return nil, false
	}
	h := *ev
	h.Data = nil
	b, err := plainjson.Marshal(h)
	if err != nil || !bytes.HasSuffix(b, []byte(`"data":`+tail)) {
		return nil, false
	}
	return b[:len(b)-len(tail)], true
}

// compactJSON reports whether b has no white space outside its strings (b being JSON, that is
// what json.Compact would remove).
func compactJSON(b []byte) bool {
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}
