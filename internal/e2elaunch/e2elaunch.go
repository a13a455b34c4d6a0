// Package e2elaunch is what the end-to-end launchers (e2e/sdk/launch, e2e/ui/launch) share: a
// launcher runs until the test that started it closes its standard input or signals it, keeps
// its data in a directory of its own, logs only errors, runs the kit as `scribehook serve` does
// over a fresh SQLite store, and tells the test where everything is in one line of JSON. Each
// launcher keeps only its own world: its sandbox settings, sinks, seeded data and control API.
package e2elaunch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/store/sqlite"
)

// CallbackRetries retries a refused callback within about a second and a half, so that a
// callback that finds the kit not yet up still arrives while the test waits for it.
var CallbackRetries = sandbox.CallbackPolicy{Schedule: []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second}}

// Env is a launcher's surroundings.
type Env struct {
	Log       *logrus.Entry         // errors only, to standard error
	Dir       string                // the data directory, removed by Close
	Recording sandboxtest.Recording // the sample the file server serves
	Store     *sqlite.Store         // the kit's store, in Dir

	stop context.CancelFunc
}

// Start reads the recording at sample (and its .json sidecar), makes a data directory named
// after prefix and opens the kit's store in it. Its context ends at SIGINT or SIGTERM, or when
// standard input closes (the test went away). Close undoes it all.
func Start(prefix, sample string) (context.Context, *Env, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop() }()
	log := logrus.New()
	log.SetOutput(os.Stderr)
	log.SetLevel(logrus.ErrorLevel)
	e := &Env{Log: logrus.NewEntry(log), stop: stop}
	rec, err := sandboxtest.ReadRecording(sample)
	if err != nil {
		stop()
		return nil, nil, err
	}
	e.Recording = rec
	if e.Dir, err = os.MkdirTemp("", prefix); err != nil {
		stop()
		return nil, nil, fmt.Errorf("data directory: %w", err)
	}
	if e.Store, err = sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(e.Dir, "scribehook.db")}); err != nil {
		e.Close()
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	return ctx, e, nil
}

// Close closes the store, removes the data directory and stops listening for signals.
func (e *Env) Close() {
	if e.Store != nil {
		_ = e.Store.Close()
	}
	_ = os.RemoveAll(e.Dir)
	e.stop()
}

// ServeKit listens on listen, builds the kit with cfg (its public_url the listener's URL), the
// env's store and logger and opts, starts it and serves it in the background. It returns the
// kit's URL and how to stop it.
func (e *Env) ServeKit(ctx context.Context, listen string, cfg configs.Config, opts ...scribehook.Option) (string, func(), error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, fmt.Errorf("listen for serve: %w", err)
	}
	cfg.PublicURL = "http://" + ln.Addr().String()
	opts = append([]scribehook.Option{scribehook.WithStore(e.Store), scribehook.WithLogger(e.Log)}, opts...)
	kit, err := scribehook.New(ctx, cfg, opts...)
	if err != nil {
		_ = ln.Close()
		return "", nil, fmt.Errorf("build the kit: %w", err)
	}
	if err := kit.Start(ctx); err != nil {
		_ = ln.Close()
		_ = kit.Close()
		return "", nil, fmt.Errorf("start the kit: %w", err)
	}
	go func() {
		if err := kit.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
			e.Log.WithError(err).Error("serve")
		}
	}()
	return cfg.PublicURL, func() { _ = kit.Close() }, nil
}

// PrintLine prints v as the one line of JSON the test reads the launcher's URLs and keys from.
func PrintLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the launch line: %w", err)
	}
	fmt.Println(string(b))
	return nil
}

// WriteJSON answers the control API's request with v as JSON.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
