package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/asticode/go-astisub"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/api/apitest"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/subtitles"
)

// TestDemoRunsTheWholeLoop runs the demo as `make demo` does, with the scripted engine (its
// words are the sample's script, so the subtitles are known) and without real-time pacing,
// and checks every output it announces.
func TestDemoRunsTheWholeLoop(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := runDemo(context.Background(), &out, demoOptions{outDir: dir, engine: "scripted"})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	t.Logf("demo output:\n%s", out.String())
	if rep.JobID == "" || rep.LiveID == "" {
		t.Fatalf("report without ids: %+v", rep)
	}

	// The subtitles: well-formed, no hard-rule violation, and the sample's first words first.
	profile, err := subtitles.ProfileByName(subtitles.NetflixAdult)
	if err != nil {
		t.Fatal(err)
	}
	srt := readFile(t, filepath.Join(dir, "sample.srt"))
	if err := subtitles.ValidateSRT(srt); err != nil {
		t.Errorf("sample.srt: %v", err)
	}
	if !strings.HasPrefix(string(srt), "1\n00:00:00,330 --> ") || !strings.HasPrefix(strings.SplitN(string(srt), "\n", 4)[2], "Welcome to scribehook") {
		t.Errorf("sample.srt starts %q", srt[:min(len(srt), 80)])
	}
	vtt := readFile(t, filepath.Join(dir, "sample.vtt"))
	if err := subtitles.ValidateVTT(vtt); err != nil {
		t.Errorf("sample.vtt: %v", err)
	}
	if !strings.HasPrefix(string(vtt), "WEBVTT\n") || !strings.Contains(string(vtt), "\n00:00:00.330 --> ") || !strings.Contains(string(vtt), "Welcome to scribehook\n") {
		t.Errorf("sample.vtt starts %q", vtt[:min(len(vtt), 80)])
	}
	cues, err := readCues(astisub.ReadFromSRT, srt)
	if err != nil {
		t.Fatal(err)
	}
	if len(cues) == 0 || cues[0].Text() != "Welcome to scribehook" || cues[0].Start.Milliseconds() != 330 {
		t.Errorf("first cue = %+v", cues[:min(len(cues), 1)])
	}
	if hard := subtitles.Check(cues, profile).Hard(); len(hard) > 0 {
		t.Errorf("sample.srt breaks hard rules: %v", hard)
	}
	vttCues, err := readCues(astisub.ReadFromWebVTT, vtt)
	if err != nil {
		t.Fatal(err)
	}
	if hard := subtitles.Check(vttCues, profile).Hard(); len(hard) > 0 || len(vttCues) != len(cues) {
		t.Errorf("sample.vtt: %d cues (SRT %d), hard violations %v", len(vttCues), len(cues), hard)
	}
	// They are the artifacts serve rendered, byte for byte.
	for _, name := range []string{"subtitles.en.srt", "subtitles.en.vtt"} {
		b, err := os.ReadFile(filepath.Join(dir, "artifacts", rep.JobID, name))
		if err != nil {
			t.Fatalf("artifact %s: %v", name, err)
		}
		if copied := map[string][]byte{"subtitles.en.srt": srt, "subtitles.en.vtt": vtt}[name]; !bytes.Equal(b, copied) {
			t.Errorf("the copy of %s differs from the artifact", name)
		}
	}

	// The file sink: the job's transcript and its events; the session's events.
	transcript, err := os.ReadFile(filepath.Join(dir, "sink", rep.JobID, "transcript.txt"))
	if err != nil || !strings.Contains(string(transcript), "Welcome to scribehook") {
		t.Errorf("sink transcript.txt = %q, %v", transcript, err)
	}
	for _, id := range []string{rep.JobID, rep.LiveID} {
		if events, err := os.ReadDir(filepath.Join(dir, "sink", id, "events")); err != nil || len(events) == 0 {
			t.Errorf("sink events of %s: %d files, %v", id, len(events), err)
		}
	}

	// The log sink: JSON lines, one event each, the job's and the session's.
	f, err := os.Open(filepath.Join(dir, "events.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	types := map[string]int{} // "<job or session id> <type>"
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		lines++
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("events.log line %d is not an event: %v: %s", lines, err, sc.Text())
		}
		types[ev.JobID+" "+ev.Type]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	live := 0
	for key, n := range types {
		if strings.HasPrefix(key, rep.LiveID+" live.") {
			live += n
		}
	}
	// The session, once ended, has a transcript: serve announces it and its subtitles too.
	job := rep.JobID + " "
	if types[job+api.EventJobSucceeded] != 1 || types[job+api.EventSubtitlesReady] != 1 || live == 0 ||
		types[rep.LiveID+" live.transcript"] != rep.LiveFinals || lines != rep.Events {
		t.Errorf("events.log: %d lines (report %d), types %v", lines, rep.Events, types)
	}

	// The store: the job done with its result, the session done with its messages.
	st := teststore.OpenSQLite(t, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	rec, err := st.GetJob(context.Background(), rep.JobID)
	if err != nil || rec.Job.Status != api.StatusDone || len(rec.Job.Result) == 0 || apitest.MustResult(&rec.Job).Transcription == nil {
		t.Fatalf("stored job: %+v, %v", rec.Job, err)
	}
	if got := apitest.MustResult(&rec.Job).Transcription.Utterances[0].Text; got != "Welcome to scribehook" {
		t.Errorf("first utterance = %q", got)
	}
	session, err := st.GetJob(context.Background(), rep.LiveID)
	if err != nil || session.Job.Status != api.StatusDone {
		t.Errorf("stored session: %s, %v", session.Job.Status, err)
	}
	msgs, err := st.LiveMessages(context.Background(), rep.LiveID, 0, 10000)
	if err != nil || len(msgs) == 0 || len(msgs) != rep.LiveMessages {
		t.Errorf("stored %d live messages (report %d), %v", len(msgs), rep.LiveMessages, err)
	}
	finals := 0
	for _, m := range msgs {
		if m.Category == api.CategoryFinalTranscripts {
			finals++
		}
	}
	if finals == 0 || finals != rep.LiveFinals {
		t.Errorf("stored %d final transcripts, %d arrived over the WebSocket", finals, rep.LiveFinals)
	}

	// What the demo said.
	for _, want := range []string{
		"engine: scripted", "[  2.15–  5.56] Callbacks arrive are stored and become subtitles",
		"check: PASS", "final [", "outputs:", filepath.Join(dir, "sample.srt"), filepath.Join(dir, "events.log"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestDemoUnknownEngineSaysWhatTheBuildHas(t *testing.T) {
	_, err := runDemo(context.Background(), &bytes.Buffer{}, demoOptions{outDir: t.TempDir(), engine: "nope"})
	if err == nil || !strings.Contains(err.Error(), "this build has: ") || !strings.Contains(err.Error(), "scripted") {
		t.Fatalf("err = %v", err)
	}
}

// namedEngine is the scripted engine under another name: a stand-in for the real engine,
// which only builds with the pocketsphinx tag and its C libraries.
type namedEngine struct {
	engine.Engine
	name string
}

func (e namedEngine) Name() string { return e.name }

func TestDemoEnginePicksTheBestOfTheBuild(t *testing.T) {
	skipWithTheRealEngine(t)
	withReal := func(start error) *engine.Registry {
		reg := engine.NewRegistry()
		err := reg.Register(pocketsphinxEngine, func() (engine.Engine, error) {
			if start != nil {
				return nil, start
			}
			return namedEngine{engine.NewScripted(engine.ScriptedOptions{}), pocketsphinxEngine}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	noEngine := "scripted (this build has no speech engine: build with -tags pocketsphinx and install libpocketsphinx-dev pocketsphinx-en-us for real recognition)"
	if builtWithTag(pocketsphinxEngine) {
		noEngine = "scripted (built with -tags pocketsphinx, but this source tree has no pocketsphinx engine yet)"
	}
	for _, tc := range []struct {
		name, flag, want, line string
		reg                    *engine.Registry
	}{
		{"real engine built in", engineAuto, pocketsphinxEngine, "pocketsphinx (offline speech recognition)", withReal(nil)},
		{"no real engine", engineAuto, engine.ScriptedName, noEngine, engine.NewRegistry()},
		{"real engine without its model", "", engine.ScriptedName, "scripted (pocketsphinx is built in but did not start: engine: start \"pocketsphinx\": no model; install pocketsphinx-en-us)", withReal(errors.New("no model"))},
		{"scripted chosen", engine.ScriptedName, engine.ScriptedName, "scripted (chosen with --engine; this build also has pocketsphinx)", withReal(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, line, err := demoEngine(tc.reg, tc.flag)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.Name() != tc.want || line != tc.line {
				t.Errorf("engine %s, line %q", e.Name(), line)
			}
		})
	}
	if _, _, err := demoEngine(withReal(errors.New("no model")), pocketsphinxEngine); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("an explicit engine that cannot start: err = %v", err)
	}
}

// TestDemoWithAStandInForTheRealEngine runs the demo the way a pocketsphinx build does: the
// engine is picked automatically and reads no sidecar, so the words come from the audio alone
// (here the scripted engine's made-up words) and the subtitles must still pass the checker.
func TestDemoWithAStandInForTheRealEngine(t *testing.T) {
	skipWithTheRealEngine(t)
	reg := engine.NewRegistry()
	if err := reg.Register(pocketsphinxEngine, func() (engine.Engine, error) {
		return namedEngine{engine.NewScripted(engine.ScriptedOptions{}), pocketsphinxEngine}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := runDemo(context.Background(), &out, demoOptions{outDir: t.TempDir(), engines: reg})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if rep.Engine != pocketsphinxEngine || !strings.Contains(out.String(), "engine: pocketsphinx (offline speech recognition)") ||
		!strings.Contains(out.String(), "check: PASS") || strings.Contains(out.String(), "Welcome to scribehook") {
		t.Errorf("engine %s; output:\n%s", rep.Engine, out.String())
	}
}

// skipWithTheRealEngine skips tests that register a stand-in under the real engine's name:
// a build that has the real engine cannot take a second one, and runs
// TestDemoWithTheRealEngine instead.
func skipWithTheRealEngine(t *testing.T) {
	t.Helper()
	if slices.Contains(engine.NewRegistry().Names(), pocketsphinxEngine) {
		t.Skip("this build has the real engine")
	}
}

// TestDemoWithTheRealEngine runs the demo as `make demo` does on a machine with pocketsphinx
// (go test -tags pocketsphinx): the real engine is picked, transcribes the sample from its
// audio alone, and the subtitles of real words pass the checker.
func TestDemoWithTheRealEngine(t *testing.T) {
	if !slices.Contains(engine.NewRegistry().Names(), pocketsphinxEngine) {
		t.Skip("this build has no pocketsphinx engine (go test -tags pocketsphinx, with libpocketsphinx-dev and pocketsphinx-en-us)")
	}
	var out bytes.Buffer
	rep, err := runDemo(context.Background(), &out, demoOptions{outDir: t.TempDir()})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	if rep.Engine != pocketsphinxEngine || rep.LiveFinals == 0 || !strings.Contains(out.String(), "check: PASS") {
		t.Errorf("engine %s, %d finals", rep.Engine, rep.LiveFinals)
	}
	// The engine should get most of the sample's words (TestDemoHearsItsSample measures its
	// word error rate).
	srt := readFile(t, rep.SRT)
	text := strings.ToLower(string(srt))
	found := 0
	for _, w := range []string{"welcome", "callbacks", "stored", "subtitles", "live", "messages", "forwarded", "systems", "nothing", "lost", "duplicated"} {
		if strings.Contains(text, w) {
			found++
		}
	}
	if found < 6 {
		t.Errorf("only %d of 11 known words in the subtitles:\n%s", found, srt)
	}
}
