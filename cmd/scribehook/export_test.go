package main

import (
	"context"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/subtitles"
)

func TestExportRendersTheStoredResult(t *testing.T) {
	l := newLoop(t, sandbox.Faults{})
	created, err := l.service.CreatePreRecorded(context.Background(), api.PreRecordedRequest{
		AudioURL: l.files.URL + "/sample.wav", Callback: api.Bool(true),
		CallbackConfig: &api.CallbackConfig{URL: l.callbackURL(api.KindPreRecorded)},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.waitJob(created.ID)
	t.Setenv("SCRIBEHOOK_STORE_DSN", l.dbPath)
	run := func(args ...string) (string, string, error) { return runCmd(context.Background(), nil, args...) }
	srt, report, err := run("export", "--job", created.ID, "--format", "srt", "--check")
	if err != nil {
		t.Fatalf("export: %v\n%s", err, report)
	}
	if err := subtitles.ValidateSRT([]byte(srt)); err != nil {
		t.Fatalf("invalid SRT: %v\n%s", err, srt)
	}
	if !strings.HasPrefix(srt, "1\n00:00:00,330 --> ") || !strings.Contains(srt, "Welcome to scribehook") {
		t.Errorf("srt = %q", srt[:min(len(srt), 120)])
	}
	if !strings.Contains(report, "cues,") || !strings.Contains(report, "rates: cpl") {
		t.Errorf("report = %q", report)
	}
	vtt, _, err := run("export", "--job", created.ID, "--format", "vtt", "--max-chars", "20")
	if err != nil {
		t.Fatal(err)
	}
	if err := subtitles.ValidateVTT([]byte(vtt)); err != nil {
		t.Fatalf("invalid VTT: %v", err)
	}
	for _, line := range strings.Split(vtt, "\n") {
		if strings.Contains(line, "-->") || line == "" || line == "WEBVTT" {
			continue
		}
		// The voice tag is markup, not visible text.
		if i := strings.Index(line, ">"); strings.HasPrefix(line, "<v ") && i > 0 {
			line = line[i+1:]
		}
		if n := len([]rune(line)); n > 20 && !strings.HasPrefix(line, "NOTE") {
			t.Errorf("line %q has %d characters, the override says 20", line, n)
		}
	}
	if _, _, err := run("export", "--job", created.ID, "--format", "docx"); err == nil {
		t.Error("unknown format accepted")
	}
	if _, _, err := run("export", "--job", created.ID, "--lang", "fr"); err == nil || !strings.Contains(err.Error(), `no track in language "fr"`) {
		t.Errorf("missing language: %v", err)
	}
}
