package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/scribehook/scribehook/handlers"
	_ "github.com/scribehook/scribehook/handlers/natsbus"  // the brokers' drivers, linked as a program
	_ "github.com/scribehook/scribehook/handlers/redisbus" // links them: by importing them
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/postgres"
)

// The bus tests run the real brokers, installed from Debian's redis-server and nats-server
// packages (make deps), and PostgreSQL for the tests of several replicas
// (scripts/pg.sh run -- go test ./handlers/); without them they skip and say so
// (internal/testinfra runs them all).

// freePort is a loopback port with nothing listening, for the tests of a broker that is down.
func freePort(t *testing.T) string { return testinfra.Port(t) }

// broker is a broker on a fixed loopback port and store directory, which a test may stop and
// start again.
type broker struct {
	*testinfra.Broker
	t *testing.T
}

// start runs the stopped broker again on its port. It may be called from a goroutine of the
// test, where Fatal must not be: a failure is an error, and the test's waits then fail too.
func (b *broker) start() {
	b.t.Helper()
	if err := b.Start(); err != nil {
		b.t.Errorf("restart broker: %v", err)
	}
}

// stop ends the server with SIGTERM, which lets NATS close its store cleanly.
func (b *broker) stop() {
	if err := b.Stop(); err != nil {
		b.t.Logf("stop broker: %v", err)
	}
}

// startRedis runs redis-server without persistence: a restart loses the stream and its
// consumer group, the hardest case for the bus.
func startRedis(t *testing.T) *broker {
	t.Helper()
	return &broker{Broker: testinfra.Redis(t), t: t}
}

// startNATS runs nats-server with JetStream and a store directory, which outlives a restart.
func startNATS(t *testing.T) *broker {
	t.Helper()
	return &broker{Broker: testinfra.NATS(t), t: t}
}

// forEachBroker runs a subtest per broker.
func forEachBroker(t *testing.T, fn func(t *testing.T, b *broker)) {
	t.Run("redisstream", func(t *testing.T) { fn(t, startRedis(t)) })
	t.Run("nats", func(t *testing.T) { fn(t, startNATS(t)) })
}

// forEachBrokerOnPG is forEachBroker for replicas that share PostgreSQL: fn gets a DSN of its
// own empty schema. Without a test database it skips, before any broker starts.
func forEachBrokerOnPG(t *testing.T, fn func(t *testing.T, b *broker, dsn string)) {
	pgDSN(t)
	forEachBroker(t, func(t *testing.T, b *broker) { fn(t, b, pgDSN(t)) })
}

// openBus connects a replica to the broker; the pipeline closes it.
func openBus(t *testing.T, b *broker, claimAfter time.Duration) *handlers.Bus {
	t.Helper()
	bus, err := handlers.OpenBus(context.Background(), handlers.BusConfig{
		Driver: b.Kind, URL: b.URL, ClaimAfter: claimAfter, Logger: logx.Discard(),
	})
	if err != nil {
		t.Fatalf("open bus: %v", err)
	}
	return bus
}

// pgDSN creates an empty schema for the test, dropped at its end, and returns a DSN that uses
// it; without a test database the test skips.
func pgDSN(t *testing.T) string {
	t.Helper()
	return testinfra.PGSchema(t).DSN
}

// openPG opens one replica's own connection pool to the shared database.
func openPG(t *testing.T, dsn string) store.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
