package main

// The set-up the command tests share: the loopback world (internal/sandboxtest's sandbox with
// the scripted engine and a file server with the demo's sample), serve started on a store, the
// root command run with arguments, and the waits.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// startWorld starts a sandbox with cfg and a file server with the demo's sample
// (sandboxtest.StartWorld), and a client of the sandbox with cfg.APIKey and opts. The caller
// closes the world, so that it can stop the sandbox before serve: the sandbox's retries and
// injected duplicates would otherwise keep serve's connections busy while it shuts down.
func startWorld(t *testing.T, cfg sandbox.Config, opts ...submitter.Option) (*sandboxtest.World, *submitter.Client) {
	t.Helper()
	w, err := sandboxtest.StartWorld(cfg, sandboxtest.DemoSample(t))
	if err != nil {
		t.Fatal(err)
	}
	client, err := submitter.New(w.Service.URL, cfg.APIKey, opts...)
	if err != nil {
		_ = w.Close()
		t.Fatal(err)
	}
	return w, client
}

// served is serve running on a store and a loopback port (startServer).
type served struct {
	kit   *scribehook.Kit
	store store.Store
	addr  string
}

// serveOn starts serve with o on st, listening on addr (a free loopback port when empty).
// stop shuts it down, then closes st.
func serveOn(t *testing.T, st store.Store, addr string, o serverOptions) *served {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	o.Store, o.Listener = st, ln
	kit, err := startServer(context.Background(), o)
	if err != nil {
		_ = ln.Close()
		_ = st.Close()
		t.Fatal(err)
	}
	return &served{kit: kit, store: st, addr: ln.Addr().String()}
}

func (s *served) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.kit.Shutdown(ctx); err != nil {
		t.Errorf("shutdown of serve on %s: %v", s.addr, err)
	}
	_ = s.store.Close()
}

