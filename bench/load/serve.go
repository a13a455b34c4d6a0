package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scribehook/scribehook/internal/testinfra"
)

// Secrets of the serve processes the tool starts: fixed, the runs are on loopback only.
const (
	routeToken   = "bench-route-token-5f1c0e8a9b7d4c3e2a1f0b9c8d7e6f5a"
	readToken    = "bench-read-token-0a1b2c3d4e5f"
	hookSecret   = "whsec_YmVuY2gtd2ViaG9vay1zaWduaW5nLXNlY3JldC0wMQ=="
	envRoute     = "BENCH_ROUTE_TOKEN"
	envRead      = "BENCH_READ_TOKEN"
	envHook      = "BENCH_HOOK_SECRET"
	envNoAPIKey  = "BENCH_NO_API_KEY"
	callbackPath = "/v1/callbacks/" + routeToken
)

// serveSetup is what a serve process runs with; it becomes the YAML configuration file.
type serveSetup struct {
	Dir         string // working directory: logs, configuration, default database
	DBDir       string // where the SQLite file goes (Dir when empty)
	FileSink    string // file sink directory; none when empty
	HookURL     string // webhook sink URL; none when empty
	HookEvents  string // the webhook sink's event glob (default "*")
	HookOrdered bool   // the webhook sink delivers one event at a time per session, in order
	DebugListen string // debug.listen, the profiling endpoint (a build that knows the key); none when empty
	Subtitles   bool   // render SRT and WebVTT artifacts under Dir/artifacts
	Synchronous string // SQLite synchronous (default full)
}

// serveProc is one `scribehook serve` subprocess with its configuration. It can be stopped,
// killed and started again on the same address and database (Start, from testinfra.Process,
// runs it and waits until /readyz answers 200; its logs are serve-N.log in setup.Dir).
type serveProc struct {
	*testinfra.Process
	bin   string
	setup serveSetup
	addr  string
	cfg   string
	db    string
	env   []string
}

func newServe(bin string, setup serveSetup) (*serveProc, error) {
	if setup.DBDir == "" {
		setup.DBDir = setup.Dir
	}
	if setup.Synchronous == "" {
		setup.Synchronous = "full"
	}
	db := filepath.Join(setup.DBDir, "scribehook.db")
	return prepareServe(bin, setup, db, "serve", func(addr string) string { return serveConfig(setup, addr, db) })
}

// prepareServe makes a serve process on a free loopback port, its configuration (what config
// writes for that port) in setup.Dir; serveProc's start, stop and kill9 run it. what names the
// process in an error.
func prepareServe(bin string, setup serveSetup, db, what string, config func(addr string) string) (*serveProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p := &serveProc{bin: bin, setup: setup, addr: addr, cfg: filepath.Join(setup.Dir, "serve.yaml"), db: db}
	if err := os.WriteFile(p.cfg, []byte(config(addr)), 0o600); err != nil {
		return nil, fmt.Errorf("write %s configuration: %w", what, err)
	}
	// The user's own SCRIBEHOOK_* variables would override the generated configuration.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SCRIBEHOOK_") {
			p.env = append(p.env, kv)
		}
	}
	p.env = append(p.env, envRoute+"="+routeToken, envRead+"="+readToken, envHook+"="+hookSecret)
	p.Process = &testinfra.Process{
		Name: what, LogName: "serve", Dir: setup.Dir, Within: 30 * time.Second,
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin, "serve", "--config", p.cfg)
			cmd.Env = p.env
			return cmd
		},
		Ready: func() error {
			if code, body := httpGet(p.url("/readyz")); code != http.StatusOK {
				return fmt.Errorf("GET /readyz: %d %s", code, strings.TrimSpace(body))
			}
			return nil
		},
		Started: track, Exited: untrack,
	}
	return p, nil
}

// serveConfig is the YAML of a single serve on SQLite: a static route without signature (the
// load tool plays a service that posts to a configured URL), no service API key (nothing is
// resolved over the network), and the sinks the run asks for.
func serveConfig(s serveSetup, addr, db string) string {
	var b strings.Builder
	configHead(&b, addr)
	fmt.Fprintf(&b, "store:\n  driver: sqlite\n  dsn: %q\n  synchronous: %s\n", db, s.Synchronous)
	configTail(&b, s)
	return b.String()
}

// configHead starts every configuration the tool writes: where serve listens and the service
// it would talk to, which is never reached.
func configHead(b *strings.Builder, addr string) {
	fmt.Fprintf(b, "listen: %s\npublic_url: http://%s\nread_token_env: %s\n", addr, addr, envRead)
	fmt.Fprintf(b, "service:\n  base_url: http://127.0.0.1:9\n  api_key_env: %s\n", envNoAPIKey)
}

