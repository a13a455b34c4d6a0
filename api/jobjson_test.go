package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

// AppendJob writes the members it knows as json.Marshal writes them, the result exactly as it
// is held (spaces, HTML characters, escapes, numbers as written), then the unknown members
// sorted; a null or absent result is left out, and a result that is not JSON is an error.
func TestAppendJob(t *testing.T) {
	created := api.NewTime(time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC))
	const result = `{"transcription": {"full_transcript":"a < b & c","utterances":[{"start":0.50,"words":[]}]},` +
		"\n" + `"new":{"x":"\u00e9","n":12345678901234567890}}`
	j := api.Job{ID: "job-1", RequestID: "G-1", Version: 2, Status: api.StatusDone, CreatedAt: created,
		Kind: api.KindPreRecorded, CustomMetadata: json.RawMessage(`{"team":"<a>"}`), Result: json.RawMessage(result),
		Extra: api.Extra{"z_new": json.RawMessage(`[1, 2]`), "a_new": json.RawMessage(`"kept"`)}}
	head := `{"id":"job-1","request_id":"G-1","version":2,"status":"done","created_at":"2026-11-28T23:00:00.000Z",` +
		`"kind":"pre-recorded","custom_metadata":{"team":%s},"file":null,"request_params":null`
	tail := `,"a_new":"kept","z_new":[1, 2]}`
	for _, tc := range []struct {
		escapeHTML bool
		team       string
	}{{true, `"\u003ca\u003e"`}, {false, `"<a>"`}} {
		got, err := api.AppendJob(nil, &j, tc.escapeHTML)
		want := strings.Replace(head, "%s", tc.team, 1) + `,"result":` + result + tail
		if err != nil || string(got) != want {
			t.Errorf("escapeHTML %t:\n got %s, %v\nwant %s", tc.escapeHTML, got, err, want)
		}
	}
	// Appended after what dst holds.
	if got, err := api.AppendJob([]byte("x"), &j, false); err != nil || !strings.HasPrefix(string(got), `x{"id":"job-1"`) {
		t.Errorf("appended: %.40s, %v", got, err)
	}
	// json.Marshal calls it, then compacts and escapes what it returns.
	if got, err := json.Marshal(j); err != nil || !strings.Contains(string(got), `"full_transcript":"a \u003c b \u0026 c"`) {
		t.Errorf("json.Marshal: %s, %v", got, err)
	}
	for _, none := range []string{"", "null"} {
		j.Result = json.RawMessage(none)
		got, err := api.AppendJob(nil, &j, false)
		if err != nil || strings.Contains(string(got), `"result"`) {
			t.Errorf("result %q: %s, %v", none, got, err)
		}
	}
	j.Result = json.RawMessage(`{"broken":`)
	if got, err := api.AppendJob(nil, &j, false); err == nil {
		t.Errorf("invalid result encoded: %s", got)
	}
}

// UnmarshalJobInPlace decodes as json.Unmarshal does, its result a slice of the bytes it read.
func TestUnmarshalJobInPlace(t *testing.T) {
	const result = `{"transcription": {"full_transcript":"a"}, "new":1}`
	b := []byte(`{"id":"job-1","status":"done","kind":"pre-recorded","result":` + result + `,"top_new":true}`)
	var inPlace, copied api.Job
	if err := api.UnmarshalJobInPlace(b, &inPlace); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &copied); err != nil {
		t.Fatal(err)
	}
	if string(inPlace.Result) != result || string(copied.Result) != result || inPlace.ID != "job-1" ||
		string(inPlace.Extra["top_new"]) != "true" || len(inPlace.Extra) != 1 {
		t.Fatalf("in place %+v\ncopied %+v", inPlace, copied)
	}
	if &inPlace.Result[0] != &b[strings.Index(string(b), result)] {
		t.Error("the result is a copy, not a slice of the bytes read")
	}
	var null api.Job
	if err := api.UnmarshalJobInPlace([]byte(`{"id":"j","result":null}`), &null); err != nil || null.Result != nil {
		t.Errorf("null result: %q, %v", null.Result, err)
	}
}
