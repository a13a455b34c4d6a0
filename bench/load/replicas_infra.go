package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// replicaSetup is one serve replica's configuration.
type replicaSetup struct {
	Name     string
	Dir      string
	DSN      string
	Bus      string // gochannel, redisstream, nats
	BusURL   string
	FileSink string // empty: none
	HookURL  string // empty: none
}

// replicaConfig is the YAML of one replica: the same as every other replica's but for its
// listen address and its file sink's directory. public_url would be the load balancer's
// address in production; here each replica names itself (nothing is submitted).
func replicaConfig(s replicaSetup, addr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: %s\npublic_url: http://%s\nread_token_env: %s\n", addr, addr, envRead)
	fmt.Fprintf(&b, "service:\n  base_url: http://127.0.0.1:9\n  api_key_env: %s\n", envNoAPIKey)
	fmt.Fprintf(&b, "store:\n  driver: postgres\n  dsn: %q\n", s.DSN)
	fmt.Fprintf(&b, "bus:\n  driver: %s\n", s.Bus)
	if s.BusURL != "" {
		fmt.Fprintf(&b, "  url: %s\n", s.BusURL)
	}
	fmt.Fprintf(&b, "routes:\n  - name: bench\n    token_env: %s\n", envRoute)
	b.WriteString("subtitles:\n  formats: []\n")
	if s.FileSink == "" && s.HookURL == "" {
		b.WriteString("sinks: []\n")
		return b.String()
	}
	// Sinks are named alike on every replica: a sink's queue in PostgreSQL is shared by name,
	// and each delivery is worked by whichever replica claims it.
	b.WriteString("sinks:\n")
	if s.FileSink != "" {
		fmt.Fprintf(&b, "  - name: files\n    kind: file\n    dir: %q\n    events: [\"*\"]\n", s.FileSink)
	}
	if s.HookURL != "" {
		fmt.Fprintf(&b, "  - name: hook\n    kind: webhook\n    url: %s\n    secret_env: %s\n    events: [\"*\"]\n    allow: [127.0.0.0/8]\n",
			s.HookURL, envHook)
	}
	return b.String()
}

// newReplica prepares a serve process for the setup; serveProc's start, stop and kill9 run it.
func newReplica(bin string, s replicaSetup) (*serveProc, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("replica directory: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p := &serveProc{bin: bin, setup: serveSetup{Dir: s.Dir, FileSink: s.FileSink, HookURL: s.HookURL}, addr: addr,
		cfg: filepath.Join(s.Dir, "serve.yaml")}
	if err := os.WriteFile(p.cfg, []byte(replicaConfig(s, addr)), 0o600); err != nil {
		return nil, fmt.Errorf("write replica configuration: %w", err)
	}
	// The user's own SCRIBEHOOK_* variables would override the generated configuration.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SCRIBEHOOK_") {
			p.env = append(p.env, kv)
		}
	}
	p.env = append(p.env, envRoute+"="+routeToken, envRead+"="+readToken, envHook+"="+hookSecret)
	return p, nil
}
