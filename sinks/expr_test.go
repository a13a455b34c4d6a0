package sinks

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/signature"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

func mustCompile(t *testing.T, src string, out sinkexpr.Output) *sinkexpr.Program {
	t.Helper()
	p, err := sinkexpr.Compile(src, out)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The projected body is what is sent and signed; the configured headers are added, the
// signature's headers stay the sink's own.
func TestWebhookBodyAndHeaders(t *testing.T) {
	rc, url := newReceiver(t, http.StatusOK)
	spec := loopbackSpec(url+"/hook", secretNew)
	spec.Body = mustCompile(t, `{"id": event.id, "text": event.data.utterance.text}`, sinkexpr.Value)
	spec.Headers = map[string]*sinkexpr.Program{
		"X-Team":     mustCompile(t, `event.custom_metadata.team`, sinkexpr.String),
		"X-Category": mustCompile(t, `event.category`, sinkexpr.String),
	}
	s := newTestWebhook(t, spec, Deps{})
	ev := testEvent()
	got := rc.deliver(t, s, ev)
	if want := `{"id":"` + ev.ID + `","text":"Tom & Jerry <3"}`; string(got.body) != want {
		t.Errorf("body = %s, want %s", got.body, want)
	}
	if got.header.Get("X-Team") != "a" || got.header.Get("X-Category") != "final_transcripts" {
		t.Errorf("headers = %v", got.header)
	}
	if got.header.Get("Content-Type") != "application/json" || got.header.Get("Webhook-Id") != ev.ID {
		t.Errorf("the sink's own headers = %v", got.header)
	}
	v, err := signature.NewVerifier(secretNew)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(got.body, got.header); err != nil {
		t.Errorf("signature over the projected body: %v", err)
	}
}

// A body or header that fails over the event (a field it lacks) fails the delivery for good:
// it is dead-lettered with the expression's error.
func TestWebhookProjectionErrorIsPermanent(t *testing.T) {
	rc, url := newReceiver(t, http.StatusOK)
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"body", func(s *Spec) {
			s.Body = mustCompile(t, `{"n": event.data.result.metadata.audio_duration}`, sinkexpr.Value)
		}, "body: "},
		{"header", func(s *Spec) {
			s.Headers = map[string]*sinkexpr.Program{"X-Lang": mustCompile(t, `event.data.language`, sinkexpr.String)}
		}, "headers[X-Lang]: "},
		{"header of another type", func(s *Spec) {
			s.Headers = map[string]*sinkexpr.Program{"X-N": mustCompile(t, `event.data.utterance`, sinkexpr.String)}
		}, "not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := loopbackSpec(url + "/hook")
			tc.edit(&spec)
			s := newTestWebhook(t, spec, Deps{})
			err := s.Deliver(context.Background(), testEvent())
			var f *Failure
			if !errors.As(err, &f) || !f.Permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Deliver = %v, want a permanent failure containing %q", err, tc.want)
			}
		})
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.reqs) != 0 {
		t.Errorf("%d requests sent, want none", len(rc.reqs))
	}
}

func TestNewRefusesProjectionOutsideWebhooks(t *testing.T) {
	body := mustCompile(t, `event.data`, sinkexpr.Value)
	for _, tc := range []struct {
		spec  Spec
		field string
	}{
		{Spec{Name: "f", Kind: KindFile, Dir: t.TempDir(), Body: body}, "Body"},
		{Spec{Name: "l", Kind: KindLog, Headers: map[string]*sinkexpr.Program{"X-A": body}}, "Headers"},
		{Spec{Name: "h", Kind: KindWebhook, URL: "https://example.com/h", Headers: map[string]*sinkexpr.Program{"Webhook-Timestamp": body}}, "Headers"},
	} {
		_, err := New(tc.spec, Deps{})
		var se *SpecError
		if !errors.As(err, &se) || se.Field != tc.field || se.Sink != tc.spec.Name {
			t.Errorf("New(%s) = %v, want a SpecError on %s", tc.spec.Name, err, tc.field)
		}
	}
}

// Check evaluates When after the static fields, and says why an evaluation failed; the views
// of one event share its decoded data.
func TestFilterWhen(t *testing.T) {
	ev := testEvent()
	v := ViewOf(&ev)
	for _, tc := range []struct {
		name    string
		f       Filter
		want    bool
		wantErr string
	}{
		{"no when", Filter{Events: []string{"live.*"}}, true, ""},
		{"when true", Filter{Events: []string{"live.*"}, When: mustCompile(t, `event.data.utterance.text.contains("Jerry")`, sinkexpr.Bool)}, true, ""},
		{"when false", Filter{When: mustCompile(t, `event.data.utterance.text.contains("Spike")`, sinkexpr.Bool)}, false, ""},
		{"static fields first", Filter{Events: []string{"job.*"}, When: mustCompile(t, `event.data.nothing`, sinkexpr.Bool)}, false, ""},
		{"missing field", Filter{When: mustCompile(t, `event.data.nothing == 1`, sinkexpr.Bool)}, false, "no such key: nothing"},
		{"failed to compile", Filter{When: sinkexpr.Failed("x(", errors.New("syntax"))}, false, "did not compile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.Check(context.Background(), v)
			if got != tc.want || (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Check = %v, %v; want %v, %q", got, err, tc.want, tc.wantErr)
			}
			if m := tc.f.Match(&ev); m != tc.want {
				t.Errorf("Match = %v, want %v", m, tc.want)
			}
		})
	}
}
