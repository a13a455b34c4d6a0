package handlers_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the test schemas
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/postgres"
)

// The bus tests run the real brokers, installed from Debian's redis-server and nats-server
// packages (make deps), and PostgreSQL for the tests of several replicas
// (scripts/pg.sh run -- go test ./handlers/); without them they skip and say so.

const envPGDSN = "SCRIBEHOOK_TEST_PG_DSN"

func findBinary(t *testing.T, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	// Debian puts nats-server in /usr/sbin, which a non-root PATH often lacks.
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	t.Skipf("%s not found: install the Debian package %s (make deps) to run this test", name, pkg)
	return ""
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// broker is a broker process on a fixed loopback port and data directory, which a test may
// stop and start again.
type broker struct {
	t      *testing.T
	driver string
	url    string
	bin    string
	args   []string
	ready  func() error

	mu     sync.Mutex
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
}

func (b *broker) start() {
	b.t.Helper()
	b.mu.Lock()
	out := &bytes.Buffer{}
	cmd := exec.Command(b.bin, b.args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		b.t.Fatalf("start %s: %v", b.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.cmd, b.out, b.exited = cmd, out, exited
	b.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := b.ready()
		if err == nil {
			return
		}
		select {
		case <-exited:
			b.t.Fatalf("%s exited: %s", b.bin, out.String())
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s not ready: %v", b.bin, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server (SIGTERM: a restart, which lets NATS close its store cleanly).
func (b *broker) stop() {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// startRedis runs redis-server without persistence: a restart loses the stream and its
// consumer group, the hardest case for the bus.
func startRedis(t *testing.T) *broker {
	t.Helper()
	bin := findBinary(t, "redis-server", "redis-server")
	port := freePort(t)
	b := &broker{t: t, driver: handlers.BusRedisStream, url: "redis://127.0.0.1:" + port + "/0", bin: bin,
		args: []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}}
	b.ready = func() error {
		opts, _ := redis.ParseURL(b.url)
		c := redis.NewClient(opts)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx).Err()
	}
	b.start()
	t.Cleanup(b.stop)
	return b
}

// startNATS runs nats-server with JetStream and a store directory, which outlives a restart.
func startNATS(t *testing.T) *broker {
	t.Helper()
	bin := findBinary(t, "nats-server", "nats-server")
	port := freePort(t)
	b := &broker{t: t, driver: handlers.BusNATS, url: "nats://127.0.0.1:" + port, bin: bin,
		args: []string{"-js", "-a", "127.0.0.1", "-p", port, "-sd", t.TempDir()}}
	b.ready = func() error {
		nc, err := nats.Connect(b.url, nats.Timeout(time.Second))
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
	b.start()
	t.Cleanup(b.stop)
	return b
}

// brokers runs a subtest per broker.
func forEachBroker(t *testing.T, fn func(t *testing.T, b *broker)) {
	t.Run("redisstream", func(t *testing.T) { fn(t, startRedis(t)) })
	t.Run("nats", func(t *testing.T) { fn(t, startNATS(t)) })
}

// openBus connects a replica to the broker; the pipeline closes it.
func openBus(t *testing.T, b *broker, claimAfter time.Duration) *handlers.Bus {
	t.Helper()
	bus, err := handlers.OpenBus(context.Background(), handlers.BusConfig{
		Driver: b.driver, URL: b.url, ClaimAfter: claimAfter, Logger: quietLogger(),
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
	dsn := os.Getenv(envPGDSN)
	if dsn == "" {
		t.Skip(envPGDSN + " is not set: replicas share a PostgreSQL store; run the tests under " +
			"`scripts/pg.sh run -- go test ./handlers/`")
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", envPGDSN, err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "h_" + hex.EncodeToString(rnd[:])
	if _, err := admin.ExecContext(context.Background(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// openPG opens one replica's own connection pool to the shared database.
func openPG(t *testing.T, dsn string) store.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
