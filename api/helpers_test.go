package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The helpers here are exported for the tests of package api_test (the fuzz targets of the
// public API), which share them with the internal tests.

// SeedTestdata adds every testdata file matching pattern to the corpus.
func SeedTestdata(f *testing.F, pattern string) {
	f.Helper()
	for _, b := range readTestdataFiles(f, pattern) {
		f.Add(b)
	}
}

// TestdataJobs decodes every testdata job record (job_*.json).
func TestdataJobs(tb testing.TB) []Job {
	tb.Helper()
	var jobs []Job
	for _, b := range readTestdataFiles(tb, "job_*.json") {
		var j Job
		if err := json.Unmarshal(b, &j); err != nil {
			tb.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// decodeJSON decodes b into a new T, failing the test if it does not decode.
func decodeJSON[T any, B string | []byte](tb testing.TB, b B) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal([]byte(b), &v); err != nil {
		tb.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// readTestdata reads one testdata file.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readTestdataFiles reads every testdata file matching pattern.
func readTestdataFiles(tb testing.TB, pattern string) [][]byte {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		tb.Fatal(err)
	}
	files := make([][]byte, 0, len(names))
	for _, name := range names {
		files = append(files, readTestdata(tb, filepath.Base(name)))
	}
	return files
}
