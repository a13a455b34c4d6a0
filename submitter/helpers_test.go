package submitter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

const testKey = "sk-test-123"

// sleeps records the waits the client asks for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// identityJitter makes full jitter draw its upper bound, so back-off ceilings are visible.
func identityJitter(limit time.Duration) time.Duration { return limit }

// newTestClient returns a client of url whose sleeps are recorded and whose jitter is the
// identity.
func newTestClient(t *testing.T, url string, opts ...Option) (*Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	all := append([]Option{WithSleeper(s.sleep), WithJitter(identityJitter)}, opts...)
	c, err := New(url, testKey, all...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c, s
}

// recorder is an httptest server that answers each request with the next scripted handler
// and records what it received.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []string
	script []http.HandlerFunc
}

func newRecorder(t *testing.T, script ...http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{script: script}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	i := len(r.reqs)
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	r.bodies = append(r.bodies, string(body))
	h := r.script[min(i, len(r.script)-1)]
	r.mu.Unlock()
	h(w, req)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (r *recorder) request(i int) (*http.Request, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[i], r.bodies[i]
}

// reply answers with a status, optional headers (name, value pairs) and a body.
func reply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if body != "" && w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}
