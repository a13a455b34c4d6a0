package sqlite

import (
	"context"

	"github.com/scribehook/scribehook/store"
)

// Importing the package registers the driver as store.driver "sqlite" (store.Register).
func init() { store.Register("sqlite", driver{}) }

// driver opens SQLite stores for store.Lookup: the DSN is the file's path.
type driver struct{}

func (driver) Open(ctx context.Context, dsn string, opts store.DriverOptions) (store.Store, error) {
	st, err := Open(ctx, Config{Path: dsn, Synchronous: opts.Synchronous, Now: opts.Now})
	if err != nil {
		return nil, err // a nil *Store must not become a non-nil store.Store
	}
	return st, nil
}

func (driver) Migrate(ctx context.Context, dsn string, opts store.DriverOptions) (store.MigrationPlan, error) {
	if opts.Apply {
		return Migrate(ctx, Config{Path: dsn, Synchronous: opts.Synchronous})
	}
	return PendingMigrations(ctx, dsn)
}
