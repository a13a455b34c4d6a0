package postgres

import (
	"context"

	"github.com/scribehook/scribehook/store"
)

// Importing the package registers the driver as store.driver "postgres" (store.Register):
// a program that does not import it does not link pgx.
func init() { store.Register("postgres", driver{}) }

// driver opens PostgreSQL stores for store.Lookup. The pool size is the DSN's
// pool_max_conns, else DefaultMaxConns.
type driver struct{}

func (driver) Open(ctx context.Context, dsn string, opts store.DriverOptions) (store.Store, error) {
	st, err := Open(ctx, Config{DSN: dsn, Now: opts.Now})
	if err != nil {
		return nil, err // a nil *Store must not become a non-nil store.Store
	}
	return st, nil
}

func (driver) Migrate(ctx context.Context, dsn string, opts store.DriverOptions) (store.MigrationPlan, error) {
	if opts.Apply {
		return Migrate(ctx, Config{DSN: dsn})
	}
	return PendingMigrations(ctx, Config{DSN: dsn})
}
