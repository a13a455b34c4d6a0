package testjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// fullJobPath is the api package's full job record, from the module root.
const fullJobPath = "api/testdata/job_done_full.json"

// FullJob decodes the api package's full job record (api/testdata/job_done_full.json: a
// transcription on two channels, a French translation without words and a German one that
// failed) into v, a struct with just the fields the test needs. The file is found from the
// module root, so a test of any package reads the same record the same way.
func FullJob(tb testing.TB, v any) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(tb), fullJobPath))
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("%s: %v", fullJobPath, err)
	}
}

// moduleRoot is the closest folder holding a go.mod, from the test's working directory (its
// package's folder) up.
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("no go.mod above %s", dir)
		}
		dir = parent
	}
}
