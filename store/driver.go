package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Driver opens one kind of database as a Store, the way a database/sql driver does for sql.DB.
// store/sqlite and store/postgres register theirs when imported; a program links only the
// drivers it imports.
type Driver interface {
	// Open opens (and migrates) the store at dsn. The caller closes it.
	Open(ctx context.Context, dsn string, opts DriverOptions) (Store, error)
	// Migrate is the migration plan of the store at dsn: with apply the migrations run, without
	// nothing is written.
	Migrate(ctx context.Context, dsn string, opts DriverOptions) (MigrationPlan, error)
}

// DriverOptions are the settings of the configuration's store section beyond the DSN; a
// driver ignores those it has no use for.
type DriverOptions struct {
	// Synchronous is SQLite's PRAGMA synchronous, "full" or "normal".
	Synchronous string
	// Apply makes Migrate run the migrations instead of only planning them.
	Apply bool
	// Now is the clock of the times the store stamps itself (a row processed, a delivery
	// delivered); nil is time.Now.
	Now func() time.Time
}

// ErrUnknownDriver is wrapped by Lookup's error for a name no imported package registered.
var ErrUnknownDriver = errors.New("unknown store driver")

// The registry is the package's one global, as database/sql's drivers are: a driver package
// registers itself from init, so that importing it is all a program does to link it.
var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
)

// driverImports are the packages of this module that register a driver, for the error of a
// driver the program did not import.
var driverImports = map[string]string{
	"sqlite":   "github.com/scribehook/scribehook/store/sqlite",
	"postgres": "github.com/scribehook/scribehook/store/postgres",
}

// Register makes the driver available under name (store.driver in the configuration). It
// panics when name is empty, d is nil or the name is taken: two packages claiming one name is
// a mistake of the program, found at start.
func Register(name string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if name == "" || d == nil {
		panic("store: Register needs a name and a driver")
	}
	if _, dup := drivers[name]; dup {
		panic("store: Register called twice for driver " + name)
	}
	drivers[name] = d
}

// Drivers lists the names of the registered drivers, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup is the driver registered under name. Its error wraps ErrUnknownDriver and says which
// import registers a driver of this module the program did not import.
func Lookup(name string) (Driver, error) {
	driversMu.RLock()
	d, ok := drivers[name]
	driversMu.RUnlock()
	if ok {
		return d, nil
	}
	linked := "none"
	if names := Drivers(); len(names) > 0 {
		linked = strings.Join(names, ", ")
	}
	if pkg, known := driverImports[name]; known {
		return nil, fmt.Errorf("%w %q: the program does not link it; add import _ %q (linked: %s)", ErrUnknownDriver, name, pkg, linked)
	}
	known := make([]string, 0, len(driverImports))
	for n := range driverImports {
		known = append(known, n)
	}
	slices.Sort(known)
	return nil, fmt.Errorf("%w %q: linked drivers are %s (this module has %s)", ErrUnknownDriver, name, linked, strings.Join(known, ", "))
}
