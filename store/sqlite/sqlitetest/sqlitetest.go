// Package sqlitetest holds what tests of the SQLite store and of the commands over it need
// besides a store: files the store did not make. It does not import the store, so the store's
// own tests can use it.
package sqlitetest

import (
	"database/sql"
	"testing"

	_ "github.com/mattn/go-sqlite3" // the driver the store uses
)

// ForeignDatabase creates a SQLite file at path with one table of its own and none of
// scribehook's schema: another program's database, or one made before retention (its
// auto_vacuum is off, as SQLite's default leaves it).
func ForeignDatabase(t testing.TB, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE before_scribehook (x)`); err != nil {
		t.Fatal(err)
	}
}
