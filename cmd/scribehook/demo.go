package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asticode/go-astisub"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
	"github.com/scribehook/scribehook/subtitles"
)

// demodata holds the sample recording (made with flite by scripts/make-sample.py) and its
// sidecar, the words the scripted engine returns for it.
//
//go:embed demodata/sample.wav demodata/sample.wav.json
var demodata embed.FS

// demoVocabulary are the sample's words that pocketsphinx's dictionary lacks (the list of
// scripts/make-sample.py). The demo sends them as the custom vocabulary of its job and its live
// session, as a user would for product names: without them the engine cannot recognise them.
var demoVocabulary = []string{"scribehook", "callbacks"}

// demoVocabularyTerms is demoVocabulary in the request's form.
func demoVocabularyTerms() []api.VocabularyTerm {
	terms := make([]api.VocabularyTerm, 0, len(demoVocabulary))
	for _, w := range demoVocabulary {
		terms = append(terms, api.VocabularyTerm{Value: w, Plain: true})
	}
	return terms
}

const (
	// engineAuto picks the best engine of the build.
	engineAuto = "auto"
	// pocketsphinxEngine is the real engine's registry name. The engine package only defines it
	// in builds with the pocketsphinx tag, so the demo names it itself.
	pocketsphinxEngine = "pocketsphinx"
	// The names of the demo's two sinks, as they appear in the store's delivery queues.
	demoFileSink = "files"
	demoLogSink  = "events"
	// Timeouts of the demo's waits. They are generous: a slow machine decoding with
	// pocketsphinx under -race must not fail the demo, and a hung one must not hang it.
	demoJobTimeout   = 2 * time.Minute
	demoDrainTimeout = 30 * time.Second
	demoPollEvery    = 100 * time.Millisecond
	demoStopTimeout  = 20 * time.Second
)

