package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
)

func TestNewKinds(t *testing.T) {
	dir := t.TempDir()
	deps := Deps{Logger: logx.Discard(), Stdout: io.Discard}
	for _, spec := range []Spec{
		{Name: "files", Kind: KindFile, Dir: dir},
		{Name: "hook", Kind: KindWebhook, URL: "https://hooks.example.com/x", SigningSecrets: []string{secretNew}},
		{Name: "stdout", Kind: KindLog},
	} {
		s, err := New(spec, deps)
		if err != nil {
			t.Errorf("New(%s): %v", spec.Kind, err)
			continue
		}
		if s.Name() != spec.Name {
			t.Errorf("Name() = %q, want %q", s.Name(), spec.Name)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close(%s): %v", spec.Kind, err)
		}
	}
}

func TestNewErrors(t *testing.T) {
	deps := Deps{Logger: logx.Discard()}
	tests := []struct {
		spec  Spec
		field string
		msg   string
	}{
		{Spec{Kind: KindLog}, "Name", "is required"},
		{Spec{Name: "x"}, "Kind", "is required"},
		// This test binary links the built-in kinds only (and TestRegisterKind's), as a program
		// that imports neither sinks/redissink nor sinks/natssink.
		{Spec{Name: "x", Kind: "kafka"}, "Kind", `"kafka" is not file, webhook, log`},
		{Spec{Name: "x", Kind: KindRedisStream}, "Kind", `add import _ "github.com/scribehook/scribehook/sinks/redissink"`},
		{Spec{Name: "x", Kind: KindNATS}, "Kind", `add import _ "github.com/scribehook/scribehook/sinks/natssink"`},
		{Spec{Name: "x", Kind: KindLog, Filter: Filter{Categories: []api.MessageCategory{"finals"}}}, "Filter", "finals"},
		{Spec{Name: "x", Kind: KindLog, Filter: Filter{CustomMetadata: json.RawMessage(`{"team":`)}}, "Filter.CustomMetadata", "must be a JSON object"},
		{Spec{Name: "x", Kind: KindLog, Filter: Filter{CustomMetadata: json.RawMessage(`["team"]`)}}, "Filter.CustomMetadata", "must be a JSON object"},
		{Spec{Name: "x", Kind: KindLog, Filter: Filter{CustomMetadata: json.RawMessage(`null`)}}, "Filter.CustomMetadata", "must be a JSON object"},
		{Spec{Name: "x", Kind: KindFile}, "Dir", "is required for a file sink"},
		{Spec{Name: "x", Kind: KindWebhook}, "URL", "is required for a webhook sink"},
		{Spec{Name: "x", Kind: KindWebhook, URL: "/relative"}, "URL", "absolute"},
		{Spec{Name: "x", Kind: KindWebhook, URL: "http://exa mple.com/?token=s3cr3t"}, "URL", "not a URL"},
		{Spec{Name: "x", Kind: KindWebhook, URL: "ftp://example.com/"}, "URL", `scheme "ftp"`},
		{Spec{Name: "x", Kind: KindWebhook, URL: "http://10.0.0.1/"}, "URL", "10.0.0.0/8, private network"},
		{Spec{Name: "x", Kind: KindWebhook, URL: "http://example.com/", Allow: []string{"10.0.0.0/99"}}, "Allow", "allow[0]"},
		{Spec{Name: "x", Kind: KindWebhook, URL: "http://example.com/", SigningSecrets: []string{""}}, "SigningSecrets", "secret is empty"},
		{Spec{Name: "x", Kind: KindWebhook, URL: "http://example.com/", Timeout: -1}, "Timeout", "negative"},
	}
	for _, tt := range tests {
		_, err := New(tt.spec, deps)
		var se *SpecError
		if !errors.As(err, &se) || se.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("New(%+v) = %v, want a SpecError on %s saying %q", tt.spec, err, tt.field, tt.msg)
			continue
		}
		if tt.spec.Name != "" && !strings.HasPrefix(err.Error(), `sink "x": `+tt.field+": ") {
			t.Errorf("error %q does not start with the sink and the field", err)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error quotes the URL: %v", err)
		}
	}
}

func TestLogSink(t *testing.T) {
	var out strings.Builder
	s, err := New(Spec{Name: "stdout", Kind: KindLog}, Deps{Stdout: &out, Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ev := testEvent()
	ev2 := ev
	ev2.ID, ev2.Type, ev2.Category, ev2.CustomMetadata = "ev-2", api.EventJobSucceeded, "", nil
	for _, e := range []api.Event{ev, ev2} {
		if err := s.Deliver(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"id":"0b9c7f3e-5a61-5c55-9d0e-5a3e1f0c2b11","type":"live.transcript","created_at":"2026-11-20T10:11:12.345Z",` +
		`"job_id":"45463597-20b7-4af7-b3b3-f5fb778203ab","kind":"live","category":"final_transcripts","custom_metadata":{"team":"a"},` +
		`"data":{"utterance":{"text":"Tom & Jerry <3"}}}` + "\n" +
		`{"id":"ev-2","type":"job.succeeded","created_at":"2026-11-20T10:11:12.345Z",` +
		`"job_id":"45463597-20b7-4af7-b3b3-f5fb778203ab","kind":"live","data":{"utterance":{"text":"Tom & Jerry <3"}}}` + "\n"
	if out.String() != want {
		t.Errorf("log lines\n%s\nwant\n%s", out.String(), want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Deliver(ctx, ev); !errors.Is(err, context.Canceled) {
		t.Errorf("Deliver on a cancelled context = %v", err)
	}
}

// Concurrent deliveries give whole lines, never interleaved.
func TestLogSinkConcurrent(t *testing.T) {
	var out unsyncedWriter
	s := NewLog(Spec{Name: "stdout"}, Deps{Stdout: &out})
	done := make(chan struct{})
	for i := 0; i < 8; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := 0; j < 50; j++ {
				_ = s.Deliver(context.Background(), testEvent())
			}
		}()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		var ev api.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
	}
}

// unsyncedWriter has no lock of its own and writes in two halves, so that unserialised writers
// would interleave; the race detector sees any unsynchronised use.
type unsyncedWriter struct {
	b strings.Builder
}

func (l *unsyncedWriter) Write(p []byte) (int, error) {
	half := len(p) / 2
	l.b.Write(p[:half])
	l.b.Write(p[half:])
	return len(p), nil
}

func (l *unsyncedWriter) String() string { return l.b.String() }
