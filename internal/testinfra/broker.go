// Package testinfra runs the servers the tests and bench/load need: a broker of the bus
// (Debian's redis-server or nats-server with JetStream, on a free loopback port) that can be
// stopped and started again on the same port, and a PostgreSQL schema of its own per test or
// run. The plain functions return errors, for bench/load (a main package); the functions that
// take a testing.TB (Redis, NATS, RunBroker, PGSchema, Port) skip where a server or database is
// missing and fail the test on other errors, so that every package's tests behave alike.
package testinfra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// The broker kinds are the bus drivers' names (handlers.BusRedisStream, handlers.BusNATS), so
// that a caller passes its driver through; this package does not import handlers, whose own
// tests use it.
const (
	KindRedisStream = "redisstream"
	KindNATS        = "nats"
)

// ErrNoBinary is wrapped by the error of a server binary that is not installed: tests skip on
// it, a tool reports it.
var ErrNoBinary = errors.New("server binary not installed")

const (
	readyWithin = 20 * time.Second // a JetStream store being recovered takes a while
	stopGrace   = 20 * time.Second // SIGTERM, then SIGKILL
)

// FindBinary looks a server up in PATH, then where Debian puts it: nats-server is in
// /usr/sbin, which a non-root PATH often lacks. The error names pkg, the Debian package.
func FindBinary(name, pkg string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: install the Debian package %s (make deps): %w", name, pkg, ErrNoBinary)
}

// BrokerOptions says which broker to run and how.
type BrokerOptions struct {
	// Kind is KindRedisStream or KindNATS.
	Kind string
	// Dir is the broker's work directory: its logs (one file per start, named in errors) and
	// its store under data/, which a restart keeps. It is created if missing.
	Dir string
	// Port is the loopback port; empty picks a free one. Every start uses the same port, so
	// that clients reconnect to the restarted broker.
	Port string
	// Password, when set, is required by the broker and is in URL (NATS: user scribehook).
	Password string
	// Persist makes Redis write an append-only file, fsynced every second, as a bus that must
	// survive its own restart is run. Without it a Redis restart loses the streams and their
	// consumer groups, the hardest case for the bus. JetStream always keeps its store in Dir.
	Persist bool
	// Started and Exited, when set, are told of each server process, so that a tool can kill
	// what it started when it is interrupted.
	Started, Exited func(*os.Process)
}

// Broker is a redis-server or nats-server on a fixed loopback port and store directory, which
// may be stopped and started again.
type Broker struct {
	Kind string
	URL  string // with the password, if any
	Addr string // 127.0.0.1:port
	Port string
	Bin  string
	Dir  string

	args  []string
	ready func() error
	proc  *Process
}

// NewBroker prepares a broker without starting it; the error wraps ErrNoBinary when the
// server is not installed.
func NewBroker(opts BrokerOptions) (*Broker, error) {
	b := &Broker{Kind: opts.Kind, Port: opts.Port, Dir: opts.Dir}
	if b.Dir == "" {
		return nil, errors.New("broker: no work directory")
	}
	name := ""
	switch opts.Kind {
	case KindRedisStream:
		name = "redis-server"
	case KindNATS:
		name = "nats-server"
	default:
		return nil, fmt.Errorf("no broker for bus driver %q", opts.Kind)
	}
	var err error
	// The Debian packages are named as their servers.
	if b.Bin, err = FindBinary(name, name); err != nil {
		return nil, err
	}
	if b.Port == "" {
		if b.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	b.Addr = net.JoinHostPort("127.0.0.1", b.Port)
	data := filepath.Join(b.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("broker directory: %w", err)
	}
	if opts.Kind == KindRedisStream {
		u := &url.URL{Scheme: "redis", Host: b.Addr, Path: "/0"}
		if opts.Password != "" {
			u.User = url.UserPassword("", opts.Password)
		}
		b.URL = u.String()
		b.args = []string{"--port", b.Port, "--bind", "127.0.0.1", "--dir", data, "--save", "",
			"--daemonize", "no", "--protected-mode", "yes"}
		if opts.Persist {
			// A SIGTERM writes the append-only file out completely before Redis exits.
			b.args = append(b.args, "--appendonly", "yes", "--appendfsync", "everysec")
		} else {
			b.args = append(b.args, "--appendonly", "no")
		}
		if opts.Password != "" {
			b.args = append(b.args, "--requirepass", opts.Password)
		}
		b.ready = func() error { return redisReady(b.URL) }
	} else {
		u := &url.URL{Scheme: "nats", Host: b.Addr}
		b.args = []string{"-js", "-a", "127.0.0.1", "-p", b.Port, "-sd", data}
		if opts.Password != "" {
			u.User = url.UserPassword("scribehook", opts.Password)
			b.args = append(b.args, "--user", "scribehook", "--pass", opts.Password)
		}
		b.URL = u.String()
		b.ready = func() error { return natsReady(b.URL) }
	}
	b.proc = &Process{
		Name: filepath.Base(b.Bin), LogName: b.Kind, Dir: b.Dir,
		Command: func() *exec.Cmd { return exec.Command(b.Bin, b.args...) },
		Ready:   func() error { return b.ready() },
		Within:  readyWithin, Started: opts.Started, Exited: opts.Exited,
	}
	return b, nil
}

// StartBroker is NewBroker and Start.
func StartBroker(opts BrokerOptions) (*Broker, error) {
	b, err := NewBroker(opts)
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		return nil, err
	}
	return b, nil
}

// Start runs the server and waits until it serves: Redis answers PING, JetStream answers for
// the account (only once it has opened its store).
func (b *Broker) Start() error { return b.proc.Start(context.Background()) }

// Stop sends SIGTERM, a clean shutdown (Redis writes its append-only file, NATS closes its
// JetStream store), and waits; after 20 s it kills and says so. Stopping a stopped broker does
// nothing.
func (b *Broker) Stop() error { return b.proc.Signal(syscall.SIGTERM, stopGrace) }

// Kill ends the server at once, for the end of a test, where nothing needs its store after.
func (b *Broker) Kill() { b.proc.Kill() }

// redisReady pings through the client, which sends the URL's password first.
func redisReady(u string) error {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return fmt.Errorf("parse %s: %w", u, err)
	}
	opts.MaxRetries = -1 // the loop around it retries; a single attempt keeps it to its second
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// natsReady connects and asks JetStream for the account's information: the server answers it
// only once JetStream has opened its store.
func natsReady(u string) error {
	nc, err := nats.Connect(u, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Tail is the last n bytes of the file at path (a server's log), for error messages; if the
// file cannot be read, the error in parentheses.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
