package scribehook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// shutdownToken is the static route the stop tests deliver to.
const shutdownToken = "shutdown-route-token-0123456789abcdef"

// stopKit is a kit on st serving a static route on a fresh loopback listener.
func stopKit(t *testing.T, dir string, st store.Store) (*Kit, net.Listener) {
	t.Helper()
	ln := listen(t)
	cfg := kitConfig(dir, ln, "http://127.0.0.1:1")
	cfg.Routes = []configs.Route{{Name: "load", TokenEnv: "SCRIBEHOOK_TEST_UNUSED"}}
	k, err := New(context.Background(), cfg, WithLogger(logx.Discard()), WithStore(st),
		WithSecrets(configs.Secrets{Routes: map[string]configs.RouteSecrets{"load": {Token: shutdownToken}}}))
	if err != nil {
		t.Fatal(err)
	}
	return k, ln
}

func openStopStore(t *testing.T) (string, store.Store) {
	t.Helper()
	dir := t.TempDir()
	return dir, teststore.OpenSQLite(t, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
}

// liveCallback is a distinct live transcript message: n numbers it across the whole test.
// Load goroutines call it, so it reports with Errorf.
func liveCallback(t *testing.T, session string, n int64) []byte {
	return liveCallbackText(t, session, n, "word "+strconv.FormatInt(n, 10))
}

func liveCallbackText(t *testing.T, session string, n int64, text string) []byte {
	data, err := json.Marshal(api.TranscriptData{ID: fmt.Sprintf("%s-%d", session, n), IsFinal: true,
		Utterance: api.Utterance{Start: float64(n), End: float64(n) + 0.5, Text: text}})
	if err != nil {
		t.Errorf("encode transcript: %v", err)
	}
	body, err := json.Marshal(api.LiveCallback{ID: session, Event: api.LiveEvent(api.MessageTranscript), Payload: api.LiveMessage{
		SessionID: session, Type: api.MessageTranscript, Data: data,
		CreatedAt: api.NewTime(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Millisecond)),
	}})
	if err != nil {
		t.Errorf("encode callback: %v", err)
	}
	return body
}

// acked is a delivery answered 2xx: the body sent and the receiver's ack.
type acked struct {
	body   []byte
	status string
	id     int64
}

// stopLoad is the traffic of one stop: keep-alive clients posting callbacks, and connections
// that hold the server without a request in it.
type stopLoad struct {
	t     *testing.T
	addr  string
	seq   *atomic.Int64
	quiet chan struct{} // closed: clients send nothing more, but keep their connections
	wg    sync.WaitGroup

	mu    sync.Mutex
	acks  []acked
	first chan struct{} // closed at the first ack
	once  sync.Once
}

// poster sends one callback and returns the answer's status and body.
type poster func(body []byte) (int, []byte, error)

// post keeps sending callbacks through send until quiet; failures are retried after a pause,
// as the service does, and 2xx answers recorded.
func (l *stopLoad) post(session string, send poster) {
	l.wg.Go(func() {
		for {
			select {
			case <-l.quiet:
				return
			default:
			}
			body := liveCallback(l.t, session, l.seq.Add(1))
			status, resp, err := send(body)
			if err != nil || status/100 != 2 {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			var a struct {
				Status string `json:"status"`
				ID     int64  `json:"id"`
			}
			if err := json.Unmarshal(resp, &a); err != nil {
				l.t.Errorf("ack %q: %v", resp, err)
				continue
			}
			l.mu.Lock()
			l.acks = append(l.acks, acked{body: body, status: a.Status, id: a.ID})
			l.mu.Unlock()
			l.once.Do(func() { close(l.first) })
		}
	})
}

// hold opens a connection that sends prefix and then one byte of more every 100 ms until
// quiet, and keeps it open until done: an idle client (no prefix), or one whose headers are
// slow to come.
func (l *stopLoad) hold(prefix, more string, done <-chan struct{}) {
	c, err := net.Dial("tcp", l.addr)
	if err != nil {
		l.t.Errorf("dial: %v", err)
		return
	}
	l.wg.Go(func() {
		defer c.Close()
		_, _ = io.WriteString(c, prefix)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			select {
			case <-l.quiet:
			default:
				if more != "" {
					_, _ = io.WriteString(c, more[i%len(more):i%len(more)+1])
				}
			}
		}
	})
}

