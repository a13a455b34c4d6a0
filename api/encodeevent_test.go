package api_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
)

// EncodeEvent gives json.Marshal's bytes with escapeHTML and plainjson.Marshal's without, for
// data that is absent, spaced out, full of HTML characters, or invalid.
func TestEncodeEvent(t *testing.T) {
	base := api.Event{
		ID: "evt_1", Type: api.EventJobSucceeded, JobID: "job <1> & co", Kind: api.JobKind("prerecorded"),
		CustomMetadata: json.RawMessage(`{"a":"<b>"}`),
	}
	for _, data := range []string{
		"",
		`null`,
		`{"text": "plain", "n": [1, 2.5, 3]}`,
		"{\n  \"text\": \"a < b && c > d\",\n  \"sep\": \"\u2028\u2029\"\n}",
		`"<script>"`,
		`{"broken": `,
	} {
		ev := base
		ev.Data = json.RawMessage(data)
		for _, tc := range []struct {
			escapeHTML bool
			marshal    func(any) ([]byte, error)
		}{{true, json.Marshal}, {false, plainjson.Marshal}} {
			want, werr := tc.marshal(ev)
			got, err := api.EncodeEvent(&ev, tc.escapeHTML)
			if !bytes.Equal(got, want) || (err == nil) != (werr == nil) {
				t.Errorf("EncodeEvent(data %q, escapeHTML %t) = %s, %v\nwant %s, %v", data, tc.escapeHTML, got, err, want, werr)
			}
		}
		if string(ev.Data) != data {
			t.Fatalf("EncodeEvent changed the event's data to %q", ev.Data)
		}
	}
}