func newDemoCmd() *cobra.Command {
	var (
		outDir   string
		fast     bool
		engineNm string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole loop on this machine: sandbox, serve, a job with its callback, subtitles, a live session",
		Long: `Runs, in one process on loopback ports and with the built-in defaults (no configuration file):
the sandbox (the service) with the best speech engine of this build, the real "serve" (SQLite
store, subtitles, a file sink and a log sink), a pre-recorded job for a bundled recording whose
callback comes back to serve, the job's SRT and WebVTT with the subtitle checker's verdict, then a
live session streaming the same recording in real time with its final transcripts as they
arrive. At the end it prints where every output is.

Outputs go under --out: scribehook.db, artifacts/, sink/, events.log (the log sink), demo.log
(the logs of serve and the sandbox), sample.srt and sample.vtt. A second run adds to them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := runDemo(cmd.Context(), cmd.OutOrStdout(), demoOptions{outDir: outDir, realtime: !fast, engine: engineNm})
			return err
		},
	}
	cmd.Flags().StringVar(&outDir, "out", filepath.Join("out", "demo"), "directory for the outputs")
	cmd.Flags().BoolVar(&fast, "fast", false, "stream the live session as fast as possible instead of in real time")
	cmd.Flags().StringVar(&engineNm, "engine", engineAuto, "speech engine of the sandbox (auto: pocketsphinx when this build has it, else scripted)")
	return cmd
}

type demoOptions struct {
	outDir   string
	realtime bool
	engine   string // engineAuto or "" for the best of the build
	// engines is where the engine comes from; nil is the build's own (engine.NewRegistry).
	// Tests put a stand-in of the real engine here.
	engines *engine.Registry
}

// demoReport is what a run produced, for the tests: the paths are those of demoPaths.
type demoReport struct {
	Engine       string
	JobID        string
	LiveID       string
	SRT          string // the copy of the job's SRT at the top of the output directory
	LiveMessages int    // the live session's messages in the store
	LiveFinals   int    // final transcripts received over the WebSocket
	Events       int    // lines the log sink wrote during this run
}

// demoPaths are the outputs under the output directory.
type demoPaths struct {
	dir, db, artifacts, sink, events, log, srt, vtt string
}

func newDemoPaths(dir string) demoPaths {
	return demoPaths{
		dir: dir, db: filepath.Join(dir, "scribehook.db"), artifacts: filepath.Join(dir, "artifacts"),
		sink: filepath.Join(dir, "sink"), events: filepath.Join(dir, "events.log"), log: filepath.Join(dir, "demo.log"),
		srt: filepath.Join(dir, "sample.srt"), vtt: filepath.Join(dir, "sample.vtt"),
	}
}

// runDemo runs the sandbox and the real serve in this process, submits the sample as a
// pre-recorded job exactly as `submit` does, waits until serve has stored its callback, checks
// the subtitles serve rendered, streams the sample to a live session like `live`, and stops
// everything (serve first, so that nothing the sandbox still sends is half-processed).
func runDemo(ctx context.Context, w io.Writer, opts demoOptions) (rep demoReport, err error) {
	// A ceiling for the whole run, far above a slow machine's minute: the demo must end.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// The live session's messages arrive on the stream's reader goroutine: one lock keeps
	// every line of the demo whole.
	out := &lockedWriter{w: w}
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	p := newDemoPaths(opts.outDir)
	rep = demoReport{SRT: p.srt}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return rep, fmt.Errorf("create the output directory: %w", err)
	}

	// Everything started is stopped in reverse order, on success and on failure alike.
	var td teardown
	defer func() {
		if terr := td.run(); terr != nil && err == nil {
			err = terr
		}
	}()

	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return rep, fmt.Errorf("open the demo's log: %w", err)
	}
	td.add(logFile.Close)
	// serve's and the sandbox's logs go to a file so that the demo's own lines stay readable;
	// a failure points there.
	logger := logrus.New()
	logger.SetOutput(logFile)
	logger.SetLevel(logrus.InfoLevel)
	log := logrus.NewEntry(logger).WithField("run", time.Now().UTC().Format(time.RFC3339))
	fail := func(err error) error {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted: %w", err)
		}
		return fmt.Errorf("%w (logs of serve and the sandbox: %s)", err, p.log)
	}

	say("scribehook demo: the service (sandbox), serve, a pre-recorded job and a live session in one process")
	say("outputs: %s", p.dir)

	// The sandbox, with the best engine this build has.
	engines := opts.engines
	if engines == nil {
		engines = engine.NewRegistry()
	}
	eng, engineLine, err := demoEngine(engines, opts.engine)
	if err != nil {
		return rep, err
	}
	td.add(eng.Close) // after the sandbox: its sessions hold the engine's decoders
	rep.Engine = eng.Name()
	say("engine: %s", engineLine)

	wav, err := demodata.ReadFile("demodata/sample.wav")
	if err != nil {
		return rep, fmt.Errorf("read the bundled sample: %w", err)
	}
	head, err := audio.ParseHeader(wav)
	if err != nil {
		return rep, fmt.Errorf("read the bundled sample's WAV header: %w", err)
	}
	sampleSeconds := float64(len(wav)-int(head.DataOffset)) / float64(head.Format.SampleRate*head.Format.FrameSize())
	files := http.NewServeMux()
	files.HandleFunc("GET /sample.wav", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(wav) })
	if eng.Name() == engine.ScriptedName {
		// Only the scripted engine reads a sidecar; leaving it out for a real engine makes it
		// plain that its words come from the audio.
		sidecar, err := demodata.ReadFile("demodata/sample.wav.json")
		if err != nil {
			return rep, fmt.Errorf("read the bundled sample's sidecar: %w", err)
		}
		files.HandleFunc("GET /sample.wav.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(sidecar) })
	}
	filesURL, stopFiles, err := serveLoopback(files)
	if err != nil {
		return rep, err
	}
	td.add(stopFiles)

	key := randomKey()
	sb, err := sandbox.New(sandbox.Config{
		APIKey: key, Engine: eng, Logger: log.WithField("component", "sandbox"),
		// The sample is served on loopback, which the sandbox refuses to fetch unless allowed.
		AllowFetch: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		return rep, fmt.Errorf("start the sandbox: %w", err)
	}
	sbLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = sb.Close()
		return rep, fmt.Errorf("listen on loopback for the sandbox: %w", err)
	}
	sbCtx, stopSandbox := context.WithCancel(context.WithoutCancel(ctx))
	sbServed := make(chan error, 1)
	go func() { sbServed <- sb.Serve(sbCtx, sbLn) }()
	td.add(func() error {
		stopSandbox()
		serr := <-sbServed
		if errors.Is(serr, http.ErrServerClosed) {
			serr = nil
		}
		if cerr := sb.Close(); cerr != nil {
			serr = errors.Join(serr, cerr)
		}
		if serr != nil {
			return fmt.Errorf("stop the sandbox: %w", serr)
		}
		return nil
	})
	sbURL := "http://" + sbLn.Addr().String()

	// The real serve, configured like `serve` with no file: the defaults, with the addresses
	// and paths of this run.
	serveLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, fmt.Errorf("listen on loopback for serve: %w", err)
	}
	// serve's Shutdown closes the listener; this closes it when serve never started.
	td.add(func() error { _ = serveLn.Close(); return nil })
	cfg := demoConfig(p, serveLn.Addr().String(), sbURL)
	if err := cfg.Validate(); err != nil {
		return rep, fmt.Errorf("the demo's configuration: %w", err)
	}
	st, err := scribehook.OpenStore(ctx, cfg)
	if err != nil {
		return rep, err
	}
	td.add(st.Close)
	eventsLog, eventsFrom, err := openAppend(p.events)
	if err != nil {
		return rep, fmt.Errorf("open the log sink's file: %w", err)
	}
	td.add(eventsLog.Close) // after serve has stopped: the log sink writes until then
	client, err := scribehook.ServiceClient(cfg, key, submitter.WithLogger(log.WithField("component", "submitter")))
	if err != nil {
		return rep, err
	}
	// serve, as `scribehook serve` runs it, except that its log sink writes to the events file
	// (standard output is the demo's own) and the read API stays off.
	kit, err := scribehook.New(ctx, cfg, scribehook.WithStore(st), scribehook.WithService(client),
		scribehook.WithSecrets(configs.Secrets{APIKey: key}), scribehook.WithLogger(log.WithField("component", "serve")),
		scribehook.WithSinkOutput(eventsLog))
	if err != nil {
		return rep, fmt.Errorf("start serve: %w", err)
	}
	if err := kit.Start(ctx); err != nil {
		_ = kit.Close()
		return rep, fmt.Errorf("start serve: %w", err)
	}
	go func() { _ = kit.Serve(serveLn) }()
	td.add(func() error {
		stopCtx, cancel := context.WithTimeout(context.Background(), demoStopTimeout)
		defer cancel()
		if err := kit.Shutdown(stopCtx); err != nil {
			return fmt.Errorf("stop serve: %w", err)
		}
		return nil
	})
	say("sandbox  %s  (the service, engine %s)", sbURL, eng.Name())
	say("serve    %s  (store %s; subtitles %s %s → %s; sinks: files → %s, log → %s)",
		cfg.PublicURL, p.db, cfg.Subtitles.Profile, strings.Join(cfg.Subtitles.Formats, "+"), p.artifacts, p.sink, p.events)

	// A pre-recorded job, submitted the way `submit` does it.
	say("\n1. pre-recorded job for the sample recording (%.1f s)", sampleSeconds)
	if eng.Name() == engine.ScriptedName {
		say("   (the scripted engine returns the words of the sample's script, demodata/sample.wav.json, at their real times)")
	}
	req := api.PreRecordedRequest{
		AudioURL:        filesURL + "/sample.wav",
		LanguageConfig:  &api.LanguageConfig{Languages: []string{"en"}},
		Subtitles:       api.Bool(true),
		SubtitlesConfig: &api.SubtitlesConfig{Formats: cfg.Subtitles.Formats},
		Sentences:       api.Bool(true),
		Summarization:   api.Bool(true),
		CustomMetadata:  json.RawMessage(`{"source":"scribehook demo"}`),
	}
	req.CustomVocabulary = &api.CustomVocabulary{Enabled: true}
	req.CustomVocabularyConfig = &api.CustomVocabularyConfig{Vocabulary: demoVocabularyTerms()}
	warn := func(format string, args ...any) { say("   warning: "+format, args...) }
	jobID, err := submitJob(ctx, cfg, st, client, &req, http.MethodPost, warn)
	if err != nil {
		return rep, fail(fmt.Errorf("submit the job: %w", err))
	}
	rep.JobID = jobID
	say("   job %s created; its callback goes to serve at %s/v1/callbacks/<token>", jobID, cfg.PublicURL)
	say("   waiting for serve to process the callback (reading the local store; the service is never polled)…")
	rec, waited, err := demoWaitJob(ctx, st, jobID, demoJobTimeout, say)
	if err != nil {
		return rep, fail(err)
	}
	if rec.Job.Status != api.StatusDone {
		return rep, fail(jobFailed(rec))
	}
	if rec.Job.Result == nil || rec.Job.Result.Transcription == nil {
		return rep, fail(fmt.Errorf("job %s is done but its stored record has no transcription", jobID))
	}
	tr := rec.Job.Result.Transcription
	var audioSeconds float64
	if md := rec.Job.Result.Metadata; md != nil {
		audioSeconds = md.AudioDuration
	}
	say("   callback processed after %s: job done, %.1f s of audio, %d utterances", seconds(waited), audioSeconds, len(tr.Utterances))
	for _, u := range tr.Utterances {
		say("   [%6.2f–%6.2f] %s", u.Start, u.End, u.Text)
	}
	if s := rec.Job.Result.Summarization; s != nil && s.Success && s.Results != "" {
		say("   summary: %s", s.Results)
	}

	// The subtitles serve rendered when the job succeeded, copied and checked.
	say("\n2. subtitles rendered by serve (%s)", cfg.Subtitles.Profile)
	arts, err := st.Artifacts(ctx, jobID)
	if err != nil {
		return rep, fail(fmt.Errorf("read the artifacts of job %s: %w", jobID, err))
	}
	profile, err := subtitles.ProfileByName(cfg.Subtitles.Profile)
	if err != nil {
		return rep, err
	}
	if params, perr := rec.Job.PreRecordedParams(); perr == nil && params != nil && params.SubtitlesConfig != nil {
		profile = profile.WithConfig(params.SubtitlesConfig) // as serve rendered them
	}
	verdict, err := exportAndCheck(arts, profile, p, say)
	say("   check: %s", verdict)
	if err != nil {
		return rep, fail(err)
	}

	// A live session streaming the same recording, set up the way `live` does it.
	live, err := demoLive(ctx, cfg, st, client, wav, head.Format, opts.realtime, sampleSeconds, eng.Name(), say)
	rep.LiveID, rep.LiveFinals = live.id, live.finals
	if err != nil {
		return rep, fail(err)
	}
	say("   waiting for serve to store the session's callbacks…")
	liveRec, _, err := demoWaitJob(ctx, st, live.id, demoJobTimeout, say)
	if err != nil {
		return rep, fail(err)
	}
	if liveRec.Job.Status != api.StatusDone {
		return rep, fail(fmt.Errorf("live session %s ended in %s: %w", live.id, liveRec.Job.Status, jobFailed(liveRec)))
	}
	if rep.LiveMessages, err = demoCountMessages(ctx, st, live.id); err != nil {
		return rep, fail(err)
	}
	// A finished session has a transcript too, so serve renders its subtitles as well.
	liveArts, err := st.Artifacts(ctx, live.id)
	if err != nil {
		return rep, fail(fmt.Errorf("read the artifacts of live session %s: %w", live.id, err))
	}
	say("   session %s ended: %d final transcripts over the WebSocket; serve stored %d messages from its callbacks",
		live.id, live.finals, rep.LiveMessages)

	// The sinks work from their own queues: wait until they have written every event of the
	// run, so that the listing below is complete.
	if err := demoDrainSinks(ctx, st, []string{demoFileSink, demoLogSink}); err != nil {
		return rep, fail(err)
	}

	// Stop (serve first, then the sandbox), then say where everything is.
	say("\nstopping serve, then the sandbox…")
	if err := td.run(); err != nil {
		return rep, fail(err)
	}
	if rep.Events, err = countLinesFrom(p.events, eventsFrom); err != nil {
		return rep, err
	}
	say("\noutputs:")
	say("  database    %s  (job %s done; live session %s: %d messages stored)", p.db, jobID, live.id, rep.LiveMessages)
	say("  subtitles   %s, %s", p.srt, p.vtt)
	say("  artifacts   %s  (%s)", filepath.Join(p.artifacts, jobID), strings.Join(artifactNames(arts), ", "))
	if len(liveArts) > 0 {
		say("              %s  (the live session's: %s)", filepath.Join(p.artifacts, live.id), strings.Join(artifactNames(liveArts), ", "))
	}
	say("  file sink   %s  (<id>/events/, <id>/transcript.txt and the subtitles of the job and of the session)", p.sink)
	say("  events log  %s  (%d JSON lines from this run)", p.events, rep.Events)
	say("  logs        %s  (serve and the sandbox)", p.log)
	return rep, nil
}

// demoEngine builds the sandbox's engine and the line that tells the user which one runs and
// why. Auto prefers the real engine; a real engine that is built in but cannot start (its
// model missing) falls back to the scripted one with the reason, since the demo still shows
// the whole loop.
func demoEngine(reg *engine.Registry, name string) (engine.Engine, string, error) {
	have := reg.Names()
	noEngine := "scripted (this build has no speech engine: build with -tags pocketsphinx and install libpocketsphinx-dev pocketsphinx-en-us for real recognition)"
	if builtWithTag(pocketsphinxEngine) && !slices.Contains(have, pocketsphinxEngine) {
		// The tag alone does not bring the engine: this source tree predates it.
		noEngine = "scripted (built with -tags pocketsphinx, but this source tree has no pocketsphinx engine yet)"
	}
	describe := func(e engine.Engine, explicit bool) string {
		switch {
		case e.Name() == pocketsphinxEngine:
			return "pocketsphinx (offline speech recognition)"
		case e.Name() == engine.ScriptedName && explicit && slices.Contains(have, pocketsphinxEngine):
			return "scripted (chosen with --engine; this build also has pocketsphinx)"
		case e.Name() == engine.ScriptedName:
			return noEngine
		}
		return e.Name()
	}
	if name != "" && name != engineAuto {
		e, err := reg.New(name)
		if err != nil {
			return nil, "", fmt.Errorf("--engine %s: %w (this build has: %s)", name, err, strings.Join(have, ", "))
		}
		return e, describe(e, true), nil
	}
	if slices.Contains(have, pocketsphinxEngine) {
		e, err := reg.New(pocketsphinxEngine)
		if err == nil {
			return e, describe(e, false), nil
		}
		s, serr := reg.New(engine.ScriptedName)
		if serr != nil {
			return nil, "", fmt.Errorf("engine: %w", serr)
		}
		return s, fmt.Sprintf("scripted (pocketsphinx is built in but did not start: %v; install pocketsphinx-en-us)", err), nil
	}
	e, err := reg.New(engine.ScriptedName)
	if err != nil {
		return nil, "", fmt.Errorf("engine: %w", err)
	}
	return e, describe(e, false), nil
}

// builtWithTag reports whether the binary was built with a build tag, from the build settings
// the toolchain records.
func builtWithTag(tag string) bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), tag) {
			return true
		}
	}
	return false
}

// demoConfig is `serve`'s configuration with no file (configs.Default), with this run's
// addresses and everything stored under the output directory.
func demoConfig(p demoPaths, listen, serviceURL string) configs.Config {
	cfg := configs.Default()
	cfg.Listen = listen
	cfg.PublicURL = "http://" + listen
	cfg.Service.BaseURL = serviceURL
	cfg.Store.DSN = p.db
	cfg.Subtitles.Profile = subtitles.NetflixAdult
	cfg.Subtitles.Formats = []string{string(subtitles.SRT), string(subtitles.VTT)}
	cfg.Subtitles.Dir = p.artifacts
	cfg.Sinks = []configs.Sink{
		{Name: demoFileSink, Kind: sinks.KindFile, Dir: p.sink, Events: []string{"*"}, Timeout: configs.DefaultSinkTimeout},
		{Name: demoLogSink, Kind: sinks.KindLog, Events: []string{"*"}, Timeout: configs.DefaultSinkTimeout},
	}
	return cfg
}

// demoWaitJob reads the local store until serve has processed the job's final callback. Like
// `submit --wait`, it never asks the service; it says every few seconds that it still waits.
func demoWaitJob(ctx context.Context, st store.Store, id string, timeout time.Duration, say func(string, ...any)) (store.JobRecord, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	const remindEvery = 5 * time.Second
	nextReminder := remindEvery
	tick := time.NewTicker(demoPollEvery)
	defer tick.Stop()
	for {
		rec, err := st.GetJob(ctx, id)
		switch {
		case err == nil && rec.Job.Status.Final():
			return rec, time.Since(start), nil
		case err != nil && !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil:
			return store.JobRecord{}, 0, fmt.Errorf("read job %s from the local store: %w", id, err)
		}
		if elapsed := time.Since(start); elapsed >= nextReminder {
			nextReminder += remindEvery
			status := string(rec.Job.Status)
			if status == "" {
				status = "not stored yet"
			}
			say("   … still waiting after %s (local status: %s)", elapsed.Round(time.Second), status)
		}
		select {
		case <-ctx.Done():
			return store.JobRecord{}, 0, fmt.Errorf("serve did not store the final callback of %s within %s: %w", id, timeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// exportAndCheck copies the SRT and WebVTT serve rendered for the job's transcript to the top
// of the output directory and runs the subtitle checker on the files as written: format
// validation, then the rules of the profile on the cues read back. It returns the one-line
// verdict, and an error when either file fails.
func exportAndCheck(arts []store.Artifact, profile subtitles.Profile, p demoPaths, say func(string, ...any)) (string, error) {
	type target struct {
		format   subtitles.Format
		copyTo   string
		validate func([]byte) error
		read     func(io.Reader) (*astisub.Subtitles, error)
	}
	targets := []target{
		{subtitles.SRT, p.srt, subtitles.ValidateSRT, astisub.ReadFromSRT},
		{subtitles.VTT, p.vtt, subtitles.ValidateVTT, astisub.ReadFromWebVTT},
	}
	var problems []string
	var cues, soft int
	var softRules []string
	var meanCPS float64
	for _, t := range targets {
		a, ok := transcriptArtifact(arts, t.format)
		if !ok {
			return "FAIL: serve rendered no " + string(t.format), fmt.Errorf("serve rendered no %s for the job (artifacts: %s)", t.format, strings.Join(artifactNames(arts), ", "))
		}
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return "FAIL: artifact unreadable", fmt.Errorf("read artifact %s: %w", a.Path, err)
		}
		if err := os.WriteFile(t.copyTo, b, 0o644); err != nil {
			return "FAIL: could not write the copy", fmt.Errorf("write %s: %w", t.copyTo, err)
		}
		say("   %s  (serve's artifact %s)", t.copyTo, a.Path)
		if err := t.validate(b); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", filepath.Base(t.copyTo), err))
			continue
		}
		parsed, err := readCues(t.read, b)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", filepath.Base(t.copyTo), err))
			continue
		}
		r := subtitles.Check(parsed, profile)
		for _, v := range r.Hard() {
			problems = append(problems, fmt.Sprintf("%s: %s", filepath.Base(t.copyTo), v))
		}
		if t.format == subtitles.SRT {
			cues, meanCPS = r.Cues, r.MeanCPS
			for _, v := range r.Violations {
				if !v.Hard {
					soft++
					if !slices.Contains(softRules, v.Rule) {
						softRules = append(softRules, v.Rule)
					}
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Sprintf("FAIL: %d problems", len(problems)), fmt.Errorf("the subtitles fail the checker: %s", strings.Join(problems, "; "))
	}
	verdict := fmt.Sprintf("PASS: SRT and WebVTT well-formed; %d cues, no hard-rule violation of %s, %d soft", cues, profile.Name, soft)
	if soft > 0 {
		verdict += " (" + strings.Join(softRules, ", ") + ")"
	}
	return verdict + fmt.Sprintf("; mean %.1f characters/s", meanCPS), nil
}

// transcriptArtifact is serve's own rendering of the transcript track (subtitles.<lang>.<ext>)
// in format f: not the service's copy (service.…) nor a translation, which the demo does not
// ask for.
func transcriptArtifact(arts []store.Artifact, f subtitles.Format) (store.Artifact, bool) {
	for _, a := range arts {
		if a.Format == string(f) && strings.HasPrefix(a.Name, "subtitles.") {
			return a, true
		}
	}
	return store.Artifact{}, false
}

func artifactNames(arts []store.Artifact) []string {
	names := make([]string, 0, len(arts))
	for _, a := range arts {
		names = append(names, a.Name)
	}
	return names
}

// readCues reads a subtitle file back into cues, the checker's input: times and the lines as
// displayed. astisub's readers are known to panic on some malformed files; the file was
// validated first, but a panic must still be a failed check, not a crashed demo.
func readCues(read func(io.Reader) (*astisub.Subtitles, error), b []byte) (cues []subtitles.Cue, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable: %v", r)
		}
	}()
	s, err := read(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	for _, it := range s.Items {
		c := subtitles.Cue{Start: it.StartAt, End: it.EndAt}
		for _, l := range it.Lines {
			c.Lines = append(c.Lines, l.String())
		}
		cues = append(cues, c)
	}
	return cues, nil
}

// demoLiveResult is what the live step learnt.
type demoLiveResult struct {
	id     string
	finals int
}

// demoLive creates a live session whose callbacks go to serve (token minted and stored, job
// recorded, as `live` does), streams the sample over the WebSocket and prints each final
// transcript as it arrives.
func demoLive(ctx context.Context, cfg configs.Config, st store.Store, client *submitter.Client, wav []byte, f audio.Format,
	realtime bool, sampleSeconds float64, engineName string, say func(string, ...any)) (demoLiveResult, error) {
	var res demoLiveResult
	req := api.LiveRequest{
		Encoding: string(f.Encoding), SampleRate: api.Int(f.SampleRate), BitDepth: api.Int(f.BitDepth), Channels: api.Int(f.Channels),
		// The sample pauses about 0.75 s between sentences: 0.3 s of silence ends each
		// utterance there and not inside a sentence.
		Endpointing:    api.Float(0.3),
		LanguageConfig: &api.LanguageConfig{Languages: []string{"en"}},
		RealtimeProcessing: &api.RealtimeProcessing{
			CustomVocabulary: api.Bool(true), CustomVocabularyConfig: &api.CustomVocabularyConfig{Vocabulary: demoVocabularyTerms()},
		},
		CustomMetadata: json.RawMessage(`{"source":"scribehook demo"}`),
	}
	subm := &scribehook.Submitter{Store: st, Service: client, PublicURL: cfg.PublicURL}
	created, err := subm.StartLive(ctx, req, "")
	if err != nil {
		return res, fmt.Errorf("create the live session: %w", err)
	}
	res.id = created.ID
	pace := fmt.Sprintf("in real time (%.0f s; --fast skips the pacing)", sampleSeconds)
	if !realtime {
		pace = "as fast as possible"
	}
	say("\n3. live session %s: streaming the recording %s", created.ID, pace)
	if engineName == engine.ScriptedName {
		say("   (the scripted engine reads no script in live mode: its live words are made up, their timing follows the audio)")
	}
	var mu sync.Mutex // onMessage runs on the stream's reader goroutine
	var serviceErrs []string
	err = client.StreamLive(ctx, created.URL, bytes.NewReader(wav), submitter.StreamOptions{
		SampleRate: f.SampleRate, BitDepth: f.BitDepth, Channels: f.Channels, Realtime: realtime,
	}, func(m api.LiveMessage) {
		switch {
		case m.Type == api.MessageError || m.HasError() || (m.Acknowledged != nil && !*m.Acknowledged):
			msg := m.ErrorMessage()
			if msg == "" {
				msg = "no message"
			}
			mu.Lock()
			serviceErrs = append(serviceErrs, fmt.Sprintf("%s: %s", m.Type, msg))
			mu.Unlock()
			say("   service error (%s): %s", m.Type, msg)
		case m.Type == api.MessageTranscript && m.TranscriptIsFinal():
			var d api.TranscriptData
			if m.DecodeData(&d) == nil {
				mu.Lock()
				res.finals++
				mu.Unlock()
				say("   final [%6.2f–%6.2f] %s", d.Utterance.Start, d.Utterance.End, d.Utterance.Text)
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		return res, fmt.Errorf("live session %s: %w", created.ID, err)
	}
	if len(serviceErrs) > 0 {
		return res, fmt.Errorf("live session %s: the service reported %s", created.ID, strings.Join(serviceErrs, "; "))
	}
	if res.finals == 0 {
		return res, fmt.Errorf("live session %s: no final transcript arrived over the WebSocket", created.ID)
	}
	return res, nil
}

// demoCountMessages counts a session's stored messages, page by page. (jobs.go's
// countLiveMessages does the same but takes a cobra command for its context.)
func demoCountMessages(ctx context.Context, st store.Store, id string) (int, error) {
	const page = 1000
	n, after := 0, int64(0)
	for {
		msgs, err := st.LiveMessages(ctx, id, after, page)
		if err != nil {
			return 0, fmt.Errorf("read the messages of live session %s: %w", id, err)
		}
		n += len(msgs)
		if len(msgs) < page {
			return n, nil
		}
		after = msgs[len(msgs)-1].Seq
	}
}

// demoDrainSinks waits until the sinks' queues are empty. Every event is queued in the
// transaction that applied its delivery, so once the job and the session are final in the
// store, an empty queue means every event of the run was written.
func demoDrainSinks(ctx context.Context, st store.Store, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, demoDrainTimeout)
	defer cancel()
	tick := time.NewTicker(demoPollEvery)
	defer tick.Stop()
	for {
		var left []string
		for _, name := range names {
			n, err := st.SinkDepth(ctx, name)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				return fmt.Errorf("read the queue of sink %s: %w", name, err)
			}
			if n > 0 {
				left = append(left, fmt.Sprintf("%s: %d", name, n))
			}
		}
		if len(left) == 0 && ctx.Err() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sinks still have events queued after %s (%s): %w", demoDrainTimeout, strings.Join(left, ", "), ctx.Err())
		case <-tick.C:
		}
	}
}

// openAppend opens a file for appending and says where this run's writes begin.
func openAppend(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// countLinesFrom counts the lines of a file after offset.
func countLinesFrom(path string, offset int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // an event with a long transcript is one line
	n := 0
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// teardown stops what the demo started, last started first. run is idempotent, so the happy
// path stops everything before its listing and the deferred call does nothing more.
type teardown struct{ steps []func() error }

func (t *teardown) add(f func() error) { t.steps = append(t.steps, f) }

func (t *teardown) run() error {
	var errs []error
	for i := len(t.steps) - 1; i >= 0; i-- {
		if err := t.steps[i](); err != nil {
			errs = append(errs, err)
		}
	}
	t.steps = nil
	return errors.Join(errs...)
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serveLoopback serves h on a free loopback port.
func serveLoopback(h http.Handler) (string, func() error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			return fmt.Errorf("stop the sample's file server: %w", err)
		}
		return nil
	}
	return "http://" + ln.Addr().String(), stop, nil
}

func randomKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