// freePort is a loopback port nothing listens on now: for a command to listen on, or for a
// peer that is down.
func freePort(t *testing.T) string {
	t.Helper()
	port, err := testinfra.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// rootCmd is the root command with args, reading stdin (when not nil) and writing out and
// errOut.
func rootCmd(stdin io.Reader, out, errOut io.Writer, args ...string) *cobra.Command {
	cmd := newRootCmd()
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	if stdin != nil {
		cmd.SetIn(stdin)
	}
	cmd.SetArgs(args)
	return cmd
}

// runCmd runs the root command with args and returns what it wrote on stdout and stderr.
func runCmd(ctx context.Context, stdin io.Reader, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := rootCmd(stdin, &out, &errOut, args...).ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// startCmd runs the root command with args in the background, writing to out and errOut
// (sandboxtest.Buffer values, which the test reads meanwhile); the channel yields its error.
func startCmd(ctx context.Context, stdin io.Reader, out, errOut io.Writer, args ...string) <-chan error {
	done := make(chan error, 1)
	cmd := rootCmd(stdin, out, errOut, args...)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	return done
}

// waitServing polls url until it answers 200; the test fails if the command behind it, whose
// error done yields (startCmd), ends first, with what it wrote to logs.
func waitServing(t *testing.T, url string, done <-chan error, logs *sandboxtest.Buffer) {
	t.Helper()
	testwait.For(t, url+" to answer 200", 30*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the command serving %s ended: %v\n%s", url, err, logs.String())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitEnded waits up to d for the command whose error done yields (startCmd) to return, and
// returns that error; the test fails if it still runs then.
func waitEnded(t *testing.T, done <-chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("the command still runs %s after it was told to stop", d)
		return nil
	}
}

// tempDB is a fresh directory and the path in it of the SQLite database serve keeps, not
// created yet.
func tempDB(t *testing.T) (dir, db string) {
	dir = t.TempDir()
	return dir, filepath.Join(dir, "scribehook.db")
}

// writeSQLiteConfig writes dir/scribehook.yaml naming db as the SQLite store, followed by the
// YAML lines of more, and returns its path.
func writeSQLiteConfig(t *testing.T, dir, db string, more ...string) string {
	t.Helper()
	path := filepath.Join(dir, "scribehook.yaml")
	cfg := fmt.Sprintf("store: {driver: sqlite, dsn: %q}\n", db) + strings.Join(more, "")
	writeFile(t, path, []byte(cfg))
	return path
}

// readFile is the content of the file at path, failing the test if it cannot be read.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFile writes data to the file at path, readable by its owner only, failing the test if
// it cannot.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// openSQLiteRO opens the SQLite database at path read-only, through database/sql, to count
// rows beside the store that writes them; it is closed at the end of the test.
func openSQLiteRO(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fileSink is a file sink writing under dir every event.
func fileSink(t *testing.T, dir string) sinkSetup {
	t.Helper()
	return newSink(t, sinks.Spec{Name: "files", Kind: "file", Dir: dir, Filter: sinks.Filter{Events: []string{"*"}}}, logx.Discard())
}

// newSink builds the sink spec describes, logging to log, for serverOptions.Sinks.
func newSink(t *testing.T, spec sinks.Spec, log logrus.FieldLogger) sinkSetup {
	t.Helper()
	sk, err := sinks.New(spec, sinks.Deps{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return sinkSetup{Spec: spec, Sink: sk}
}

// httpDo sends one request with the headers h and body (none when nil) and returns the
// status and body of the answer; redirects are followed, as clients do.
func httpDo(t *testing.T, method, url string, h http.Header, body []byte) (int, []byte) {
	t.Helper()
	code, b, err := send(method, url, h, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// send is httpDo for the goroutines of a test other than its own, which cannot fail it: it
// returns the error of a request that got no answer.
func send(method, url string, h http.Header, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range h {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

// getJSON GETs url with the headers h and decodes the answer, which must be a 200, into v.
func getJSON(t *testing.T, url string, h http.Header, v any) {
	t.Helper()
	code, b := httpDo(t, http.MethodGet, url, h, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, truncate(b))
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, truncate(b))
	}
}

// recorder is an HTTP server on loopback standing in for a peer of the command's (the
// service's API, a webhook endpoint, serve's callbacks or its readiness): it keeps every
// request it gets, with its body, and answers each as the test scripts it.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
}

// newRecorder starts a recorder that answers the n-th request (from 0), r with its body read,
// with answer's status and JSON body; it is closed at the end of the test.
func newRecorder(t *testing.T, answer func(n int, r *http.Request, body []byte) (int, string)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		n := len(rec.reqs)
		rec.reqs = append(rec.reqs, r.Clone(context.Background()))
		rec.bodies = append(rec.bodies, body)
		rec.mu.Unlock()
		status, out := answer(n, r, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) req(i int) *http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.reqs[i]
}

func (rec *recorder) body(i int) string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return string(rec.bodies[i])
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

// accountRouteSecret signs the account route of the loop's serve (loop.start).
const accountRouteSecret = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LTAxMjM0NTY3ODk="

// signAt returns Standard Webhooks headers for body sent as message id at the time at, signed
// with the whsec_ secret; written out here rather than through the library serve verifies
// with, so that the two are checked against each other.
func signAt(secret, id string, at time.Time, body []byte) http.Header {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	stamp := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + stamp + "." + string(body)))
	return http.Header{
		"Content-Type":      {"application/json"},
		"Webhook-Id":        {id},
		"Webhook-Timestamp": {stamp},
		"Webhook-Signature": {"v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))},
	}
}

// signedHook is a webhook endpoint that verifies every delivery with the Standard Webhooks
// library and keeps each event's first arrival, in order; while down, it answers 503.
type signedHook struct {
	*recorder
	mu     sync.Mutex
	down   bool
	seen   map[string]int
	firsts []api.Event
	bad    int
}

func newSignedHook(t *testing.T, secret string) *signedHook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	h := &signedHook{seen: map[string]int{}}
	h.recorder = newRecorder(t, func(_ int, r *http.Request, body []byte) (int, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.down {
			return http.StatusServiceUnavailable, ""
		}
		var ev api.Event
		if wh.Verify(body, r.Header) != nil || json.Unmarshal(body, &ev) != nil || ev.ID != r.Header.Get("webhook-id") {
			h.bad++
			return http.StatusUnauthorized, ""
		}
		if h.seen[ev.ID] == 0 {
			h.firsts = append(h.firsts, ev)
		}
		h.seen[ev.ID]++
		return http.StatusNoContent, ""
	})
	return h
}

func (h *signedHook) setDown(down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = down
}

// distinct is how many events arrived, each counted once.
func (h *signedHook) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// result is each event's first arrival in order, how many events arrived more than once, and
// how many deliveries failed verification.
func (h *signedHook) result() (firsts []api.Event, dups, bad int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.seen {
		if n > 1 {
			dups++
		}
	}
	return append([]api.Event(nil), h.firsts...), dups, h.bad
}
