// Package debugserver serves Go's runtime profiles (net/http/pprof) on a listener of its own,
// for `serve` when debug.listen is set. It is kept apart from the receiver: a profile request
// holds a goroutine for seconds and a heap profile stops the world briefly, neither of which
// may compete with callbacks for the receiver's connection bounds, and the profiles tell
// whoever reads them about the process's code and memory, so they must not be reachable where
// callbacks are. Nothing here runs unless the configuration asks for it.
package debugserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Server is a running profiling endpoint.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Handler is the profiling mux: /debug/pprof/ and its named profiles, cmdline, profile (CPU),
// symbol and trace. It is a mux of its own: importing net/http/pprof also registers these on
// http.DefaultServeMux, which nothing in scribehook serves.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Start listens on addr and serves Handler there until Close. An address that cannot be
// bound is an error at once, so that a profiling endpoint asked for is never silently absent.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug listener: %w", err)
	}
	s := &Server{
		ln: ln,
		// No WriteTimeout: /debug/pprof/profile?seconds=N and trace write after N seconds.
		srv:  &http.Server{Handler: Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ErrServerClosed after Close; any other error ends the endpoint only
	}()
	return s, nil
}

// Addr is the address the server listens on (the port chosen when addr's was 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server: a profile being taken is cut short, since a stopping process has no
// profile left worth finishing.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