// TestShutdownUnderLoad stops serve (RunListener, as `scribehook serve` on SIGTERM) again and
// again while keep-alive clients post callbacks and other connections idle or send their
// headers slowly; every stop must return nil within DefaultShutdownTimeout, and every
// delivery answered 2xx must be in the inbox with the body sent. On even stops the clients go
// on sending during the stop (their retries meet the closed port); on odd ones they fall
// silent at the stop but keep their connections pooled, as a client between two deliveries
// or a proxy does. SCRIBEHOOK_SHUTDOWN_STOPS sets the number of stops (default 30).
func TestShutdownUnderLoad(t *testing.T) {
	stops := 30
	if s := os.Getenv("SCRIBEHOOK_SHUTDOWN_STOPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SCRIBEHOOK_SHUTDOWN_STOPS=%q: want a positive count", s)
		}
		stops = n
	}
	dir, st := openStopStore(t)
	var seq atomic.Int64
	total := 0
	for i := range stops {
		acks := stopUnderLoad(t, dir, st, &seq, i, i%2 == 1)
		for _, a := range acks {
			row, err := st.InboxRow(context.Background(), a.id)
			switch {
			case a.status != "stored":
				t.Errorf("stop %d: delivery acknowledged %q, want stored (each body is new)", i, a.status)
			case err != nil:
				t.Errorf("stop %d: acknowledged delivery %d not in the inbox: %v", i, a.id, err)
			case !bytes.Equal(row.Body, a.body):
				t.Errorf("stop %d: inbox row %d holds %q, want the body acknowledged %q", i, a.id, row.Body, a.body)
			}
		}
		total += len(acks)
		if t.Failed() {
			break
		}
	}
	t.Logf("%d stops, %d deliveries acknowledged, all stored", stops, total)
}

// stopUnderLoad serves a kit under load, stops it and returns what it acknowledged.
func stopUnderLoad(t *testing.T, dir string, st store.Store, seq *atomic.Int64, i int, quietAtStop bool) []acked {
	k, ln := stopKit(t, dir, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- k.RunListener(ctx, ln) }()

	l := &stopLoad{t: t, addr: ln.Addr().String(), seq: seq, quiet: make(chan struct{}), first: make(chan struct{})}
	url := "http://" + l.addr + "/v1/callbacks/" + shutdownToken
	fast := &fasthttp.HostClient{Addr: l.addr, MaxConns: 16, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		MaxIdleConnDuration: time.Hour, RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false }}
	defer fast.CloseIdleConnections()
	// net/http dials a new connection for a request and may then use another that came free:
	// the new one waits in the pool without having sent a byte.
	std := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer std.CloseIdleConnections()
	for w := range 16 {
		l.post(fmt.Sprintf("fast-%d-%d", i, w), func(body []byte) (int, []byte, error) {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI(url)
			req.Header.SetMethod(fasthttp.MethodPost)
			req.Header.SetContentType("application/json")
			req.SetBodyRaw(body)
			err := fast.Do(req, resp)
			return resp.StatusCode(), bytes.Clone(resp.Body()), err
		})
	}
	for w := range 4 {
		l.post(fmt.Sprintf("std-%d-%d", i, w), func(body []byte) (int, []byte, error) {
			resp, err := std.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				return 0, nil, err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return resp.StatusCode, b, err
		})
	}
	select {
	case <-l.first:
	case err := <-ran:
		t.Fatalf("stop %d: serve ended before the load: %v", i, err)
	case <-time.After(time.Minute):
		t.Fatalf("stop %d: no callback acknowledged within a minute", i)
	}
	released := make(chan struct{})
	for range 4 {
		l.hold("", "", released)
		l.hold("POST /v1/callbacks/"+shutdownToken+" HTTP/1.1\r\nHost: x\r\n", "X-Slow: yes\r\n", released)
	}
	time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)

	if quietAtStop {
		close(l.quiet)
	}
	cancel()
	var err error
	select {
	case err = <-ran:
	case <-time.After(DefaultShutdownTimeout + 10*time.Second):
		t.Fatalf("stop %d: RunListener had not returned %s after the stop", i, DefaultShutdownTimeout+10*time.Second)
	}
	if !quietAtStop {
		close(l.quiet)
	}
	close(released)
	l.wg.Wait()
	if err != nil {
		clients := "sending"
		if quietAtStop {
			clients = "silent at the stop"
		}
		t.Errorf("stop %d (clients %s): %v", i, clients, err)
	}
	return l.acks
}

// TestShutdownBoundsASlowBody: a request whose body is still arriving at a slow client's pace
// (serve waits 60 s for a body) gets half of the stop's time, then is cut and not
// acknowledged; the stop returns nil within its deadline. The first 16 KiB come at once, so
// that the handler runs (fasthttp waits for 8 KiB of a body before it calls one).
func TestShutdownBoundsASlowBody(t *testing.T) {
	dir, st := openStopStore(t)
	k, ln := stopKit(t, dir, st)
	if err := k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.Serve(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := liveCallbackText(t, "slow", 1, strings.Repeat("word ", 8<<10))
	const sent = 16 << 10
	head := fmt.Sprintf("POST /v1/callbacks/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", shutdownToken, len(body))
	if _, err := io.WriteString(c, head+string(body[:sent])); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(c)
		answer <- string(b)
	}()
	stopped := make(chan struct{})
	go func() {
		for i := sent; i < len(body)-1; i++ {
			select {
			case <-stopped:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := c.Write(body[i : i+1]); err != nil {
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the handler waits for the body

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	err = k.Shutdown(ctx)
	close(stopped)
	if err != nil {
		t.Fatalf("shutdown with a body still arriving: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got := <-answer; bytes.Contains([]byte(got), []byte(" 200 ")) {
		t.Errorf("the cut request was acknowledged: %q", got)
	}
	if rows, err := st.PendingInbox(context.Background(), 0, 10); err != nil || len(rows) != 0 {
		t.Errorf("inbox after the cut request: %d rows (%v), want none", len(rows), err)
	}
}
