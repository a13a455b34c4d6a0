package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/sandbox/engine"
)

// Config holds what a Server needs; zero values take the documented defaults.
type Config struct {
	// APIKey is the account key every REST call must carry. Required.
	APIKey string
	// KeyHeader is the header that carries the key (default x-service-key).
	KeyHeader string
	// PublicURL is the base of the URLs the sandbox hands out (result_url, page links, the live
	// WebSocket, uploaded files). Empty: taken from each request's Host.
	PublicURL string
	// Engine turns audio into words. Required.
	Engine engine.Engine
	// Workers bounds how many pre-recorded jobs are processed at once (default 2).
	Workers int
	// MaxBodyBytes bounds JSON request bodies (default 1 MiB); MaxUploadBytes uploads
	// (default 1000 MB, the real service's limit).
	MaxBodyBytes   int64
	MaxUploadBytes int64
	// MaxUploadStoreBytes bounds the uploads held at once, all together (default
	// DefaultMaxUploadStoreBytes, 1 GiB); past it an upload is refused with a 413 naming the
	// limit. Uploads are files in the sandbox's directory (TempDir), not memory.
	MaxUploadStoreBytes int64
	// UploadTTL is how long an upload that no job uses is kept (default DefaultUploadTTL, 1 h);
	// one that a job uses stays until the last job made from it is deleted.
	UploadTTL time.Duration
	// AllowFetch lists the ranges the sandbox may connect to although they are loopback,
	// private, link-local, CGNAT or metadata addresses (docs/design.md, rule 5): the audio_url and
	// sidecar fetches, and the callbacks. Anyone who can create a job chooses those URLs, and the
	// sandbox must not become their way into this machine or its network. Empty: public
	// addresses only. A sandbox fed by local files, or calling back a receiver on this machine,
	// needs 127.0.0.0/8.
	AllowFetch []netip.Prefix
	// MaxFetchBytes bounds the audio read from an audio_url (default 512 MiB); the body is
	// decoded as it arrives, never held whole. A sidecar gets at most 16 MiB of it.
	MaxFetchBytes int64
	// FetchTimeout bounds one fetch of an audio_url, redirects and body included (default 60 s).
	FetchTimeout time.Duration
	// MaxAudioDuration bounds pre-recorded audio (default 135 minutes, as the real service).
	MaxAudioDuration time.Duration
	// ProcessingDelay holds each job in queued, then processing, for this long; tests use it to
	// observe the states.
	ProcessingDelay time.Duration
	// MaxLiveDuration ends a live session whose audio reaches it (default 3 hours, as the real
	// service).
	MaxLiveDuration time.Duration
	// LiveResumeWindow is how long a live session whose socket dropped without stop_recording
	// waits for a reconnect before it ends (default 30 s).
	LiveResumeWindow time.Duration
	// Callbacks is the delivery policy of callbacks.
	Callbacks CallbackPolicy
	// Faults injects misbehaviour for tests; off by default.
	Faults Faults
	// HTTPClient sends callbacks. Default: a client whose every connection, redirects
	// included, goes through the AllowFetch guard, like the audio fetches. A client given here
	// is used as it is: guarding its connections is then the caller's business. Audio is
	// always fetched by the sandbox's own guarded client.
	HTTPClient *http.Client
	// Logger receives the sandbox's logs (default: logrus standard logger).
	Logger logrus.FieldLogger
	// TempDir is where the sandbox makes its directory for the audio it holds: uploads, the
	// copy of each fetched audio_url and the recording of each live session (which GET
	// …/{id}/file serves), kept on disk rather than in memory; Close removes it. Empty: the
	// system's temporary directory.
	TempDir string
}

// Server is the local stand-in of the transcription service.
type Server struct {
	cfg      Config
	log      *logrus.Entry
	jobs     *jobStore
	files    *fileStore
	sessions *sessionStore
	cb       *callbackSender
	fetcher  *http.Client
	dir      string // the audio kept for GET …/{id}/file
	queue    chan string
	mux      *http.ServeMux

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds a Server and starts its job workers; Close stops them.
func New(cfg Config) (*Server, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("sandbox: api key is required")
	}
	if cfg.Engine == nil {
		return nil, errors.New("sandbox: engine is required")
	}
	if cfg.KeyHeader == "" {
		cfg.KeyHeader = "x-service-key"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = 1000 << 20
	}
	if cfg.MaxUploadStoreBytes <= 0 {
		cfg.MaxUploadStoreBytes = DefaultMaxUploadStoreBytes
	}
	if cfg.UploadTTL <= 0 {
		cfg.UploadTTL = DefaultUploadTTL
	}
	if cfg.MaxFetchBytes <= 0 {
		cfg.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 60 * time.Second
	}
	if cfg.MaxAudioDuration <= 0 {
		cfg.MaxAudioDuration = 135 * time.Minute
	}
	if cfg.MaxLiveDuration <= 0 {
		cfg.MaxLiveDuration = 3 * time.Hour
	}
	if cfg.HTTPClient == nil {
		// Callback URLs are chosen by whoever creates a job, like audio URLs: the same guard.
		cfg.HTTPClient = newFetchClient(cfg.AllowFetch, 60*time.Second)
	}
	cfg.Logger = logx.OrStandard(cfg.Logger)
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	dir, err := os.MkdirTemp(cfg.TempDir, "scribehook-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: directory for job audio: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger.WithField("component", "sandbox"),
		jobs:     newJobStore(),
		files:    newFileStore(dir, cfg.MaxUploadStoreBytes, cfg.UploadTTL),
		sessions: newSessionStore(),
		queue:    make(chan string, 4096),
		fetcher:  newFetchClient(cfg.AllowFetch, cfg.FetchTimeout),
		dir:      dir,
		ctx:      ctx,
		cancel:   cancel,
	}
	s.cb = newCallbackSender(ctx, cfg.HTTPClient, cfg.Callbacks, cfg.Faults, s.log)
	s.routes()
	for i := 0; i < cfg.Workers; i++ {
		s.wg.Add(1)
		go s.worker()
	}
	s.wg.Add(1)
	go s.sweepUploads()
	return s, nil
}

