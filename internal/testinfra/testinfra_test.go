package testinfra

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

func TestFindBinaryMissing(t *testing.T) {
	_, err := FindBinary("scribehook-no-such-server", "no-such-package")
	if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "Debian package no-such-package") {
		t.Errorf("FindBinary = %v, want ErrNoBinary naming the package", err)
	}
}

// TestFreePort: the port is free, and below the ephemeral range, where no outgoing connection
// takes it before its server binds it.
func TestFreePort(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		// (A machine whose ephemeral range starts below 11000 gets any free port.)
		if n, err := strconv.Atoi(port); err != nil || low > 11000 && (n < 10000 || n >= low) {
			t.Fatalf("FreePort = %s, want a port in [10000, %d)", port, low)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatalf("port %s not free: %v", port, err)
		}
		ln.Close()
	}
}

func TestNewBrokerUnknownKind(t *testing.T) {
	if _, err := NewBroker(BrokerOptions{Kind: "kafka", Dir: t.TempDir()}); err == nil {
		t.Error("kafka accepted")
	}
}

// redisKey writes a key when set is true and says whether it is there, through the URL
// (and so its password).
func redisKey(t *testing.T, u string, set bool) bool {
	t.Helper()
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if set {
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.Exists(ctx, "k").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// A restart keeps the port and the store directory: Redis keeps its data only when persisted.
func TestRedisRestart(t *testing.T) {
	for _, persist := range []bool{false, true} {
		b := RunBroker(t, BrokerOptions{Kind: KindRedisStream, Persist: persist, Password: "pw:/@x"})
		if !strings.HasPrefix(b.URL, "redis://:") || !strings.HasSuffix(b.URL, "@"+b.Addr+"/0") {
			t.Errorf("URL %s", b.URL)
		}
		redisKey(t, b.URL, true)
		if err := b.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := b.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		if err := b.Start(); err == nil {
			t.Error("Start of a running broker succeeded")
		}
		if got := redisKey(t, b.URL, false); got != persist {
			t.Errorf("persist %v: key kept over the restart: %v", persist, got)
		}
		logs, _ := filepath.Glob(filepath.Join(b.Dir, "redisstream-*.log"))
		if len(logs) != 2 {
			t.Errorf("logs %v, want one per start", logs)
		}
	}
}

func TestNATSRestart(t *testing.T) {
	for _, password := range []string{"", "s3cret"} {
		b := RunBroker(t, BrokerOptions{Kind: KindNATS, Password: password})
		if strings.Contains(b.URL, "@") != (password != "") {
			t.Errorf("URL %s", b.URL)
		}
		stream := func() (uint64, error) {
			nc, err := nats.Connect(b.URL)
			if err != nil {
				return 0, err
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "s", Subjects: []string{"s"}})
			if err != nil {
				return 0, err
			}
			info, err := s.Info(ctx)
			if err != nil {
				return 0, err
			}
			return info.State.Msgs, nil
		}
		if _, err := stream(); err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(b.URL)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		if _, err := js.Publish(context.Background(), "s", []byte("x")); err != nil {
			t.Fatal(err)
		}
		nc.Close()
		if err := b.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		if n, err := stream(); err != nil || n != 1 {
			t.Errorf("after the restart: %d messages, %v; want the one kept in the store", n, err)
		}
	}
}

// A server that exits during its start is an error with its log.
func TestBrokerExitsDuringStart(t *testing.T) {
	b, err := NewBroker(BrokerOptions{Kind: KindRedisStream, Dir: t.TempDir()})
	if errors.Is(err, ErrNoBinary) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.args = append(b.args, "--no-such-option", "x")
	err = b.Start()
	if err == nil || !strings.Contains(err.Error(), "exited during start") {
		t.Fatalf("Start = %v", err)
	}
	if err := b.Stop(); err != nil {
		t.Errorf("Stop after a failed start: %v", err)
	}
}

func TestWithSearchPath(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u@127.0.0.1:5432/db?sslmode=disable": "postgres://u@127.0.0.1:5432/db?search_path=s&sslmode=disable",
		"postgresql://u@h/db?search_path=old":            "postgresql://u@h/db?search_path=s",
		"host=127.0.0.1 dbname=db":                       "host=127.0.0.1 dbname=db search_path=s",
	} {
		if got, err := WithSearchPath(dsn, "s"); err != nil || got != want {
			t.Errorf("WithSearchPath(%q) = %q, %v; want %q", dsn, got, err, want)
		}
	}
	if _, err := WithSearchPath("postgres://u:pw@h:bad/db", "s"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad URL: %v", err)
	}
	if got := RedactDSN("postgres://u:pw@h/db"); got != "postgres://u:xxxxx@h/db" {
		t.Errorf("RedactDSN = %q", got)
	}
}

func TestSchema(t *testing.T) {
	if _, err := NewSchema(context.Background(), "postgres://x/db", "a; DROP"); err == nil {
		t.Error("prefix with SQL accepted")
	}
	dsn := PGDSN(t)
	a, b := PGSchema(t), PGSchema(t)
	if a.Name == b.Name || !strings.HasPrefix(a.Name, "t_") {
		t.Errorf("schemas %s and %s", a.Name, b.Name)
	}
	ctx := context.Background()
	if _, err := a.DB.ExecContext(ctx, `CREATE TABLE x (n int)`); err != nil {
		t.Fatal(err)
	}
	var where string
	if err := a.DB.QueryRowContext(ctx, `SELECT table_schema FROM information_schema.tables WHERE table_name = 'x'`).Scan(&where); err != nil || where != a.Name {
		t.Errorf("table in %q (%v), want the schema %s", where, err, a.Name)
	}
	s, err := NewSchema(ctx, dsn, "dropped")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := a.DB.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1`, s.Name).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s still there (%d, %v)", s.Name, n, err)
	}
	if _, err := NewSchema(ctx, "postgres://nobody:pw@127.0.0.1:1/db?connect_timeout=2", "t"); err == nil || strings.Contains(err.Error(), "pw@") {
		t.Errorf("unreachable database: %v", err)
	}
}
