package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/engine"
)

const (
	testKey   = "nethttp-test-key"
	readToken = "nethttp-read-token"
)

// The program, built and run as a subprocess against a sandbox of the service and a file
// server on loopback: a job submitted through its own endpoint comes back as a callback under
// /hooks (net/http's StripPrefix in front of kit.Handler), its Go handler prints the transcript the sidecar fixes, the read API under /hooks
// serves the job, a bad callback token is refused, the app's own route still answers, and
// SIGTERM stops it cleanly.
func TestProgramEndToEnd(t *testing.T) {
	began := time.Now()
	service, audioURL := startWorld(t)

	bin := filepath.Join(t.TempDir(), "nethttp")
	// `go test` puts its own toolchain first on PATH, so this is the same go.
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bin, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	built := time.Now()

	// The point of the example: net/http only. (The kit itself uses Fiber inside; the program
	// never touches it.)
	list, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(list)) {
		if strings.Contains(imp, "gofiber") || strings.Contains(imp, "fasthttp") {
			t.Errorf("the program imports %s", imp)
		}
	}

	dir := t.TempDir()
	cmd := exec.Command(bin,
		"-listen", "127.0.0.1:0", // the program derives public_url from the port it got
		"-service-url", service,
		"-store", filepath.Join(dir, "app.db"),
		"-artifacts", filepath.Join(dir, "artifacts"),
	)
	cmd.Env = append(cleanEnv(), "SCRIBEHOOK_API_KEY="+testKey, "SCRIBEHOOK_READ_TOKEN="+readToken)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := collect(stdout)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
		// Its output shows in -v; its logs (standard error) only when something failed.
		t.Logf("program's stdout:\n%s", strings.Join(lines.all(), "\n"))
		if t.Failed() {
			t.Logf("program's stderr:\n%s", stderr.String())
		}
	})

	listening := lines.wait(t, "the address line", 30*time.Second, func(all []string) (string, bool) {
		for _, l := range all {
			if rest, ok := strings.CutPrefix(l, "listening on "); ok {
				return strings.Fields(rest)[0], true
			}
		}
		return "", false
	})
	base := listening // http://127.0.0.1:port

	// Submit through the program's own endpoint.
	resp, body := do(t, http.MethodPost, base+"/transcribe?audio_url="+url.QueryEscape(audioURL), "", nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /transcribe: %d %s", resp.StatusCode, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("POST /transcribe answered %s (%v)", body, err)
	}

	// The Go handler saw job.succeeded: its first utterance is the sidecar's.
	header := "job " + created.ID + " succeeded, "
	first := lines.wait(t, "the handler's transcript", 60*time.Second, func(all []string) (string, bool) {
		for i, l := range all {
			if strings.HasPrefix(l, header) && i+1 < len(all) {
				_, text, ok := strings.Cut(all[i+1], "] ")
				return text, ok
			}
		}
		return "", false
	})
	if first != "Welcome to scribehook" {
		t.Errorf("first utterance printed by the handler: %q, want %q", first, "Welcome to scribehook")
	}
	handled := time.Now()

	// The read API under /hooks serves the job, done, with its result; only with the token.
	resp, body = do(t, http.MethodGet, base+"/hooks/v1/jobs/"+created.ID, "Bearer "+readToken, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /hooks/v1/jobs/%s: %d %s", created.ID, resp.StatusCode, body)
	}
	var job struct {
		ID     string
		Status string
		Result struct {
			Transcription struct {
				Utterances []struct{ Text string }
			}
		}
	}
	if err := json.Unmarshal(body, &job); err != nil {
		t.Fatalf("job: %v: %s", err, body)
	}
	if job.ID != created.ID || job.Status != "done" {
		t.Errorf("read API: job %q status %q, want %q done", job.ID, job.Status, created.ID)
	}
	if u := job.Result.Transcription.Utterances; len(u) == 0 || u[0].Text != "Welcome to scribehook" {
		t.Errorf("read API: utterances %+v", u)
	}
	if resp, body := do(t, http.MethodGet, base+"/hooks/v1/jobs/"+created.ID, "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("read API without a token: %d %s, want 401", resp.StatusCode, body)
	}

	// A callback with a token the kit never minted is refused.
	resp, body = do(t, http.MethodPost, base+"/hooks/v1/callbacks/not-a-token", "", []byte(`{"id":"x","event":"transcription.success"}`))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("callback with a bad token: %d %s, want 401", resp.StatusCode, body)
	}

	// The program's own routes still answer, and the kit's health beside them.
	if resp, body := do(t, http.MethodGet, base+"/hello", "", nil); resp.StatusCode != http.StatusOK || string(body) != "hello from the program's own route\n" {
		t.Errorf("GET /hello: %d %q", resp.StatusCode, body)
	}
	if resp, body := do(t, http.MethodGet, base+"/hooks/healthz", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /hooks/healthz: %d %s", resp.StatusCode, body)
	}

	// SIGTERM: the server stops, then the kit, and the program exits 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after SIGTERM")
	}
	lines.wait(t, "the stop line", 5*time.Second, func(all []string) (string, bool) {
		return "", len(all) > 0 && all[len(all)-1] == "stopped"
	})
	t.Logf("build %v, start to handled job %v, total %v",
		built.Sub(began).Round(time.Millisecond), handled.Sub(built).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// startWorld starts, on loopback, a sandbox of the service whose scripted engine returns the
// words of a recording's sidecar, and a file server with testdata's recording and sidecar. It
// returns the sandbox's URL and the recording's.
func startWorld(t *testing.T) (string, string) {
	t.Helper()
	eng, err := engine.NewRegistry().New(engine.ScriptedName)
	if err != nil {
		t.Fatal(err)
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	sb, err := sandbox.New(sandbox.Config{
		APIKey: testKey, Engine: eng, Logger: logrus.NewEntry(quiet),
		// The recording is on loopback, which the sandbox refuses to fetch unless allowed.
		AllowFetch: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Callbacks:  sandbox.CallbackPolicy{Schedule: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, time.Second}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(sb.Handler())
	files := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	t.Cleanup(func() {
		files.Close()
		hs.CloseClientConnections()
		hs.Close()
		sb.Close()
	})
	return hs.URL, files.URL + "/sample.wav"
}

// cleanEnv is the test's environment without the variables the program reads, so that a
// developer's own settings cannot change what is tested.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SCRIBEHOOK_") && !strings.HasPrefix(kv, "LISTEN_ADDR=") {
			env = append(env, kv)
		}
	}
	return env
}

// buildFlags are the flags of the program's build (race_test.go adds -race).
var buildFlags []string

var client = &http.Client{Timeout: 30 * time.Second}

func do(t *testing.T, method, u, auth string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, u, err)
	}
	return resp, b
}

// lines are the program's output lines as they come.
type lines struct {
	mu  sync.Mutex
	got []string
}

func collect(r io.Reader) *lines {
	l := &lines{}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.got = append(l.got, sc.Text())
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// wait polls the lines until find reports what it looks for.
func (l *lines) wait(t *testing.T, what string, d time.Duration, find func([]string) (string, bool)) string {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if v, ok := find(l.all()); ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, d)
		}
	}
}

// lockedBuffer is the program's standard error, written by exec's copier and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
