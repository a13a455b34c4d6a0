package api

import (
	"os"
	"path/filepath"
	"testing"
)

// The helpers here are exported for the tests of package api_test (the fuzz targets of the
// public API), which share them with the internal tests.

// SeedTestdata adds every testdata file matching pattern to the corpus.
func SeedTestdata(f *testing.F, pattern string) {
	f.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}
