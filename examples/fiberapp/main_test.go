package main

import (
	"testing"

	"github.com/scribehook/scribehook/internal/exampletest"
)

// The program, built and run as a subprocess against a sandbox of the service: the test every
// example passes (internal/exampletest), with the kit mounted on a group of the app.
func TestProgramEndToEnd(t *testing.T) {
	exampletest.EndToEnd(t, exampletest.Program{
		Dir: ".", Name: "fiberapp", BuildFlags: buildFlags,
		Hello: "hello from the app's own route\n",
	})
}

// Without a token for POST /transcribe, or with one too short to be a secret, or with an
// AUDIO_ORIGINS entry that is not an origin, the program refuses to start.
func TestProgramRefusesToStart(t *testing.T) {
	exampletest.RefusesToStart(t, exampletest.Program{Dir: ".", Name: "fiberapp", BuildFlags: buildFlags})
}

// buildFlags are the flags of the program's build (race_test.go adds -race).
var buildFlags []string
