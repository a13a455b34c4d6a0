// Command nethttp is a net/http program of its own — its own ServeMux and http.Server, no Fiber
// in sight — that receives the transcription service's callbacks through scribehook's
// Handler, under /hooks:
//
//   - GET  /hello                      the program's own route, untouched by the kit;
//   - POST /transcribe?audio_url=URL   creates a job whose callback comes back to /hooks
//     (bearer APP_TOKEN; audio_url on an origin listed in AUDIO_ORIGINS);
//   - /hooks/v1/callbacks/{token}      the kit's callback routes;
//   - /hooks/v1/jobs…, /hooks/healthz  the kit's read API (bearer SCRIBEHOOK_READ_TOKEN) and health.
//
// A Go event handler prints the transcript of every job.succeeded to standard output.
//
// Configuration comes from flags, whose defaults come from the environment; the service key,
// the read API's token and the program's own token come only from the environment
// (SCRIBEHOOK_API_KEY, SCRIBEHOOK_READ_TOKEN, APP_TOKEN), so that they never show in a process
// list. Without APP_TOKEN the program does not start: POST /transcribe spends the service key.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
)

// hooksPrefix is where the kit's handler is mounted; public_url must end with it, since the
// service is handed callback URLs under it.
const hooksPrefix = "/hooks"

// config is what the program needs to know from its environment.
type config struct {
	Listen     string // address of the program (host:port; port 0 picks one)
	PublicURL  string // where the service reaches /hooks, prefix included; "" derives it from Listen
	ServiceURL string // base URL of the transcription service
	Store      string // SQLite file of the kit's store
	Artifacts  string // directory of rendered subtitles

	AppToken     string // bearer token of POST /transcribe (APP_TOKEN)
	AudioOrigins string // origins audio_url may be on, comma-separated; "" refuses every URL
}

