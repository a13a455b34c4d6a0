package sqlcore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
)

// EncodeHeaders writes what json.Marshal gives for the headers, cleaned or not.
func TestEncodeHeadersIsJSONMarshal(t *testing.T) {
	cases := []map[string]string{
		nil, {}, {"content-type": "application/json"},
		{"user-agent": "a <b> & \"c\" \\ \x00\x1f\u2028 é \xff", "webhook-id": "msg_1", "Zeta": "", "alpha": "x"},
		{"\xc3": "\u2029", "k\n": "v\t"},
	}
	clean := func(s string) string { return strings.ReplaceAll(s, "\x00", "") }
	for _, h := range cases {
		for _, c := range []func(string) string{nil, clean} {
			got, err := EncodeHeaders(h, c)
			if err != nil {
				t.Fatal(err)
			}
			if h == nil {
				if got.Valid {
					t.Errorf("nil headers: %q, want NULL", got.String)
				}
				continue
			}
			in := h
			if c != nil {
				in = map[string]string{}
				for k, v := range h {
					in[c(k)] = c(v)
				}
			}
			want, _ := json.Marshal(in)
			if !got.Valid || got.String != string(want) {
				t.Errorf("%q: %q, json.Marshal gives %q", h, got.String, want)
			}
			back, err := DecodeHeaders(got)
			if err != nil || len(back) != len(in) {
				t.Errorf("%q: decoded back as %q, %v", h, back, err)
			}
		}
	}
}

// oldRecord is a record as versions before raw results stored it: json.Marshal of the decoded
// model (compact, HTML characters escaped, unknown members after the known ones, sorted, at
// every level).
const oldRecord = `{"id":"job-old","request_id":"G-1","version":2,"status":"done",` +
	`"created_at":"2026-01-02T03:04:05.000Z","kind":"pre-recorded","completed_at":"2026-01-02T03:14:05.000Z",` +
	`"custom_metadata":{"team":"\u003cb\u003e"},` +
	`"file":{"id":"f-1","filename":"a.wav","source":"https://example.com/a.wav","audio_duration":1.5,"number_of_channels":1,"file_new":1},` +
	`"request_params":{"audio_url":"https://example.com/a.wav"},` +
	`"result":{"metadata":{"audio_duration":1.5,"number_of_distinct_channels":1,"billing_time":1.5,"transcription_time":0.1},` +
	`"transcription":{"full_transcript":"a \u003c b","languages":["en"],"utterances":[{"start":0.5,"end":1,"confidence":1,"channel":0,` +
	`"words":[{"word":"a","start":0.5,"end":1,"confidence":1,"w_new":true}],"text":"a \u003c b"}],"t_new":[1]},"r_new":{"k":null}},` +
	`"top_new":"kept"}`

// A record an earlier version stored decodes (its result left as stored) and encodes back to
// the very bytes it was stored as.
func TestOldRecordReadsBackTheSame(t *testing.T) {
	rec, err := DecodeJob([]byte(oldRecord), []byte(`{"source":"callback","updated_at":"2026-01-02T03:14:05Z","deliveries":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Job.ID != "job-old" || rec.Job.Status != api.StatusDone || string(rec.Job.Extra["top_new"]) != `"kept"` ||
		rec.Local.Deliveries != 1 {
		t.Fatalf("decoded %+v", rec)
	}
	if want := oldRecord[strings.Index(oldRecord, `"result":`)+len(`"result":`) : strings.LastIndex(oldRecord, `,"top_new"`)]; string(rec.Job.Result) != want {
		t.Errorf("result %s\nwant it as stored %s", rec.Job.Result, want)
	}
	record, _, err := EncodeJob(rec)
	if err != nil {
		t.Fatal(err)
	}
	if string(record) != oldRecord {
		t.Errorf("encoded again\n%s\nwant\n%s", record, oldRecord)
	}
	res, err := rec.Job.DecodeResult()
	if err != nil || res.Transcription.Utterances[0].Words[0].Word != "a" || res.Transcription.FullTranscript != "a < b" {
		t.Errorf("result decodes to %+v, %v", res, err)
	}
}
