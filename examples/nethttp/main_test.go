package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/internal/exampletest"
)

// The program, built and run as a subprocess against a sandbox of the service: the test every
// example passes (internal/exampletest), with the kit's routes behind http.StripPrefix in
// front of kit.Handler; and no Fiber in the program's own imports.
func TestProgramEndToEnd(t *testing.T) {
	// The point of the example: net/http only. (The kit itself uses Fiber inside; the program
	// never touches it.)
	list, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(list)) {
		if strings.Contains(imp, "gofiber") || strings.Contains(imp, "fasthttp") {
			t.Errorf("the program imports %s", imp)
		}
	}

	exampletest.EndToEnd(t, exampletest.Program{
		Dir: ".", Name: "nethttp", BuildFlags: buildFlags,
		Hello: "hello from the program's own route\n",
	})
}

// Without a token for POST /transcribe, or with one too short to be a secret, or with an
// AUDIO_ORIGINS entry that is not an origin, the program refuses to start.
func TestProgramRefusesToStart(t *testing.T) {
	exampletest.RefusesToStart(t, exampletest.Program{Dir: ".", Name: "nethttp", BuildFlags: buildFlags})
}

// buildFlags are the flags of the program's build (race_test.go adds -race).
var buildFlags []string
