package sandbox_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
)

// uploadedJob uploads a short recording and creates a job from it whose callback goes to
// callbackURL; the audio is the sandbox's own, so no fetch is involved.
func uploadedJob(t *testing.T, e *env, callbackURL string) string {
	t.Helper()
	status, up, body := e.upload("a.wav", speechLike(t, 1, [][2]float64{{0.2, 0.8}}, 16000))
	if status != http.StatusCreated {
		t.Fatalf("upload = %d %s", status, body)
	}
	created, err := e.client.CreatePreRecorded(context.Background(), api.PreRecordedRequest{
		AudioURL: up.AudioURL, Callback: api.Bool(true), CallbackConfig: &api.CallbackConfig{URL: callbackURL},
	})
	if err != nil {
		t.Fatal(err)
	}
	if job := e.waitJob(created.ID, api.KindPreRecorded); job.Status != api.StatusDone {
		t.Fatalf("job = %s %s", job.Status, job.PostSessionMetadata)
	}
	return created.ID
}

// waitLog waits until the sandbox's log has every one of want, and returns it.
func waitLog(t *testing.T, logs *sandboxtest.Buffer, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := logs.String()
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox's log never said %q:\n%s", missing, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A callback to a private address is refused by the address guard: with loopback allowed (as
// the tests and the demo run), 10.0.0.1 is still refused, decided on the address literal before
// any connection is made.
func TestCallbackToPrivateAddressRefused(t *testing.T) {
	e, logs := fetchEnv(t, []string{"127.0.0.0/8"}, func(c *sandbox.Config) {
		c.Callbacks = sandbox.CallbackPolicy{Schedule: []time.Duration{10 * time.Millisecond}, Timeout: 2 * time.Second}
	})
	const secret = "receiver-token-in-the-path"
	start := time.Now()
	uploadedJob(t, e, "http://10.0.0.1:9/v1/callbacks/"+secret)
	s := waitLog(t, logs, "callback given up")
	if n := strings.Count(s, "address 10.0.0.1 is in 10.0.0.0/8"); n != 2 {
		t.Errorf("want both attempts refused by the guard (address 10.0.0.1 is in 10.0.0.0/8), got %d:\n%s", n, s)
	}
	// The guard answers at once; a dial would wait for a connect timeout or an unreachable net.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	if strings.Contains(s, secret) {
		t.Errorf("the log quotes the callback URL's path:\n%s", s)
	}
}

// Loopback is allowed only when asked: a sandbox whose allow-list lacks it refuses a callback
// to a receiver on 127.0.0.1, which never sees a request.
func TestCallbackToLoopbackNeedsTheAllowance(t *testing.T) {
	e, logs := fetchEnv(t, []string{"192.0.2.0/24"}, nil)
	uploadedJob(t, e, e.hooks.url("/refused"))
	s := waitLog(t, logs, "callback given up")
	if !strings.Contains(s, "is in 127.0.0.0/8") || !strings.Contains(s, "refused unless allow-listed") {
		t.Errorf("the log does not show the guard's refusal:\n%s", s)
	}
	if got := e.hooks.all(); len(got) != 0 {
		t.Errorf("the receiver got %d requests, want none", len(got))
	}

	// The same receiver, allowed: delivered.
	ok, _ := fetchEnv(t, []string{"127.0.0.1/32"}, nil)
	uploadedJob(t, ok, ok.hooks.url("/allowed"))
	ok.hooks.waitFor(t, "the allowed callback", func(h []hook) bool { return len(h) == 1 })
}

// A caller's own HTTPClient sends callbacks as it is: the guard is then the caller's.
func TestCallbackThroughCallersClient(t *testing.T) {
	var used atomic.Int32
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	e, _ := fetchEnv(t, []string{"192.0.2.0/24"}, func(c *sandbox.Config) { c.HTTPClient = client })
	uploadedJob(t, e, e.hooks.url("/own"))
	e.hooks.waitFor(t, "the callback through the caller's client", func(h []hook) bool { return len(h) == 1 })
	if used.Load() != 1 {
		t.Errorf("the caller's client sent %d requests, want 1", used.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
