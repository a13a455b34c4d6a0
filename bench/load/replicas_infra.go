package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/scribehook/scribehook/internal/testinfra"
)

// The infrastructure of the replicas run: a schema of its own in PostgreSQL and the broker of
// the bus (redis-server or nats-server from Debian's packages, on a free loopback port with its
// store in the work directory), both from internal/testinfra as the tests run them, and the
// serve replicas with their generated configuration.

// newPGSchema creates a fresh schema in the database of dsn, so that runs sharing a database
// never see each other's rows; its DSN selects it through search_path, and its pool of four
// connections is the verification's.
func newPGSchema(dsn string) (*testinfra.Schema, error) {
	s, err := testinfra.NewSchema(context.Background(), dsn, "bench_replicas")
	if err != nil {
		return nil, err
	}
	s.DB.SetMaxOpenConns(4)
	return s, nil
}

// dropPGSchema removes the schema and everything in it; a failure is reported, not returned,
// because it happens as the run ends and changes none of its results.
func dropPGSchema(s *testinfra.Schema) {
	if err := s.Drop(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
	}
}

// newBroker prepares the bus's broker in dir, stopped with SIGTERM and started again on the
// same port and store directory by the broker-restart scenario. Redis persists to an
// append-only file, fsynced every second: that is how Redis is run as a bus that must survive
// its own restart. Its processes are tracked, so that an interrupted run kills them.
func newBroker(kind, dir string) (*testinfra.Broker, error) {
	return testinfra.NewBroker(testinfra.BrokerOptions{Kind: kind, Dir: dir, Persist: true, Started: track, Exited: untrack})
}

// startBroker starts the bus's broker in the work directory, stopped when the run ends.
func (r *rig) startBroker(kind string) (*testinfra.Broker, error) {
	b, err := newBroker(kind, r.path("broker"))
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		return nil, err
	}
	r.onClose(func() { _ = b.Stop() })
	return b, nil
}

// replicaSetup is one serve replica's configuration: its directory, file sink and webhook
// sink as a single serve's, and its share of the shared store and bus.
type replicaSetup struct {
	serveSetup
	Name   string
	DSN    string
	Bus    string // gochannel, redisstream, nats
	BusURL string
}

// replicaConfig is the YAML of one replica: the same as every other replica's but for its
// listen address and its file sink's directory. public_url would be the load balancer's
// address in production; here each replica names itself (nothing is submitted). Sinks are
// named alike on every replica: a sink's queue in PostgreSQL is shared by name, and each
// delivery is worked by whichever replica claims it.
func replicaConfig(s replicaSetup, addr string) string {
	var b strings.Builder
	configHead(&b, addr)
	fmt.Fprintf(&b, "store:\n  driver: postgres\n  dsn: %q\n", s.DSN)
	fmt.Fprintf(&b, "bus:\n  driver: %s\n", s.Bus)
	if s.BusURL != "" {
		fmt.Fprintf(&b, "  url: %s\n", s.BusURL)
	}
	configTail(&b, s.serveSetup)
	return b.String()
}

// replica prepares a serve replica for the setup, killed when the run ends unless the run
// stopped it; serveProc's start, stop and kill9 run it.
func (r *rig) replica(s replicaSetup) (*serveProc, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("replica directory: %w", err)
	}
	p, err := prepareServe(r.bin, s.serveSetup, "", "replica", func(addr string) string { return replicaConfig(s, addr) })
	if err != nil {
		return nil, err
	}
	r.onClose(func() { _ = p.kill9() })
	return p, nil
}
