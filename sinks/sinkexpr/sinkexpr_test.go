package sinkexpr_test

import (
	"context"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

const succeededData = `{"id":"j1","status":"done","result":{"metadata":{"audio_duration":75.5},` +
	`"transcription":{"full_transcript":"bonjour","languages":["fr"]},` +
	`"summarization":{"success":false,"is_empty":true,"results":null,"error":{"status_code":500,"exception":"x","message":"boom"}}}}`

const finalData = `{"type":"transcript","session_id":"s1","data":{"id":"u1","is_final":true,"utterance":{"text":"We need a REFUND now","language":"en"}}}`

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		out       sinkexpr.Output
		want      string
	}{
		{"undeclared", `evnt.type == "x"`, sinkexpr.Bool, "ERROR: <input>:1:1: undeclared reference to 'evnt'"},
		{"syntax", `event.type ==`, sinkexpr.Bool, "Syntax error"},
		{"not a bool", `event.type + "x"`, sinkexpr.Bool, "must give a bool, gives string"},
		{"unknown field", `event.tpye == "job.succeeded"`, sinkexpr.Bool, "event has no field 'tpye'"},
		{"unknown field indexed", `event["dta"].x == 1`, sinkexpr.Bool, "event has no field 'dta'"},
		{"header not a string", `1 + 2`, sinkexpr.String, "must give a string, gives int"},
		// The envelope's fields are typed: their misuse is refused at load, not at each event.
		{"a string field as a when", `event.job_id`, sinkexpr.Bool, "must give a bool, gives string"},
		{"a string field against an int", `event.kind == 1`, sinkexpr.Bool, "found no matching overload for '_==_' applied to '(string, int)'"},
		{"created_at is a string", `event.created_at > timestamp("2026-01-01T00:00:00Z")`, sinkexpr.Bool, "found no matching overload for '_>_' applied to '(string, timestamp)'"},
		{"custom_metadata as a header", `event.custom_metadata`, sinkexpr.String, "must give a string, gives map(string, dyn)"},
		{"empty", `  `, sinkexpr.Value, "empty expression"},
		{"too long", strings.Repeat("1+", 3000) + "1", sinkexpr.Value, "more than 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sinkexpr.Compile(tc.src, tc.out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile(%q) = %v, want an error containing %q", tc.src, err, tc.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	succeeded := sinkexpr.Input{ID: "e1", Type: "job.succeeded", JobID: "j1", Kind: "pre-recorded",
		CustomMetadata: []byte(`{"team":"media"}`), Data: []byte(succeededData)}
	final := sinkexpr.Input{ID: "e2", Type: "live.transcript", JobID: "s1", Kind: "live", Category: "final_transcripts", Data: []byte(finalData)}
	for _, tc := range []struct {
		name, src string
		in        sinkexpr.Input
		want      bool
		wantErr   string
	}{
		{"longer than a minute", `event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0`, succeeded, true, ""},
		{"int literal against a double", `event.data.result.metadata.audio_duration > 60`, succeeded, true, ""},
		{"not longer than two minutes", `event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 120.0`, succeeded, false, ""},
		{"only French", `"fr" in event.data.result.transcription.languages`, succeeded, true, ""},
		{"summarization failed", `has(event.data.result.summarization) && !event.data.result.summarization.success`, succeeded, true, ""},
		{"custom metadata", `event.custom_metadata.team == "media"`, succeeded, true, ""},
		{"final mentioning a keyword", `event.type == "live.transcript" && event.data.data.is_final && event.data.data.utterance.text.lowerAscii().contains("refund")`, final, true, ""},
		{"keyword absent", `event.data.data.utterance.text.lowerAscii().contains("invoice")`, final, false, ""},
		{"short circuit spares the missing field", `event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0`, final, false, ""},
		{"missing field", `event.data.result.metadata.audio_duration > 60.0`, final, false, "no such key: result"},
		{"missing metadata", `event.custom_metadata.team == "media"`, final, false, "no such key: team"},
		{"created_at as a timestamp", `timestamp(event.created_at) > timestamp("2026-11-01T00:00:00Z")`, sinkexpr.Input{Type: "job.succeeded", CreatedAt: "2026-11-29T10:00:00.123Z"}, true, ""},
		{"indexed envelope", `event["type"] == "live.transcript" && event["data"]["data"].is_final`, final, true, ""},
		{"has on the envelope", `has(event.job_id) && event.job_id.startsWith("s")`, final, true, ""},
		{"the data's numbers are doubles", `event.data.result.metadata.audio_duration == 75.5 && event.id == "e1"`, succeeded, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := sinkexpr.CompileWhen(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Match(context.Background(), sinkexpr.NewEvent(tc.in))
			if got != tc.want {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestBodyAndText(t *testing.T) {
	ev := sinkexpr.NewEvent(sinkexpr.Input{ID: "e1", Type: "job.succeeded", Data: []byte(succeededData)})
	body, err := sinkexpr.CompileBody(`{"id": event.id, "text": event.data.result.transcription.full_transcript, "n": 2, "langs": event.data.result.transcription.languages}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := body.JSON(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"e1","langs":["fr"],"n":2,"text":"bonjour"}`; string(got) != want {
		t.Errorf("body = %s, want %s", got, want)
	}
	h, err := sinkexpr.CompileHeader(`"lang-" + event.data.result.transcription.languages[0]`)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := h.Text(context.Background(), ev); err != nil || s != "lang-fr" {
		t.Errorf("header = %q, %v, want lang-fr", s, err)
	}
	whole, err := sinkexpr.CompileBody(`event`)
	if err != nil {
		t.Fatal(err)
	}
	small := sinkexpr.NewEvent(sinkexpr.Input{ID: "e3", Type: "job.failed", JobID: "j3", Kind: "pre-recorded",
		CustomMetadata: []byte(`{"team":"media"}`), Data: []byte(`{"id":"j3"}`)})
	if got, err := whole.JSON(context.Background(), small); err != nil || string(got) != `{"category":"","created_at":"","custom_metadata":{"team":"media"},"data":{"id":"j3"},"id":"e3","job_id":"j3","kind":"pre-recorded","type":"job.failed"}` {
		t.Errorf("whole event = %s, %v", got, err)
	}
	missing, err := sinkexpr.CompileBody(`event.data.nothing`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.JSON(context.Background(), ev); err == nil || !strings.Contains(err.Error(), "no such key: nothing") {
		t.Errorf("missing field: %v", err)
	}
}

func TestCostLimit(t *testing.T) {
	// A string operation costs in proportion to the text it reads: a tenth of a unit a byte.
	big := `{"s":"` + strings.Repeat("a", 12*sinkexpr.CostLimit) + `"}`
	ev := sinkexpr.NewEvent(sinkexpr.Input{Type: "job.succeeded", Data: []byte(big)})
	p, err := sinkexpr.CompileWhen(`event.data.s.contains("b")`)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := p.Match(context.Background(), ev)
	if ok || err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("Match = %v, %v, want the cost limit", ok, err)
	}
}
