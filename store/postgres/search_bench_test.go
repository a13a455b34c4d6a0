package postgres

import (
	"os"
	"strconv"
	"testing"

	"github.com/scribehook/scribehook/store/storetest"
)

// BenchmarkSearch1M is store/sqlite's BenchmarkSearch1M on PostgreSQL: the corpus of
// storetest.BuildSearchCorpus (SCRIBEHOOK_SEARCH_CORPUS utterances, 1,000,000 by default) in a
// schema of its own, then the latency of storetest.SearchBenchQueries.
func BenchmarkSearch1M(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("SCRIBEHOOK_SEARCH_CORPUS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	s := open(b, newSchema(b))
	took, err := storetest.BuildSearchCorpus(b.Context(), s, n)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("corpus of %d utterances indexed in %s (%.1f µs each)", n, took, float64(took.Microseconds())/float64(n))
	// Statistics for the planner, as autovacuum would gather them after such a load.
	if _, err := s.db.ExecContext(b.Context(), `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	storetest.SearchLatency(b, s)
}