// configTail ends every configuration the tool writes: the route the load posts to, the
// subtitles and the sinks of s.
func configTail(b *strings.Builder, s serveSetup) {
	fmt.Fprintf(b, "routes:\n  - name: bench\n    token_env: %s\n", envRoute)
	if s.DebugListen != "" {
		fmt.Fprintf(b, "debug:\n  listen: %s\n", s.DebugListen)
	}
	if s.Subtitles {
		fmt.Fprintf(b, "subtitles:\n  profile: netflix-adult\n  formats: [srt, vtt]\n  dir: %q\n", filepath.Join(s.Dir, "artifacts"))
	} else {
		b.WriteString("subtitles:\n  formats: []\n")
	}
	if s.FileSink == "" && s.HookURL == "" {
		b.WriteString("sinks: []\n")
		return
	}
	b.WriteString("sinks:\n")
	if s.FileSink != "" {
		fmt.Fprintf(b, "  - name: files\n    kind: file\n    dir: %q\n    events: [\"*\"]\n", s.FileSink)
	}
	if s.HookURL != "" {
		events := s.HookEvents
		if events == "" {
			events = "*"
		}
		fmt.Fprintf(b, "  - name: hook\n    kind: webhook\n    url: %s\n    secret_env: %s\n    events: [%q]\n    allow: [127.0.0.0/8]\n",
			s.HookURL, envHook, events)
		if s.HookOrdered {
			b.WriteString("    ordered: true\n")
		}
	}
}

// freeAddr picks a loopback port that is free now (internal/testinfra's, as the tests pick
// theirs); serve binds it itself a moment later.
func freeAddr() (string, error) {
	port, err := testinfra.FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", port), nil
}

func (p *serveProc) url(path string) string { return "http://" + p.addr + path }

// stop asks serve to shut down (SIGTERM: in-flight requests finish) and waits; serve exiting
// with an error is one. A serve that is not running is left alone.
func (p *serveProc) stop() error {
	if !p.Running() {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM, 25*time.Second); err != nil {
		return err
	}
	if err := p.ExitErr(); err != nil {
		return fmt.Errorf("serve stopped with %w; log:\n%s", err, testinfra.Tail(p.Log(), 2000))
	}
	return nil
}

// kill9 kills serve without warning, as a crash or the OOM killer would.
func (p *serveProc) kill9() error {
	return p.Signal(syscall.SIGKILL, 10*time.Second)
}

// memory reads the process's resident set now (VmRSS) and its peak so far (VmHWM).
func memory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read memory of %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			name string
			dst  *int64
		}{{"VmRSS:", &rss}, {"VmHWM:", &hwm}} {
			if rest, ok := strings.CutPrefix(line, k.name); ok {
				kb, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if perr != nil {
					return 0, 0, fmt.Errorf("parse %s of %d: %w", k.name, pid, perr)
				}
				*k.dst = kb << 10
			}
		}
	}
	return rss, hwm, sc.Err()
}

// rssSampler polls a process's VmRSS and keeps the largest value: VmHWM alone covers the whole
// life of the process, a sampler covers one phase of it.
type rssSampler struct {
	stopCh chan struct{}
	done   chan struct{}
	peak   int64 // read only after stop
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if rss, _, err := memory(pid); err == nil {
				s.peak = max(s.peak, rss)
			}
			select {
			case <-s.stopCh:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak.
func (s *rssSampler) stop() int64 {
	close(s.stopCh)
	<-s.done
	return s.peak
}

// metric scrapes /metrics and returns the value of a metric without labels (go_goroutines).
func (p *serveProc) metric(name string) (float64, error) {
	code, body := httpGetAuth(p.url("/metrics"), readToken)
	if code != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: status %d", code)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return 0, fmt.Errorf("metric %s: %w", name, err)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("metric %s not in /metrics", name)
}

var plainClient = &http.Client{Timeout: 10 * time.Second}

// httpGet returns the status and body of a GET; status 0 when the request failed.
// httpGetAuth is a GET with token as a bearer when it is not empty (/metrics and the read
// API ask for the read token).
func httpGetAuth(url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func httpGet(url string) (int, string) { return httpGetAuth(url, "") }

// buildServe builds the scribehook binary into dir, unless bin names one already built.
func buildServe(bin, dir string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	out := filepath.Join(dir, "scribehook")
	cmd := exec.Command("go", "build", "-tags", "sqlite_fts5", "-o", out, "./cmd/scribehook")
	cmd.Dir = moduleRoot()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/scribehook: %w", err)
	}
	return out, nil
}

// moduleRoot is the directory of the module's go.mod, so the tool works from any directory of
// the repository.
func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err == nil {
		if mod := strings.TrimSpace(string(out)); mod != "" && mod != os.DevNull {
			return filepath.Dir(mod)
		}
	}
	return "."
}

// cpuTime is the CPU time a process has used so far (user + system), from /proc/<pid>/stat: a
// cost per delivery that depends less on other load of the machine than throughput does.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read cpu time of %d: %w", pid, err)
	}
	// The command name, in parentheses, may contain spaces: fields are counted after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("read cpu time of %d: malformed stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("read cpu time of %d: malformed stat", pid)
	}
	// utime and stime are fields 14 and 15 of stat, 12 and 13 after the name and state.
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read cpu time of %d: %w", pid, err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
