package sandboxtest

import (
	"testing"

	"github.com/scribehook/scribehook/sandbox"
)

// NewService starts a sandbox (StartService) that is closed at the end of the test.
func NewService(tb testing.TB, cfg sandbox.Config) *Service {
	tb.Helper()
	s := must(StartService(cfg))(tb)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// NewFiles starts a file server with rec (StartFiles) that is closed at the end of the test.
func NewFiles(tb testing.TB, rec Recording) *Files {
	tb.Helper()
	f := StartFiles(rec)
	tb.Cleanup(f.Close)
	return f
}

// NewWorld starts a sandbox and a file server with rec (StartWorld), closed at the end of the
// test.
func NewWorld(tb testing.TB, cfg sandbox.Config, rec Recording) *World {
	tb.Helper()
	w := must(StartWorld(cfg, rec))(tb)
	tb.Cleanup(func() { _ = w.Close() })
	return w
}

// LoadRecording reads the WAV at path and its sidecar (ReadRecording).
func LoadRecording(tb testing.TB, path string) Recording {
	tb.Helper()
	return must(ReadRecording(path))(tb)
}

// must(v, err)(tb) is v, or the test fails with err: the layer for tests over the functions
// that return an error.
func must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}
