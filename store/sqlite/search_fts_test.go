//go:build sqlite_fts5 || fts5

package sqlite

import (
	"database/sql"
	"testing"

	"github.com/scribehook/scribehook/store"
)

// TestSearchIndexRebuilt: a database written by a build without FTS5 (rows the text index
// lacks, marked stale, or no text index at all) is searched in full once a build with FTS5
// opens it.
func TestSearchIndexRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name, damage string
	}{
		{"stale", `INSERT INTO search_utterances (job_id, ref, start_s, end_s, language, translation, text)
			VALUES ('job-1', 'r/1', 3, 4, 'en', 0, 'written without the index');
			INSERT INTO search_state (id, stale) VALUES (1, 1)`},
		{"no index", `DROP TABLE search_fts;
			INSERT INTO search_utterances (job_id, ref, start_s, end_s, language, translation, text)
			VALUES ('job-1', 'r/1', 3, 4, 'en', 0, 'written without the index')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t)
			s := openTemp(t, Config{Path: path})
			indexOne(t, s, "k1", "job-1", "indexed with the index")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite3", fileURI(path))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(t.Context(), tc.damage); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s = openTemp(t, Config{Path: path})
			p, err := s.Search(t.Context(), store.SearchQuery{Text: "index"})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Items) != 2 || p.Items[0].Text != "indexed with the index" || p.Items[1].Text != "written without the index" {
				t.Errorf("hits after reopening: %+v, want both utterances", p.Items)
			}
			if n := rawCount(t, path, `SELECT count(*) FROM search_state`); n != 0 {
				t.Errorf("search_state keeps %d rows after the rebuild", n)
			}
		})
	}
}
