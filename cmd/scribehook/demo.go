package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox/engine"
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
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, format+"\n", args...)
	}
	p := newDemoPaths(opts.outDir)
	world := &demoWorld{p: p, say: say}
	rep = demoReport{SRT: p.srt}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return rep, fmt.Errorf("create the output directory: %w", err)
	}

	// Everything started is stopped in reverse order, on success and on failure alike.
	defer func() {
		if terr := world.td.run(); terr != nil && err == nil {
			err = terr
		}
	}()
	if err := world.openLog(); err != nil {
		return rep, err
	}
	fail := func(err error) error {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted: %w", err)
		}
		return fmt.Errorf("%w (logs of serve and the sandbox: %s)", err, p.log)
	}

	say("scribehook demo: the service (sandbox), serve, a pre-recorded job and a live session in one process")
	say("outputs: %s", p.dir)
	if err := world.startEngine(opts); err != nil {
		return rep, err
	}
	rep.Engine = world.eng.Name()
	key, err := world.startSandbox(ctx)
	if err != nil {
		return rep, err
	}
	if err := world.startServe(ctx, key); err != nil {
		return rep, err
	}
	cfg := world.cfg
	say("sandbox  %s  (the service, engine %s)", world.sandboxURL, world.eng.Name())
	say("serve    %s  (store %s; subtitles %s %s → %s; sinks: files → %s, log → %s)",
		cfg.PublicURL, p.db, cfg.Subtitles.Profile, strings.Join(cfg.Subtitles.Formats, "+"), p.artifacts, p.sink, p.events)

	jobID, rec, err := world.preRecorded(ctx)
	rep.JobID = jobID
	if err != nil {
		return rep, fail(err)
	}
	arts, err := world.checkSubtitles(ctx, rec)
	if err != nil {
		return rep, fail(err)
	}
	live, err := world.live(ctx, opts.realtime)
	rep.LiveID, rep.LiveFinals, rep.LiveMessages = live.id, live.finals, live.messages
	if err != nil {
		return rep, fail(err)
	}

	// The sinks work from their own queues: wait until they have written every event of the
	// run, so that the listing below is complete.
	if err := demoDrainSinks(ctx, world.st, []string{demoFileSink, demoLogSink}); err != nil {
		return rep, fail(err)
	}

	// Stop (serve first, then the sandbox), then say where everything is.
	say("\nstopping serve, then the sandbox…")
	if err := world.td.run(); err != nil {
		return rep, fail(err)
	}
	if rep.Events, err = countLinesFrom(p.events, world.eventsFrom); err != nil {
		return rep, err
	}
	say("\noutputs:")
	say("  database    %s  (job %s done; live session %s: %d messages stored)", p.db, jobID, live.id, rep.LiveMessages)
	say("  subtitles   %s, %s", p.srt, p.vtt)
	say("  artifacts   %s  (%s)", filepath.Join(p.artifacts, jobID), strings.Join(artifactNames(arts), ", "))
	if len(live.arts) > 0 {
		say("              %s  (the live session's: %s)", filepath.Join(p.artifacts, live.id), strings.Join(artifactNames(live.arts), ", "))
	}
	say("  file sink   %s  (<id>/events/, <id>/transcript.txt and the subtitles of the job and of the session)", p.sink)
	say("  events log  %s  (%d JSON lines from this run)", p.events, rep.Events)
	say("  logs        %s  (serve and the sandbox)", p.log)
	return rep, nil
}
