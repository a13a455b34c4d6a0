package sandboxtest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/submitter"
)

// Loopback is the range the sandbox must be allowed to fetch from: the recordings are served
// on loopback, which it refuses by default (sandbox.Config.AllowFetch).
var Loopback = netip.MustParsePrefix("127.0.0.0/8")

// QuickRetries retries a refused callback within about a second and a half, rather than on
// the service's schedule of minutes, so that a test whose kit is not up yet still finishes.
var QuickRetries = sandbox.CallbackPolicy{Schedule: []time.Duration{
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, time.Second,
}}

// Server is an HTTP server on a free loopback port.
type Server struct {
	URL string // http://127.0.0.1:port
	hs  *httptest.Server
}

// Serve serves h on a free loopback port. httptest's server, also in the launchers: it picks
// the port, and its Close waits for the handlers it started.
func Serve(h http.Handler) *Server {
	hs := httptest.NewServer(h)
	return &Server{URL: hs.URL, hs: hs}
}

// Close cuts the server's connections (the kit's keep-alive ones among them) rather than
// waiting for idle ones to time out, then stops it.
func (s *Server) Close() {
	s.hs.CloseClientConnections()
	s.hs.Close()
}

// Service is a sandbox of the service, reached with APIKey at URL.
type Service struct {
	URL     string
	APIKey  string
	Sandbox *sandbox.Server

	keyHeader string
	srv       *Server
}

// StartService starts a sandbox with cfg on loopback. What cfg leaves unset is filled in as
// every world here needs it: the scripted engine (the words come from the sidecar, so results
// are known in advance), fetches allowed to Loopback, and logs discarded.
func StartService(cfg sandbox.Config) (*Service, error) {
	if cfg.Engine == nil {
		eng, err := engine.NewRegistry().New(engine.ScriptedName)
		if err != nil {
			return nil, fmt.Errorf("scripted engine: %w", err)
		}
		cfg.Engine = eng
	}
	if cfg.AllowFetch == nil {
		cfg.AllowFetch = []netip.Prefix{Loopback}
	}
	if cfg.Logger == nil {
		cfg.Logger = logx.Discard()
	}
	sb, err := sandbox.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	srv := Serve(sb.Handler())
	return &Service{URL: srv.URL, APIKey: cfg.APIKey, Sandbox: sb, keyHeader: cfg.KeyHeader, srv: srv}, nil
}

// Client is a client of the service with its key, in its key header.
func (s *Service) Client() (*submitter.Client, error) {
	var opts []submitter.Option
	if s.keyHeader != "" {
		opts = append(opts, submitter.WithKeyHeader(s.keyHeader))
	}
	c, err := submitter.New(s.URL, s.APIKey, opts...)
	if err != nil {
		return nil, fmt.Errorf("service client: %w", err)
	}
	return c, nil
}

// Close stops the HTTP server first, so that no request reaches a closed sandbox, then the
// sandbox.
func (s *Service) Close() error {
	s.srv.Close()
	return s.Sandbox.Close()
}

// Recording is a WAV and its sidecar, served as Name and Name + ".json".
type Recording struct {
	Name    string // a file name such as "sample.wav"
	WAV     []byte
	Sidecar []byte
}

// ReadRecording reads the WAV at path and its sidecar, path + ".json".
func ReadRecording(path string) (Recording, error) {
	wav, err := os.ReadFile(path)
	if err != nil {
		return Recording{}, fmt.Errorf("read the recording: %w", err)
	}
	sidecar, err := os.ReadFile(path + ".json")
	if err != nil {
		return Recording{}, fmt.Errorf("read the recording's sidecar: %w", err)
	}
	return Recording{Name: filepath.Base(path), WAV: wav, Sidecar: sidecar}, nil
}

// Handler serves the recording at /Name (with ranges, as a file server would) and its sidecar
// at /Name.json. It is a ServeMux so that a caller can add routes of its own beside them.
func (r Recording) Handler() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /"+r.Name, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		http.ServeContent(w, req, r.Name, time.Time{}, bytes.NewReader(r.WAV))
	})
	mux.HandleFunc("GET /"+r.Name+".json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(r.Sidecar)
	})
	return mux
}

// Files is a file server on loopback with one recording.
type Files struct {
	*Server
	Recording
	AudioURL string // the WAV's URL; its sidecar is AudioURL + ".json"
}

// StartFiles serves rec on loopback.
func StartFiles(rec Recording) *Files {
	return ServeFiles(rec, rec.Handler())
}

// ServeFiles serves h, which serves rec (rec.Handler with routes added), on loopback.
func ServeFiles(rec Recording, h http.Handler) *Files {
	srv := Serve(h)
	return &Files{Server: srv, Recording: rec, AudioURL: srv.URL + "/" + rec.Name}
}

// World is a sandbox of the service and a file server with the recording it transcribes.
type World struct {
	Service *Service
	Files   *Files
}

// StartWorld starts a sandbox with cfg (see StartService) and a file server with rec.
func StartWorld(cfg sandbox.Config, rec Recording) (*World, error) {
	svc, err := StartService(cfg)
	if err != nil {
		return nil, err
	}
	return &World{Service: svc, Files: StartFiles(rec)}, nil
}

// Close stops the file server and the sandbox.
func (w *World) Close() error {
	w.Files.Close()
	return w.Service.Close()
}
