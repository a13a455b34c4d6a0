package scribehook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/receiver"
)

// TestRunServerStopsTheServerBeforeTheKit: when ctx ends, the program's server is stopped
// while the kit's routes still answer, and the kit after; a server that fails on its own
// stops them the same way, and its error is returned.
func TestRunServerStopsTheServerBeforeTheKit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		serve   func(srv *http.Server, ln net.Listener) error
		wantErr string
	}{
		{"ctx ends", (*http.Server).Serve, ""},
		{"serve fails", func(*http.Server, net.Listener) error { return errors.New("port taken") }, "serve: port taken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := listen(t)
			k, err := New(context.Background(), kitConfig(t.TempDir(), ln, "http://127.0.0.1:1"),
				WithLogger(logx.Discard()), WithSecrets(configs.Secrets{APIKey: testKey}))
			_ = ln.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			h := k.Handler(receiver.MountOptions{Health: true})
			ready := func() int {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
				return rec.Code
			}
			srv := &http.Server{Handler: h}
			own := k.Listener(listen(t))
			defer own.Close()
			ctx, cancel := context.WithCancel(context.Background())
			if tc.wantErr == "" {
				cancel()
			}
			defer cancel()
			var readyAtStop int
			err = k.RunServer(ctx, func() error { return tc.serve(srv, own) }, func(ctx context.Context) error {
				readyAtStop = ready()
				return srv.Shutdown(ctx)
			})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("RunServer = %v, want %q", err, tc.wantErr)
			}
			if readyAtStop != http.StatusOK {
				t.Errorf("the kit answered /readyz %d while the server stopped, want 200", readyAtStop)
			}
			if got := ready(); got != http.StatusServiceUnavailable {
				t.Errorf("the kit answered /readyz %d after RunServer, want 503", got)
			}
		})
	}
}
