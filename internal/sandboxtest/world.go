// Package sandboxtest is what the kit's own tests and end-to-end launchers add to the public
// sandbox/sandboxtest: the demo's recording, and a program built and run as a subprocess (the
// example programs' end-to-end tests). The world itself (a sandbox of the service and a file
// server with a recording) is sandbox/sandboxtest's, named here again so that callers import
// one package.
package sandboxtest

import (
	"errors"
	"net/http"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/sandboxtest"
)

// The world, from sandbox/sandboxtest.
type (
	// Server is sandboxtest.Server.
	Server = sandboxtest.Server
	// Service is sandboxtest.Service.
	Service = sandboxtest.Service
	// Recording is sandboxtest.Recording.
	Recording = sandboxtest.Recording
	// Files is sandboxtest.Files.
	Files = sandboxtest.Files
	// World is sandboxtest.World.
	World = sandboxtest.World
)

var (
	// Loopback is sandboxtest.Loopback.
	Loopback = sandboxtest.Loopback
	// QuickRetries is sandboxtest.QuickRetries.
	QuickRetries = sandboxtest.QuickRetries
)

// Serve is sandboxtest.Serve.
func Serve(h http.Handler) *Server { return sandboxtest.Serve(h) }

// StartService is sandboxtest.StartService.
func StartService(cfg sandbox.Config) (*Service, error) { return sandboxtest.StartService(cfg) }

// StartFiles is sandboxtest.StartFiles.
func StartFiles(rec Recording) *Files { return sandboxtest.StartFiles(rec) }

// ServeFiles is sandboxtest.ServeFiles.
func ServeFiles(rec Recording, h http.Handler) *Files { return sandboxtest.ServeFiles(rec, h) }

// StartWorld is sandboxtest.StartWorld.
func StartWorld(cfg sandbox.Config, rec Recording) (*World, error) {
	return sandboxtest.StartWorld(cfg, rec)
}

// ReadRecording is sandboxtest.ReadRecording.
func ReadRecording(path string) (Recording, error) { return sandboxtest.ReadRecording(path) }

// Synthesize is sandboxtest.Synthesize.
func Synthesize(name string, sentences ...string) (Recording, error) {
	return sandboxtest.Synthesize(name, sentences...)
}

// NewService is sandboxtest.NewService.
func NewService(tb testing.TB, cfg sandbox.Config) *Service {
	tb.Helper()
	return sandboxtest.NewService(tb, cfg)
}

// NewFiles is sandboxtest.NewFiles.
func NewFiles(tb testing.TB, rec Recording) *Files {
	tb.Helper()
	return sandboxtest.NewFiles(tb, rec)
}

// NewWorld is sandboxtest.NewWorld.
func NewWorld(tb testing.TB, cfg sandbox.Config, rec Recording) *World {
	tb.Helper()
	return sandboxtest.NewWorld(tb, cfg, rec)
}

// LoadRecording is sandboxtest.LoadRecording.
func LoadRecording(tb testing.TB, path string) Recording {
	tb.Helper()
	return sandboxtest.LoadRecording(tb, path)
}

// DemoSamplePath is the demo's recording, cmd/scribehook/demodata/sample.wav, found from this
// source file rather than the working directory, so that tests of any package (and of the
// examples' modules, which replace the kit with this checkout) read the same file.
func DemoSamplePath() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", errors.New("sandboxtest: no source path to find cmd/scribehook/demodata from (built with -trimpath?)")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "cmd", "scribehook", "demodata", "sample.wav"), nil
}

// ReadDemoSample reads the demo's recording and its sidecar (DemoSamplePath).
func ReadDemoSample() (Recording, error) {
	path, err := DemoSamplePath()
	if err != nil {
		return Recording{}, err
	}
	return ReadRecording(path)
}
