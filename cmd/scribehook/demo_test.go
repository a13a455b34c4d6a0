package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemoRunsTheWholeLoop(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runDemo(context.Background(), &out, demoOptions{outDir: dir, engine: "scripted"}); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	srt, err := os.ReadFile(filepath.Join(dir, "sample.srt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(srt), "1\n00:00:00,720 --> 00:00:01,724\nWelcome to scribehook\n") {
		t.Errorf("sample.srt starts %q", srt[:min(len(srt), 80)])
	}
	vtt, _ := os.ReadFile(filepath.Join(dir, "sample.vtt"))
	if !strings.HasPrefix(string(vtt), "WEBVTT\n\n00:00:00.720 --> 00:00:01.724\nWelcome to scribehook\n") {
		t.Errorf("sample.vtt starts %q", vtt[:min(len(vtt), 80)])
	}
	// One job callback plus the live callbacks of the default flags: 4 lifecycle, 4 finals,
	// post_transcript and post_final_transcript.
	entries, _ := os.ReadDir(filepath.Join(dir, "callbacks"))
	if len(entries) != 11 || entries[0].Name() != "0001-transcription_success.json" || entries[10].Name() != "0011-live_end_session.json" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("callbacks = %v", names)
	}
	for _, want := range []string{"[  2.96–  6.68] Callbacks arrive are stored and become subtitles", "live session", "subtitles  " + filepath.Join(dir, "sample.srt")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
