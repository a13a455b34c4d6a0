package configs

import (
	"strings"
	"testing"
)

const exprSinks = `sinks:
  - name: longjobs
    kind: webhook
    url: https://example.com/hook
    events: [job.succeeded]
    when: 'event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0'
    body: '{"id": event.id, "text": event.data.result.transcription.full_transcript}'
    headers:
      X-Team: 'event.custom_metadata.team'
      X-Event-Type: 'event.type'
`

func TestSinkExpressionsLoad(t *testing.T) {
	cfg, err := Load(writeFile(t, exprSinks), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Sinks[0]
	if s.When != `event.type == "job.succeeded" && event.data.result.metadata.audio_duration > 60.0` ||
		s.Body != `{"id": event.id, "text": event.data.result.transcription.full_transcript}` ||
		len(s.Headers) != 2 || s.Headers["X-Team"] != "event.custom_metadata.team" || s.Headers["X-Event-Type"] != "event.type" {
		t.Fatalf("sink = %+v", s)
	}
}

func TestSinkExpressionsRefusedWithTheSinkName(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"undeclared", `
  - {name: log, kind: log, events: ["*"]}
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], when: 'evnt.type == "job.succeeded"'}
`, `sinks[1] (captions).when does not compile: ERROR: <input>:1:1: undeclared reference to 'evnt'`},
		{"unknown field", `
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], when: 'event.tpye == "x"'}
`, `sinks[0] (captions).when does not compile: event has no field 'tpye'`},
		{"not a bool", `
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], when: 'event.id + "x"'}
`, `sinks[0] (captions).when does not compile: must give a bool, gives string`},
		{"a string field as a when", `
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], when: 'event.job_id'}
`, `sinks[0] (captions).when does not compile: must give a bool, gives string`},
		{"a string field against an int", `
  - {name: log, kind: log, events: ["*"], when: 'event.kind == 1'}
`, `sinks[0] (log).when does not compile: ERROR: <input>:1:12: found no matching overload for '_==_' applied to '(string, int)'`},
		{"body syntax", `
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], body: '{"id": }'}
`, `sinks[0] (captions).body does not compile: ERROR: <input>:1:8: Syntax error`},
		{"body of a file sink", `
  - {name: archive, kind: file, dir: /tmp/x, events: ["*"], body: 'event.data'}
`, `sinks[0] (archive).body is for webhook sinks only (kind file)`},
		{"headers of a log sink", `
  - {name: l, kind: log, events: ["*"], headers: {X-A: '"a"'}}
`, `sinks[0] (l).headers are for webhook sinks only (kind log)`},
		{"signature header", `
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], headers: {Webhook-Signature: '"v1,x"'}}
`, `sinks[0] (captions).headers[Webhook-Signature] is refused: "Webhook-Signature" is set by the webhook sink itself`},
		{"content type", `
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], headers: {content-type: '"text/plain"'}}
`, `sinks[0] (captions).headers[content-type] is refused`},
		{"header not a string", `
  - {name: captions, kind: webhook, url: "https://example.com/h", events: ["*"], headers: {X-N: '1 + 1'}}
`, `sinks[0] (captions).headers[X-N] does not compile: must give a string, gives int`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "sinks:"+tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}
