package receiver

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// setupKind is how a harness serves its receiver.
type setupKind string

const (
	// setupStandalone: Serve on a loopback listener, every route at the root.
	setupStandalone setupKind = "standalone"
	// setupFiber: Mount under /hooks in a parent fiber.New() that sets nothing (Fiber's
	// defaults: no streaming, a 4 MiB BodyLimit, no timeouts, its own error handler).
	setupFiber setupKind = "fiber"
	// setupFiberStreaming: Mount under /hooks in a parent set as Mount says: it streams bodies,
	// parses no multipart forms, has timeouts, the receiver's Listener and ErrorHandler, and a
	// BodyLimit (1 MiB) below the receiver's.
	setupFiberStreaming setupKind = "fiber-streaming"
	// setupNetHTTP: Handler under http.StripPrefix("/hooks", …) in a ServeMux, on httptest.
	setupNetHTTP setupKind = "net/http"
)

// mountPrefix is where the mounted set-ups put the receiver.
const mountPrefix = "/hooks"

// everything is the MountOptions of the tests: every route.
func everything() MountOptions {
	return MountOptions{ReadAPI: true, Health: true, Metrics: true, Dashboard: true}
}

// serve starts h's receiver the way s says, sets h.base, and returns what stops it.
func (h *harness) serve(s setupKind) (stop func()) {
	t := h.t
	t.Helper()
	shutdownReceiver := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.rcv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	switch s {
	case setupStandalone:
		ln := listenLoopback(h)
		h.base = "http://" + ln.Addr().String()
		served := make(chan error, 1)
		go func() { served <- h.rcv.Serve(ln) }()
		return func() {
			shutdownReceiver()
			// A test that ends at once can shut down before Serve has begun: Serve then
			// refuses to start, which is no failure of the test.
			if err := <-served; err != nil && !strings.Contains(err.Error(), "serve after shutdown") {
				t.Errorf("serve: %v", err)
			}
		}
	case setupFiber, setupFiberStreaming:
		var cfg fiber.Config
		if s == setupFiberStreaming {
			cfg = fiber.Config{
				StreamRequestBody: true, DisablePreParseMultipartForm: true, BodyLimit: 1 << 20,
				ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute,
				ErrorHandler: h.rcv.ErrorHandler,
			}
		}
		cfg.DisableStartupMessage = true
		parent := fiber.New(cfg)
		parent.Get("/", func(c *fiber.Ctx) error { return c.SendString("the parent's own page") })
		h.rcv.Mount(parent.Group(mountPrefix), everything())
		ln := listenLoopback(h)
		h.base = "http://" + ln.Addr().String() + mountPrefix
		if s == setupFiberStreaming {
			ln = h.rcv.Listener(ln)
		}
		served := make(chan error, 1)
		go func() { served <- parent.Listener(ln) }()
		return func() {
			shutdownReceiver()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := parent.ShutdownWithContext(ctx); err != nil {
				t.Errorf("parent shutdown: %v", err)
			}
			if err := <-served; err != nil {
				t.Errorf("parent serve: %v", err)
			}
		}
	case setupNetHTTP:
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the parent's own page")) })
		mux.Handle(mountPrefix+"/", http.StripPrefix(mountPrefix, h.rcv.Handler(everything())))
		srv := httptest.NewServer(mux) // 127.0.0.1
		h.base = srv.URL + mountPrefix
		return func() {
			shutdownReceiver()
			srv.Close()
		}
	}
	t.Fatalf("unknown set-up %q", s)
	return nil
}

func listenLoopback(h *harness) net.Listener {
	h.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatalf("listen: %v", err)
	}
	return ln
}
