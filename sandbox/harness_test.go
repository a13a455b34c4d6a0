package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/submitter"
)

const testKey = "test-key-0123456789"

// env is a sandbox on loopback with a client, a callback receiver and a file server.
type env struct {
	t      *testing.T
	svc    *sandboxtest.Service
	client *submitter.Client
	hooks  *hookReceiver
	files  *fileServer
}

// newEnv starts a sandbox with the scripted engine, fetches allowed to loopback (where the
// file server is) and quick callback retries, as internal/sandboxtest fills in what mutate
// leaves unset.
func newEnv(t *testing.T, mutate func(*sandbox.Config)) *env {
	t.Helper()
	cfg := sandbox.Config{
		APIKey:    testKey,
		Callbacks: sandbox.CallbackPolicy{Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}, Timeout: 2 * time.Second},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	svc := sandboxtest.NewService(t, cfg)
	client, err := svc.Client()
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, svc: svc, client: client, hooks: newHookReceiver(t), files: newFileServer(t)}
}

// raw sends a request with the key (unless key is empty) and returns status and body.
func (e *env) raw(method, path, key, contentType string, body []byte) (int, []byte, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.svc.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-service-key", key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// waitJob polls the sandbox (not the receiver) until the job reaches a final state.
func (e *env) waitJob(id string, kind api.JobKind) api.Job {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var job api.Job
		var err error
		if kind == api.KindLive {
			job, err = e.client.GetLive(context.Background(), id)
		} else {
			job, err = e.client.GetPreRecorded(context.Background(), id)
		}
		if err != nil {
			e.t.Fatalf("get %s: %v", id, err)
		}
		if job.Status.Final() {
			return job
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("job %s did not finish", id)
	return api.Job{}
}

// hook is one callback request as the receiver saw it.
type hook struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// hookReceiver records every callback; it answers with the status its script gives.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []hook
	status func(n int) int
	notify chan struct{}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{status: func(int) int { return http.StatusOK }, notify: make(chan struct{}, 1024)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, hook{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: b})
		n := len(h.got)
		status := h.status(n)
		h.mu.Unlock()
		w.WriteHeader(status)
		select {
		case h.notify <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) url(path string) string { return h.srv.URL + path }

func (h *hookReceiver) all() []hook {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hook(nil), h.got...)
}

// waitFor waits until pred holds over the received hooks.
func (h *hookReceiver) waitFor(t *testing.T, what string, pred func([]hook) bool) []hook {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if got := h.all(); pred(got) {
			return got
		}
		select {
		case <-h.notify:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s; got %d callbacks", what, len(h.all()))
		}
	}
}

// fileServer serves test audio (and sidecars) over HTTP, like a customer's bucket.
type fileServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

func newFileServer(t *testing.T) *fileServer {
	f := &fileServer{files: map[string][]byte{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b, ok := f.files[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fileServer) put(path string, data []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = data
	return f.srv.URL + path
}

// speechLike is mono 16 kHz audio with tone bursts (voiced stretches) between silences:
// bursts[i] = {start, end} in seconds.
func speechLike(t *testing.T, total float64, bursts [][2]float64, rate int) []byte {
	t.Helper()
	n := int(total * float64(rate))
	s := make([]float32, n)
	for _, b := range bursts {
		for i := int(b[0] * float64(rate)); i < int(b[1]*float64(rate)) && i < n; i++ {
			tt := float64(i) / float64(rate)
			// A vowel-like mix with a syllable envelope, loud enough for any detector.
			env := 0.6 + 0.4*math.Sin(2*math.Pi*4*tt)
			s[i] = float32(0.5 * env * (math.Sin(2*math.Pi*220*tt) + 0.5*math.Sin(2*math.Pi*660*tt)) / 1.5)
		}
	}
	var buf bytes.Buffer
	if err := audio.Encode16(&buf, [][]float32{s}, rate); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pcm16 strips the 44-byte header Encode16 writes, leaving raw samples.
func pcm16(wav []byte) []byte { return wav[44:] }

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", truncate(b), err)
	}
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

type sandboxConfig = sandbox.Config