func main() {
	var cfg config
	flag.StringVar(&cfg.Listen, "listen", envOr("LISTEN_ADDR", "127.0.0.1:8080"), "address the program listens on (env LISTEN_ADDR)")
	flag.StringVar(&cfg.PublicURL, "public-url", os.Getenv("SCRIBEHOOK_PUBLIC_URL"),
		"URL at which the service reaches "+hooksPrefix+", prefix included (env SCRIBEHOOK_PUBLIC_URL; default http://<listen>"+hooksPrefix+")")
	flag.StringVar(&cfg.ServiceURL, "service-url", envOr("SCRIBEHOOK_SERVICE_BASE_URL", configs.DefaultServiceURL), "base URL of the service (env SCRIBEHOOK_SERVICE_BASE_URL)")
	flag.StringVar(&cfg.Store, "store", envOr("SCRIBEHOOK_STORE_DSN", "nethttp.db"), "SQLite file of the kit's store (env SCRIBEHOOK_STORE_DSN)")
	flag.StringVar(&cfg.Artifacts, "artifacts", envOr("SCRIBEHOOK_SUBTITLES_DIR", "artifacts"), "directory of rendered subtitles (env SCRIBEHOOK_SUBTITLES_DIR)")
	flag.StringVar(&cfg.AudioOrigins, "audio-origins", os.Getenv("AUDIO_ORIGINS"),
		"comma-separated origins (https://host[:port]) that audio_url may be on; empty refuses every URL (env AUDIO_ORIGINS)")
	flag.Parse()
	cfg.AppToken = os.Getenv("APP_TOKEN")

	// The first SIGINT or SIGTERM starts a graceful stop; stop() restores the default, so a
	// second one kills the program at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "nethttp:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then stops the server, then the kit. It writes its own lines (the
// address, the transcripts) to out; the kit logs to standard error through logrus.
func run(ctx context.Context, cfg config, out io.Writer) (err error) {
	// Checked before anything starts: a program that cannot guard POST /transcribe does not run.
	token, err := newAppToken(cfg.AppToken)
	if err != nil {
		return err
	}
	audioOrigins, err := parseOrigins(cfg.AudioOrigins)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	defer func() {
		if err != nil {
			_ = ln.Close()
		}
	}()
	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String() + hooksPrefix
	}

	kcfg := configs.Default()
	kcfg.PublicURL = publicURL
	kcfg.Service.BaseURL = cfg.ServiceURL
	kcfg.Store.DSN = cfg.Store
	// configs.Default writes nothing the program does not ask for: no sink, no subtitles, no
	// database but the one named here. This program renders SRT and WebVTT for every job.
	kcfg.Subtitles.Dir = cfg.Artifacts
	kcfg.Subtitles.Formats = []string{"srt", "vtt"}

	// Handlers run concurrently: a log.Logger (no prefix, no timestamp) serialises its writes, so
	// that each block of lines comes out whole.
	lines := log.New(out, "", 0)
	kit, err := scribehook.New(ctx, kcfg, scribehook.WithEventHandler(scribehook.EventHandler{
		Name:   "print-transcript",
		Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}},
		Func:   scribehook.JobSucceeded(printTranscript(lines)),
	}))
	if err != nil {
		return fmt.Errorf("build the kit: %w", err)
	}
	// Until the end of run, a failure must still stop the kit (a no-op once it has stopped).
	defer func() {
		if cerr := kit.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stop the kit: %w", cerr)
		}
	}()
	// The submitter needs the service key: without one this program has nothing to submit with.
	sub, err := kit.Submitter()
	if err != nil {
		return fmt.Errorf("submitter: %w", err)
	}
	if err := kit.Start(ctx); err != nil {
		return fmt.Errorf("start the kit: %w", err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello from the program's own route\n")
	})
	mux.Handle("POST /transcribe", requireToken(token, func(w http.ResponseWriter, r *http.Request) {
		// Decided here, before the service is asked for anything: it would fetch the URL.
		audioURL, err := audioOrigins.check(r.URL.Query().Get("audio_url"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		sctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		created, err := sub.Submit(sctx, api.PreRecordedRequest{AudioURL: audioURL})
		id := created.ID
		if err != nil {
			// A job may exist even though recording it failed; its id is worth returning.
			writeJSON(w, http.StatusBadGateway, map[string]string{"id": id, "error": err.Error()})
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"id": id})
	}))
	// The kit's routes sit at the handler's root: strip the prefix on the way in. Paging links
	// carry it back from public_url.
	mux.Handle(hooksPrefix+"/", http.StripPrefix(hooksPrefix, kit.Handler(receiver.MountOptions{ReadAPI: true, Health: true})))

	srv := &http.Server{
		Handler: mux,
		// net/http has no limit by default: a client could hold a connection open forever by
		// sending its headers slowly.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		// net/http's WriteTimeout runs from the end of the headers, so it must outlast a
		// callback's body (the kit gives it 60 s to arrive) and its commit (15 s). The kit's
		// event streams move their own deadline forward at each event. No ReadTimeout: the kit
		// bounds the bodies of its routes itself, and this program's routes take none.
		WriteTimeout: 2 * time.Minute,
	}
	lines.Printf("listening on http://%s (callbacks at %s)\n", ln.Addr(), publicURL)
	// Until ctx ends; then the server first (its in-flight callbacks finish and commit), then the
	// kit, whose pipeline and handlers finish their current events (the rest wait in the store
	// for the next start). kit.Listener caps connections per client address and lets a client
	// still sending a refused body read its 401 or 413.
	err = kit.RunServer(ctx, func() error { return srv.Serve(kit.Listener(ln)) }, func(ctx context.Context) error {
		lines.Println("shutting down")
		return srv.Shutdown(ctx)
	})
	if err != nil {
		return err
	}
	lines.Println("stopped")
	return nil
}

// printTranscript prints each finished job's utterances. A handler is called at least once per
// event: after a crash the same event comes again with the same ID. A real program records the
// IDs it has handled in its own database, in the transaction of its work; this one only prints,
// so a set in memory is enough.
func printTranscript(out *log.Logger) func(context.Context, api.Event, api.Job) error {
	var seen sync.Map
	return func(_ context.Context, ev api.Event, job api.Job) error {
		if _, dup := seen.LoadOrStore(ev.ID, true); dup {
			return nil
		}
		var b strings.Builder
		// The record keeps the result as the service sent it; decode what is printed.
		result, err := job.DecodeResult()
		if err != nil {
			return fmt.Errorf("job %s: %w", job.ID, err)
		}
		var utterances []api.Utterance
		if result != nil && result.Transcription != nil {
			utterances = result.Transcription.Utterances
		}
		fmt.Fprintf(&b, "job %s succeeded, %d utterances:\n", job.ID, len(utterances))
		for _, u := range utterances {
			fmt.Fprintf(&b, "  [%.2fs-%.2fs] %s\n", u.Start, u.End, u.Text)
		}
		// Output rather than Print: a failed write goes back to the kit, which calls again.
		return out.Output(1, b.String())
	}
}

// requireToken lets a request through to next only with the program's bearer token; any other
// gets 401 with a Bearer challenge, and an answer that repeats nothing it sent.
func requireToken(token appToken, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !token.allows(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="transcribe"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a valid bearer token (APP_TOKEN) is required"})
			return
		}
		next(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
