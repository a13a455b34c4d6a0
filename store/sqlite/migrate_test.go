package sqlite

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/storetest"
)

func TestMigrationRedactsLegacyTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "legacy.db")
	storetest.MigrationRedactsLegacyTokens(t, storetest.Database{
		Open: func(t *testing.T) store.Store { return openTemp(t, Options{Path: path}) },
		Text: func(t *testing.T, s store.Store, query string) string {
			var v string
			if err := s.(*Store).r.QueryRowContext(t.Context(), query).Scan(&v); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return v
		},
		// Closed before it is opened again, as a process stops before its upgrade starts.
		Forget: func(t *testing.T, s store.Store, version int) {
			writerExec(t, s.(*Store), `DELETE FROM schema_migrations WHERE version = `+strconv.Itoa(version))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		},
	})
}
