package sinks_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/signature"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinktest"
)

// Every built-in kind passes the contract suite. The broker kinds run the real servers through
// internal/testinfra, one per subtest (Debian's redis-server and nats-server, make deps);
// without them those tests skip and say so.

func TestFileSinkConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Features{Deduplicates: true}, func(t *testing.T, name string) sinktest.Destination {
		dir := t.TempDir()
		s, err := sinks.NewFile(sinks.Spec{Name: name, Kind: sinks.KindFile, Dir: dir}, sinks.Deps{Logger: logx.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		return sinktest.Destination{
			Sink: s,
			// Every event file; the artifacts beside them are the file sink's own tests'.
			Received: func(t *testing.T) [][]byte {
				files, err := filepath.Glob(filepath.Join(dir, "*", "events", "*.json"))
				if err != nil {
					t.Fatal(err)
				}
				var out [][]byte
				for _, f := range files {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, b)
				}
				return out
			},
			// The folder gives way to a file: every write fails, as on a disk gone read-only.
			Break: func(t *testing.T) {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dir, []byte("not a folder"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

// lines is a writer of log lines that can be made to fail.
type lines struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	broken bool
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken {
		return 0, errors.New("write: broken pipe")
	}
	return l.buf.Write(p)
}

func TestLogSinkConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Features{ExactBytes: true}, func(t *testing.T, name string) sinktest.Destination {
		out := &lines{}
		s := sinks.NewLog(sinks.Spec{Name: name, Kind: sinks.KindLog}, sinks.Deps{Stdout: out})
		return sinktest.Destination{
			Sink: s,
			Received: func(t *testing.T) [][]byte {
				out.mu.Lock()
				defer out.mu.Unlock()
				var got [][]byte
				for line := range bytes.Lines(out.buf.Bytes()) {
					got = append(got, bytes.TrimSuffix(line, []byte("\n")))
				}
				return got
			},
			Break: func(*testing.T) {
				out.mu.Lock()
				out.broken = true
				out.mu.Unlock()
			},
		}
	})
}

// hookSecret signs the webhook sink's deliveries; the test server checks them with package
// signature, as a program receiving them would.
const hookSecret = "whsec_c2lua3Rlc3Qgd2ViaG9vayBzaWduaW5nIGtleQ=="

func TestWebhookSinkConformance(t *testing.T) {
	verifier, err := signature.NewVerifier(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	sinktest.Run(t, sinktest.Features{ExactBytes: true}, func(t *testing.T, name string) sinktest.Destination {
		var (
			mu      sync.Mutex
			bodies  [][]byte
			down    bool
			stalled = make(chan struct{})
			stall   bool
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			isDown, isStalled := down, stall
			mu.Unlock()
			switch {
			case isStalled:
				<-stalled
				return
			case isDown:
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := verifier.Verify(body, r.Header); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			mu.Lock()
			bodies = append(bodies, body)
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(stalled) }) // before srv.Close, which waits for the handlers
		s, err := sinks.NewWebhook(sinks.Spec{
			Name: name, Kind: sinks.KindWebhook, URL: srv.URL, SigningSecrets: []string{hookSecret},
			Allow: []string{"127.0.0.0/8"}, Timeout: 5 * time.Second,
		}, sinks.Deps{Logger: logx.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		return sinktest.Destination{
			Sink: s,
			Received: func(*testing.T) [][]byte {
				mu.Lock()
				defer mu.Unlock()
				return append([][]byte(nil), bodies...)
			},
			Break: func(*testing.T) {
				mu.Lock()
				down = true
				mu.Unlock()
			},
			Stall: func(*testing.T) {
				mu.Lock()
				stall = true
				mu.Unlock()
			},
		}
	})
}
