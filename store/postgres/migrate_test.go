package postgres

import (
	"testing"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/storetest"
)

func TestMigrationRedactsLegacyTokens(t *testing.T) {
	dsn := newSchema(t)
	storetest.MigrationRedactsLegacyTokens(t, storetest.Database{
		Open: func(t *testing.T) store.Store { return open(t, dsn) },
		Text: func(t *testing.T, s store.Store, query string) string {
			var v []byte
			if err := sqlDB(s.(*Store)).QueryRowContext(t.Context(), query).Scan(&v); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return string(v)
		},
		Forget: func(t *testing.T, s store.Store, version int) {
			if _, err := sqlDB(s.(*Store)).ExecContext(t.Context(), `DELETE FROM schema_migrations WHERE version = $1`, version); err != nil {
				t.Fatal(err)
			}
		},
	})
}
