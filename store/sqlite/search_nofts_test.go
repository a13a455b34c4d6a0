//go:build !(sqlite_fts5 || fts5)

package sqlite

import (
	"errors"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/store"
)

// TestSearchWithoutFTS5: a build without FTS5 applies and prunes as usual, keeps the
// utterances for a later build with it (marking its index stale), and Search says which build
// tag it needs.
func TestSearchWithoutFTS5(t *testing.T) {
	path := tempPath(t)
	s := openTemp(t, Config{Path: path})
	indexOne(t, s, "k1", "job-1", "kept for later")
	_, err := s.Search(t.Context(), store.SearchQuery{Text: "kept"})
	if !errors.Is(err, store.ErrSearchUnavailable) || !strings.Contains(err.Error(), "-tags sqlite_fts5") {
		t.Errorf("Search = %v, want ErrSearchUnavailable naming the build tag", err)
	}
	if _, err := s.Search(t.Context(), store.SearchQuery{Text: `"`}); !errors.Is(err, store.ErrBadQuery) {
		t.Errorf("Search of a bad query = %v, want ErrBadQuery first", err)
	}
	if n := rawCount(t, path, `SELECT count(*) FROM search_utterances`); n != 1 {
		t.Errorf("%d utterances kept, want 1", n)
	}
	if n := rawCount(t, path, `SELECT count(*) FROM search_state WHERE stale = 1`); n != 1 {
		t.Errorf("index not marked stale")
	}
}
