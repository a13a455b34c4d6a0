package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
	"github.com/scribehook/scribehook/subtitles"
)

// demoWorld is what the demo starts on loopback: the sample's file server, the sandbox with
// its engine, and the real serve with its store; td stops them, last started first.
type demoWorld struct {
	p   demoPaths
	say func(string, ...any)
	log *logrus.Entry
	td  teardown

	eng           engine.Engine
	wav           []byte
	format        audio.Format
	sampleSeconds float64
	filesURL      string
	sandboxURL    string

	cfg        configs.Config
	st         store.Store
	client     *submitter.Client
	eventsFrom int64 // where this run's lines of the events log begin
}

// openLog sends serve's and the sandbox's logs to a file, so that the demo's own lines stay
// readable; a failure points there.
func (w *demoWorld) openLog() error {
	logFile, err := os.OpenFile(w.p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the demo's log: %w", err)
	}
	w.td.add(logFile.Close)
	logger := logrus.New()
	logger.SetOutput(logFile)
	logger.SetLevel(logrus.InfoLevel)
	w.log = logrus.NewEntry(logger).WithField("run", time.Now().UTC().Format(time.RFC3339))
	return nil
}

// startEngine builds the best engine this build has, or the one asked for.
func (w *demoWorld) startEngine(opts demoOptions) error {
	engines := opts.engines
	if engines == nil {
		engines = engine.NewRegistry()
	}
	eng, line, err := demoEngine(engines, opts.engine)
	if err != nil {
		return err
	}
	w.td.add(eng.Close) // after the sandbox: its sessions hold the engine's decoders
	w.eng = eng
	w.say("engine: %s", line)
	return nil
}

// startSandbox serves the bundled sample on loopback and starts the sandbox (the service) with
// the engine and a fresh API key, which it returns.
func (w *demoWorld) startSandbox(ctx context.Context) (key string, err error) {
	wav, err := demodata.ReadFile("demodata/sample.wav")
	if err != nil {
		return "", fmt.Errorf("read the bundled sample: %w", err)
	}
	head, err := audio.ParseHeader(wav)
	if err != nil {
		return "", fmt.Errorf("read the bundled sample's WAV header: %w", err)
	}
	w.wav, w.format = wav, head.Format
	w.sampleSeconds = float64(len(wav)-int(head.DataOffset)) / float64(head.Format.SampleRate*head.Format.FrameSize())
	files := http.NewServeMux()
	files.HandleFunc("GET /sample.wav", func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(w.wav) })
	if w.eng.Name() == engine.ScriptedName {
		// Only the scripted engine reads a sidecar; leaving it out for a real engine makes it
		// plain that its words come from the audio.
		sidecar, err := demodata.ReadFile("demodata/sample.wav.json")
		if err != nil {
			return "", fmt.Errorf("read the bundled sample's sidecar: %w", err)
		}
		files.HandleFunc("GET /sample.wav.json", func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(sidecar) })
	}
	filesURL, stopFiles, err := serveLoopback(files)
	if err != nil {
		return "", err
	}
	w.td.add(stopFiles)
	w.filesURL = filesURL

	key = randomKey()
	sb, err := sandbox.New(sandbox.Config{
		APIKey: key, Engine: w.eng, Logger: w.log.WithField("component", "sandbox"),
		// The sample is served on loopback, which the sandbox refuses to fetch unless allowed.
		AllowFetch: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		return "", fmt.Errorf("start the sandbox: %w", err)
	}
	sbLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = sb.Close()
		return "", fmt.Errorf("listen on loopback for the sandbox: %w", err)
	}
	sbCtx, stopSandbox := context.WithCancel(context.WithoutCancel(ctx))
	sbServed := make(chan error, 1)
	go func() { sbServed <- sb.Serve(sbCtx, sbLn) }()
	w.td.add(func() error {
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
	w.sandboxURL = "http://" + sbLn.Addr().String()
	return key, nil
}

// startServe runs the real serve, configured like `serve` with no file: the defaults, with the
// addresses and paths of this run. Its log sink writes to the events file (standard output is
// the demo's own) and the read API stays off.
func (w *demoWorld) startServe(ctx context.Context, key string) error {
	serveLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen on loopback for serve: %w", err)
	}
	// serve's Shutdown closes the listener; this closes it when serve never started.
	w.td.add(func() error { _ = serveLn.Close(); return nil })
	w.cfg = demoConfig(w.p, serveLn.Addr().String(), w.sandboxURL)
	if err := w.cfg.Validate(); err != nil {
		return fmt.Errorf("the demo's configuration: %w", err)
	}
	st, err := scribehook.OpenStore(ctx, w.cfg)
	if err != nil {
		return err
	}
	w.td.add(st.Close)
	w.st = st
	eventsLog, eventsFrom, err := openAppend(w.p.events)
	if err != nil {
		return fmt.Errorf("open the log sink's file: %w", err)
	}
	w.td.add(eventsLog.Close) // after serve has stopped: the log sink writes until then
	w.eventsFrom = eventsFrom
	w.client, err = scribehook.ServiceClient(w.cfg, key, submitter.WithLogger(w.log.WithField("component", "submitter")))
	if err != nil {
		return err
	}
	kit, err := scribehook.New(ctx, w.cfg, scribehook.WithStore(st), scribehook.WithService(w.client),
		scribehook.WithSecrets(configs.Secrets{APIKey: key}), scribehook.WithLogger(w.log.WithField("component", "serve")),
		scribehook.WithSinkOutput(eventsLog))
	if err != nil {
		return fmt.Errorf("start serve: %w", err)
	}
	if err := kit.Start(ctx); err != nil {
		_ = kit.Close()
		return fmt.Errorf("start serve: %w", err)
	}
	go func() { _ = kit.Serve(serveLn) }()
	w.td.add(func() error {
		stopCtx, cancel := context.WithTimeout(context.Background(), demoStopTimeout)
		defer cancel()
		if err := kit.Shutdown(stopCtx); err != nil {
			return fmt.Errorf("stop serve: %w", err)
		}
		return nil
	})
	return nil
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

// demoConfig is `serve`'s configuration with no file (configs.ServeDefaults), with this run's
// addresses and everything stored under the output directory.
func demoConfig(p demoPaths, listen, serviceURL string) configs.Config {
	cfg := configs.ServeDefaults()
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