// Handler is the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// Close stops the workers, live sessions and pending callbacks, and removes the sandbox's
// directory: every upload and copy of audio with it.
func (s *Server) Close() error {
	s.cancel()
	s.sessions.closeAll()
	s.wg.Wait()
	s.cb.wait()
	s.fetcher.CloseIdleConnections()
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("sandbox: remove %s: %w", s.dir, err)
	}
	return nil
}

// Serve answers on ln until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdownCtx)
		return nil
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	auth := s.authenticated
	m.Handle("POST /v2/pre-recorded", auth(s.handleCreatePreRecorded))
	m.Handle("POST /v2/transcription", auth(s.handleCreatePreRecorded))
	m.Handle("GET /v2/pre-recorded", auth(s.listHandler(listPreRecorded)))
	m.Handle("GET /v2/transcription", auth(s.listHandler(listAll)))
	m.Handle("GET /v2/pre-recorded/{id}", auth(s.getHandler(api.KindPreRecorded)))
	m.Handle("GET /v2/transcription/{id}", auth(s.getHandler("")))
	m.Handle("GET /v2/live/{id}", auth(s.getHandler(api.KindLive)))
	m.Handle("GET /v2/pre-recorded/{id}/file", auth(s.handleJobFile))
	m.Handle("GET /v2/live/{id}/file", auth(s.handleLiveFile))
	m.Handle("DELETE /v2/pre-recorded/{id}", auth(s.deleteHandler(api.KindPreRecorded)))
	m.Handle("DELETE /v2/transcription/{id}", auth(s.deleteHandler("")))
	m.Handle("DELETE /v2/live/{id}", auth(s.deleteHandler(api.KindLive)))
	m.Handle("POST /v2/live", auth(s.handleCreateLive))
	// GET /v2/live is both the live list and, with ?token=, the session's WebSocket: the token
	// alone authenticates the socket.
	m.HandleFunc("GET /v2/live", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("token") {
			s.handleLiveSocket(w, r)
			return
		}
		auth(s.listHandler(listLive)).ServeHTTP(w, r)
	})
	m.Handle("POST /v2/upload", auth(s.handleUpload))
	// An upload is read with the key, or with the token of the audio_url the upload answered
	// (a capability, like a signed URL): the sandbox's jobs use it without a key.
	m.HandleFunc("GET /v2/files/{id}", s.handleFile)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "engine": s.cfg.Engine.Name()})
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Cannot %s %s", r.Method, r.URL.Path), nil)
	})
	s.mux = m
}

type requestIDKey struct{}

// authenticated checks the key header in constant time and gives the request its request id.
func (s *Server) authenticated(h http.HandlerFunc) http.Handler {
	want := []byte(s.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, newRequestID()))
		got := r.Header.Get(s.cfg.KeyHeader)
		if got == "" {
			s.writeError(w, r, http.StatusUnauthorized, fmt.Sprintf("missing API key: send it in the %s header", s.cfg.KeyHeader), nil)
			return
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			s.writeError(w, r, http.StatusUnauthorized, "invalid API key", nil)
			return
		}
		h(w, r)
	})
}

func requestID(r *http.Request) string {
	if id, ok := r.Context().Value(requestIDKey{}).(string); ok {
		return id
	}
	return newRequestID()
}

// newRequestID is G- and 8 hex characters, like the service's debug ids.
func newRequestID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "G-" + hex.EncodeToString(b[:])
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, msg string, validation []string) {
	rid := requestID(r)
	w.Header().Set("x-request-id", rid)
	writeJSON(w, status, api.ErrorResponse{
		Timestamp:        api.Now(),
		Path:             r.URL.Path,
		RequestID:        rid,
		StatusCode:       status,
		Message:          msg,
		ValidationErrors: validation,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"message":"encode response"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// baseURL is where clients reach this sandbox: the configured public URL, else the request's
// own scheme and host.
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
