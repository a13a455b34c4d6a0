package sinks

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/plainjson"
)

// TestEventJSONIsPlainjson: eventJSON gives plainjson.Marshal's bytes (and its error) for any
// event: data holding what HTML or JavaScript would escape, indented data, no data, data that
// is not JSON.
func TestEventJSONIsPlainjson(t *testing.T) {
	live := fileEvent("live.transcript", "ev/live 1", "{\"text\": \"a <b> & c \u2028 \u2029\",\n  \"n\": [1, 2.50, null]}")
	live.Kind, live.Category, live.CustomMetadata = api.KindLive, api.CategoryFinalTranscripts, json.RawMessage(`{"team": "<a>"}`)
	for _, ev := range []api.Event{
		live,
		fileEvent(api.EventJobSucceeded, "ev-done", succeededData),
		fileEvent(api.EventJobCreated, "e", `{}`),
		fileEvent(api.EventJobCreated, "e", `"a string"`),
		fileEvent(api.EventJobCreated, "e", ``),
		fileEvent(api.EventJobCreated, "e", `{"unclosed":`),
		fileEvent(api.EventJobCreated, "e", `{} {}`),
		fileEvent(api.EventJobCreated, "e", `{"a":"x y\" z","b":[1,{"c":"<&>"}]}`),
		fileEvent(api.EventJobCreated, "e", `{"a":"x y\" z", "b":1}`),
	} {
		want, werr := plainjson.Marshal(ev)
		got, err := eventJSON(ev)
		if string(got) != string(want) || (err == nil) != (werr == nil) {
			t.Errorf("eventJSON(%q) = %s, %v\nwant %s, %v", ev.Data, got, err, want, werr)
		}
		// The pieces the webhook sends and the file sink indents are the same bytes.
		body, err := bodyOf(ev)
		if (err == nil) != (werr == nil) {
			t.Errorf("bodyOf(%q): %v, want error %v", ev.Data, err, werr)
		}
		if err == nil {
			joined, _ := io.ReadAll(body.Reader())
			if string(joined) != string(want) || body.Len() != len(want) {
				t.Errorf("bodyOf(%q) = %s (%d bytes)\nwant %s", ev.Data, joined, body.Len(), want)
			}
		}
	}
}

// BenchmarkEventJSON2h encodes a 2-hour result's job.succeeded event (1.7 MB), as every sink
// does before it sends or writes it: B/op is what the encoding allocates.
func BenchmarkEventJSON2h(b *testing.B) {
	ev := succeeded2h(b)
	b.SetBytes(int64(len(ev.Data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eventJSON(ev); err != nil {
			b.Fatal(err)
		}
	}
}
