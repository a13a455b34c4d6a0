package receiver

import (
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// GET /v1/jobs/{id} writes a stored record as it was stored: its result byte for byte as the
// service sent it (spaces, HTML characters, escapes, unknown members at every level, numbers as
// written), the record's own members as the service's shape, then local.
func TestJobJSONKeepsTheStoredBytes(t *testing.T) {
	const result = `{"transcription": {"full_transcript":"a < b","languages":["en"],"utterances":[` +
		`{"start":0.50,"end":1.0e0,"text":"a < b","words":[{"word":"a","start":0.5,"w_new":[1, 2]}],"u_new":12345678901234567890}]},` +
		"\n " + `"brand_new":{"x":"\u00e9"}}`
	const head = `{"id":"job-1","request_id":"G-1","version":2,"status":"done","created_at":"2026-01-02T03:04:05.000Z",` +
		`"kind":"pre-recorded","custom_metadata":{"team":"\u003cb\u003e"},"file":null,"request_params":null`
	stored := head + `,"result":` + result + `,"top_new":"kept"}`
	var j api.Job
	if err := api.UnmarshalJobInPlace([]byte(stored), &j); err != nil {
		t.Fatal(err)
	}
	local := NewLocalView(store.Local{Source: "callback", UpdatedAt: time.Date(2026, 1, 2, 3, 14, 5, 0, time.UTC), Deliveries: 1}, nil)
	got, err := JobJSON(j, local)
	if err != nil {
		t.Fatal(err)
	}
	want := stored[:len(stored)-1] + `,"local":{"source":"callback","updated_at":"2026-01-02T03:14:05Z","deliveries":1,"artifacts":[]}}`
	if string(got) != want {
		t.Errorf("served\n%s\nwant\n%s", got, want)
	}
}

// GET /v1/jobs writes its items as GET /v1/jobs/{id} writes a record (without local): results
// byte for byte, in the service's page envelope.
func TestPageJSONKeepsTheStoredBytes(t *testing.T) {
	const result = `{"transcription": {"full_transcript":"a < b"}, "new":[1, 2]}`
	stored := `{"id":"job-1","request_id":"","version":2,"status":"done","created_at":"2026-01-02T03:04:05.000Z",` +
		`"kind":"pre-recorded","file":null,"request_params":null,"result":` + result + `}`
	var j api.Job
	if err := api.UnmarshalJobInPlace([]byte(stored), &j); err != nil {
		t.Fatal(err)
	}
	next := "https://x/v1/jobs?offset=2"
	page := api.Page{First: "https://x/v1/jobs", Current: "https://x/v1/jobs?offset=1", Next: &next}
	got, err := pageJSON(page, []store.JobRecord{{Job: j}, {Job: j}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"first":"https://x/v1/jobs","current":"https://x/v1/jobs?offset=1","next":"https://x/v1/jobs?offset=2","items":[` +
		stored + `,` + stored + `]}`
	if string(got) != want {
		t.Errorf("page\n%s\nwant\n%s", got, want)
	}
	if got, err := pageJSON(api.Page{}, nil); err != nil || string(got) != `{"first":"","current":"","next":null,"items":[]}` {
		t.Errorf("empty page %s, %v", got, err)
	}
}
