package scribehook_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/sandboxtest"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// The examples' stand-ins: a sandbox of the service and a file server holding one recording,
// both on loopback, and the kit's configuration for them. They are test code, kept out of the
// examples so that those show only what a program using the kit writes.

// sandboxWorld is a sandbox of the service, reached with APIKey at URL, and a file server
// whose AudioURL serves a WAV and AudioURL + ".json" its sidecar.
type sandboxWorld struct {
	URL      string
	APIKey   string
	AudioURL string
	world    *sandboxtest.World
	dir      string // the kit's data, removed by Close
}

// startSandbox starts a sandbox with the scripted engine and serves a recording in which each
// sentence is one utterance: the scripted engine returns the sidecar's words, so the
// transcript is known in advance and the examples' output is deterministic. It panics on
// error, since examples have no *testing.T.
func startSandbox(sentences ...string) *sandboxWorld {
	const key = "example-service-key"
	rec, err := sandboxtest.Synthesize("talk.wav", sentences...)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "scribehook-example")
	if err != nil {
		panic(err)
	}
	w, err := sandboxtest.StartWorld(sandbox.Config{APIKey: key}, rec)
	if err != nil {
		_ = os.RemoveAll(dir)
		panic(err)
	}
	return &sandboxWorld{URL: w.Service.URL, APIKey: key, AudioURL: w.Files.AudioURL, world: w, dir: dir}
}

// kitConfig is the kit's configuration for this sandbox, listening on the returned listener
// (a free loopback port): public_url is where the kit listens, since the service calls it
// back there (in production, a tunnel or load balancer in front of it), and the database is
// in a temporary directory. configs.Default has no sink and renders no subtitles, so that the
// example's own handler or sink is the only consumer.
func (w *sandboxWorld) kitConfig() (configs.Config, net.Listener) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	cfg := configs.Default()
	cfg.Listen = ln.Addr().String()
	cfg.PublicURL = "http://" + ln.Addr().String()
	cfg.Service.BaseURL = w.URL
	cfg.Store.DSN = filepath.Join(w.dir, "scribehook.db")
	return cfg, ln
}

// artifacts is a directory for the subtitles the kit renders, removed by Close.
func (w *sandboxWorld) artifacts() string { return filepath.Join(w.dir, "artifacts") }

// Close stops the file server and the sandbox, cutting its connections (to the kit among
// them) rather than waiting for idle ones, and removes the kit's data.
func (w *sandboxWorld) Close() {
	_ = w.world.Close()
	_ = os.RemoveAll(w.dir)
}

// quietLogger discards the kit's logs: the examples print only what they received.
func quietLogger() *logrus.Entry { return logx.Discard() }

// failingDisk is a SQLite store in the sandbox's directory whose Applies fail while Down is
// set, as on a disk that fails for a while: the stand-in of the example of failed deliveries.
type failingDisk struct {
	store.Store
	Down atomic.Bool
}

var errDiskDown = errors.New("disk I/O error")

// failingDisk opens the store of cfg, the caller closes it.
func (w *sandboxWorld) failingDisk(cfg configs.Config) *failingDisk {
	s, err := sqlite.Open(context.Background(), sqlite.Config{Path: cfg.Store.DSN, Logger: logx.Discard()})
	if err != nil {
		panic(err)
	}
	return &failingDisk{Store: s}
}

func (d *failingDisk) Apply(ctx context.Context, id int64, fn func(context.Context, store.Tx) error) error {
	if d.Down.Load() {
		return errDiskDown
	}
	return d.Store.Apply(ctx, id, fn)
}

func (d *failingDisk) ApplyGroup(ctx context.Context, ids []int64, fn func(context.Context, store.Tx, []int64) error) error {
	if d.Down.Load() {
		return errDiskDown
	}
	return d.Store.ApplyGroup(ctx, ids, fn)
}
