package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the driver store/postgres uses, for verification
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The infrastructure of the replicas run: a schema of its own in PostgreSQL, the broker of the
// bus (redis-server or nats-server from Debian's packages, on a free loopback port with its
// store in the work directory), and the serve replicas with their generated configuration.

// pgSchema is a schema made for one run, so that runs sharing a database never see each
// other's rows; dsn selects it through search_path.
type pgSchema struct {
	name string
	dsn  string
	db   *sql.DB
}

// newSchema creates a fresh schema in the database of dsn.
func newPGSchema(dsn string) (*pgSchema, error) {
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL (%s): %w", redactDSN(dsn), err)
	}
	name := fmt.Sprintf("bench_replicas_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000_000)
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	s := &pgSchema{name: name, dsn: withSearchPath(dsn, name)}
	if s.db, err = sql.Open("pgx", s.dsn); err != nil {
		return nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	s.db.SetMaxOpenConns(4)
	return s, nil
}

// drop removes the schema and everything in it.
func (s *pgSchema) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, "DROP SCHEMA "+s.name+" CASCADE"); err != nil {
		fmt.Fprintf(os.Stderr, "load: drop schema %s: %v\n", s.name, err)
	}
	s.db.Close()
}

// withSearchPath sets the search_path parameter of a URL or key=value DSN.
func withSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// redactDSN hides a URL DSN's password for messages.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	return dsn
}

// findBinary looks a server up in PATH, then where Debian puts it (nats-server is in
// /usr/sbin, which a non-root PATH often lacks), as sinks/broker_test.go does.
func findBinary(name, pkg string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: install the Debian package %s (make deps)", name, pkg)
}

// brokerProc is a redis-server or nats-server the tool runs: it can be stopped with SIGTERM
// and started again on the same port with the same store directory.
type brokerProc struct {
	kind  string // redisstream or nats
	bin   string
	port  string
	dir   string // work directory: logs, and the store under data/
	url   string
	args  []string
	ready func() error

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

func newBroker(kind, dir string) (*brokerProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	b := &brokerProc{kind: kind, port: port, dir: dir}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("broker directory: %w", err)
	}
	switch kind {
	case "redisstream":
		if b.bin, err = findBinary("redis-server", "redis-server"); err != nil {
			return nil, err
		}
		b.url = "redis://127.0.0.1:" + port + "/0"
		// The append-only file, fsynced every second, is how Redis is run as a bus that must
		// survive its own restart; a SIGTERM writes it out completely before exiting.
		b.args = []string{"--port", port, "--bind", "127.0.0.1", "--dir", data, "--appendonly", "yes",
			"--appendfsync", "everysec", "--save", "", "--daemonize", "no", "--protected-mode", "yes"}
		b.ready = func() error { return redisPing(addr) }
	case "nats":
		if b.bin, err = findBinary("nats-server", "nats-server"); err != nil {
			return nil, err
		}
		b.url = "nats://127.0.0.1:" + port
		b.args = []string{"-js", "-a", "127.0.0.1", "-p", port, "-sd", data}
		b.ready = func() error { return natsReady(b.url) }
	default:
		return nil, fmt.Errorf("no broker for bus driver %q", kind)
	}
	return b, nil
}

// start runs the broker and waits until it serves.
func (b *brokerProc) start() error {
	b.mu.Lock()
	b.starts++
	logPath := filepath.Join(b.dir, fmt.Sprintf("%s-%d.log", b.kind, b.starts))
	b.mu.Unlock()
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("broker log: %w", err)
	}
	cmd := exec.Command(b.bin, b.args...)
	cmd.Dir = b.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", b.bin, err)
	}
	track(cmd.Process)
	exited := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.exited = cmd, exited
	b.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		untrack(cmd.Process)
		logf.Close()
		close(exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := b.ready()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited during start; log %s:\n%s", filepath.Base(b.bin), logPath, tail(logPath, 2000))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 20s (%v); log %s:\n%s", filepath.Base(b.bin), err, logPath, tail(logPath, 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM (a clean shutdown: Redis writes its append-only file, NATS closes its
// JetStream store) and waits; after 20 s it kills.
func (b *brokerProc) stop() error {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", b.kind, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%s did not stop within 20s of SIGTERM: killed", filepath.Base(b.bin))
	}
}

// redisPing sends PING in Redis's protocol and expects +PONG.
func redisPing(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
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
