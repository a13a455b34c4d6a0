package testinfra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// This file is the layer for tests: the servers live until the test ends, a missing server
// binary or test database skips the test with what to install or run, and any other error
// fails it.

// Port is a loopback port free now (see FreePort), or the test fails.
func Port(t testing.TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Redis runs redis-server without persistence until the test ends: a restart loses its
// streams and consumer groups.
func Redis(t testing.TB) *Broker {
	t.Helper()
	return RunBroker(t, BrokerOptions{Kind: KindRedisStream})
}

// NATS runs nats-server with JetStream until the test ends; its store directory outlives a
// restart.
func NATS(t testing.TB) *Broker {
	t.Helper()
	return RunBroker(t, BrokerOptions{Kind: KindNATS})
}

// RunBroker starts the broker of opts until the test ends, in a directory of the test unless
// opts.Dir names one. Without the server binary the test skips.
func RunBroker(t testing.TB, opts BrokerOptions) *Broker {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	b, err := NewBroker(opts)
	if errors.Is(err, ErrNoBinary) {
		t.Skipf("%v: needed to run this test", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed, not stopped: nothing reads the store after the test, and a test that stopped
	// the broker itself has nothing left to kill.
	t.Cleanup(b.Kill)
	return b
}

// PGDSN is $SCRIBEHOOK_TEST_PG_DSN, the database tests may use. Without the variable the test
// skips and says how to run it.
func PGDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPGDSN)
	if dsn == "" {
		t.Skip(EnvPGDSN + " is not set: this test needs PostgreSQL; run it under " +
			"`scripts/pg.sh run -- go test " + packagePattern() + "`")
	}
	return dsn
}

// PGSchema creates an empty schema in the database of PGDSN, dropped when the test ends, so
// that every test starts from a new database as far as a store can tell.
func PGSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := NewSchema(context.Background(), PGDSN(t), "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The test's context is done when cleanups run.
		if err := s.Drop(context.Background()); err != nil {
			t.Logf("%v", err)
		}
	})
	return s
}

// packagePattern is the package under test relative to the module's root (go test runs in its
// directory), so that a skip names the command to copy; ./... where that cannot be told.
func packagePattern() string {
	wd, err := os.Getwd()
	if err != nil {
		return "./..."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return "./..."
			}
			if rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel) + "/"
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "./..."
		}
		dir = parent
	}
}
