package api_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
)

// EncodeEvent gives json.Marshal's bytes with escapeHTML (the stored sink events) and
// plainjson.Marshal's without, and fails where they fail, for data that is absent, spaced out,
// full of HTML characters, or invalid, under custom metadata of each kind.
func TestEncodeEvent(t *testing.T) {
	base := api.Event{
		ID: "evt_<1>", Type: api.EventJobSucceeded, JobID: "job <1> & co", Kind: api.JobKind("prerecorded"),
		Category: "final", CreatedAt: api.Time{Time: time.Date(2026, 11, 22, 1, 39, 0, 123e6, time.UTC)},
	}
	for _, data := range []string{
		"",
		`null`,
		`{}`,
		`{"text": "plain", "n": [1, 2.5, 3]}`,
		` { "a" : [ 1 , 2.5e3 , "x y" ] , "b" : {"c":null} } `,
		"{\n  \"text\": \"a < b && c > d\",\n  \"sep\": \"\u2028\u2029\"\n}",
		`{"t":"<b>&amp;</b>"}`,
		"{\"s\":\"\u2028\u2029\"}",
		` { "t" : "a<b> --> c&d" , "u" : "\u2028" } `,
		`"<script>"`,
		`"é\u00e9\\n"`,
		`[true,false]`,
		`{"broken": `,
		`{"a":"<",`,
		`{"a":1}}`,
		`nope`,
	} {
		for _, meta := range []string{"", `{"a":"<b>"}`, ` {"k" : 1} `} {
			ev := base
			ev.Data, ev.CustomMetadata = json.RawMessage(data), json.RawMessage(meta)
			if data == "" {
				ev.Data = nil
			}
			if meta == "" {
				ev.CustomMetadata = nil
			}
			for _, tc := range []struct {
				escapeHTML bool
				marshal    func(any) ([]byte, error)
			}{{true, json.Marshal}, {false, plainjson.Marshal}} {
				want, werr := tc.marshal(ev)
				got, err := api.EncodeEvent(&ev, tc.escapeHTML)
				if !bytes.Equal(got, want) || (err == nil) != (werr == nil) {
					t.Errorf("EncodeEvent(data %q, metadata %q, escapeHTML %t) = %s, %v\nwant %s, %v", data, meta, tc.escapeHTML, got, err, want, werr)
				}
			}
			if string(ev.Data) != data {
				t.Fatalf("EncodeEvent changed the event's data to %q", ev.Data)
			}
		}
	}
}
