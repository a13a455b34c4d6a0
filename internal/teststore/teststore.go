// Package teststore opens the SQLite stores that the tests of the parts over the store (the
// pipeline, the receiver, the sinks' dispatcher, the pruner, the batcher, the kit) run on, each
// closed when its test ends. The SQLite store's own tests cannot use it: it imports that store.
package teststore

import (
	"path/filepath"
	"testing"

	"github.com/scribehook/scribehook/store/sqlite"
)

// SQLite is a new SQLite store in a file of tb's temporary directory, with the default options,
// closed when the test ends.
func SQLite(tb testing.TB) *sqlite.Store {
	tb.Helper()
	return OpenSQLite(tb, sqlite.Config{})
}

// OpenSQLite opens the SQLite store o describes and closes it when the test ends; an empty
// o.Path is a new file in tb's temporary directory. A test that opens the same path again, as a
// restarted process would, gets a second store over the same database.
func OpenSQLite(tb testing.TB, o sqlite.Config) *sqlite.Store {
	tb.Helper()
	if o.Path == "" {
		o.Path = filepath.Join(tb.TempDir(), "scribehook.db")
	}
	s, err := sqlite.Open(tb.Context(), o)
	if err != nil {
		tb.Fatalf("open store %s: %v", o.Path, err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
