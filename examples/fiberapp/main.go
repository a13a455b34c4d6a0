// Command fiberapp is a Fiber application of its own — its own routes, its own server — that
// receives the transcription service's callbacks through scribehook, mounted under /hooks:
//
//   - GET  /hello                      the app's own route, untouched by the kit;
//   - POST /transcribe?audio_url=URL   creates a job whose callback comes back to /hooks
//     (bearer APP_TOKEN; audio_url on an origin listed in AUDIO_ORIGINS);
//   - /hooks/v1/callbacks/:token       the kit's callback routes;
//   - /hooks/v1/jobs…, /hooks/healthz  the kit's read API (bearer SCRIBEHOOK_READ_TOKEN) and health.
//
// A Go event handler prints the transcript of every job.succeeded to standard output.
//
// Configuration comes from flags, whose defaults come from the environment; the service key,
// the read API's token and the app's own token come only from the environment
// (SCRIBEHOOK_API_KEY, SCRIBEHOOK_READ_TOKEN, APP_TOKEN), so that they never show in a process
// list. Without APP_TOKEN the app does not start: POST /transcribe spends the service key.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/sinks"
)

// hooksPrefix is where the kit is mounted in the app; public_url must end with it, since the
// service is handed callback URLs under it.
const hooksPrefix = "/hooks"

// config is what the program needs to know from its environment.
type config struct {
	Listen     string // address of the app (host:port; port 0 picks one)
	PublicURL  string // where the service reaches /hooks, prefix included; "" derives it from Listen
	ServiceURL string // base URL of the transcription service
	Store      string // SQLite file of the kit's store
	Artifacts  string // directory of rendered subtitles

	AppToken     string // bearer token of POST /transcribe (APP_TOKEN)
	AudioOrigins string // origins audio_url may be on, comma-separated; "" refuses every URL
}

func main() {
	var cfg config
	flag.StringVar(&cfg.Listen, "listen", envOr("LISTEN_ADDR", "127.0.0.1:8080"), "address the app listens on (env LISTEN_ADDR)")
	flag.StringVar(&cfg.PublicURL, "public-url", os.Getenv("SCRIBEHOOK_PUBLIC_URL"),
		"URL at which the service reaches "+hooksPrefix+", prefix included (env SCRIBEHOOK_PUBLIC_URL; default http://<listen>"+hooksPrefix+")")
	flag.StringVar(&cfg.ServiceURL, "service-url", envOr("SCRIBEHOOK_SERVICE_BASE_URL", configs.DefaultServiceURL), "base URL of the service (env SCRIBEHOOK_SERVICE_BASE_URL)")
	flag.StringVar(&cfg.Store, "store", envOr("SCRIBEHOOK_STORE_DSN", "fiberapp.db"), "SQLite file of the kit's store (env SCRIBEHOOK_STORE_DSN)")
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
		fmt.Fprintln(os.Stderr, "fiberapp:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then stops the app, then the kit. It writes its own lines (the
// address, the transcripts) to out; the kit logs to standard error through logrus.
func run(ctx context.Context, cfg config, out io.Writer) (err error) {
	// Checked before anything starts: an app that cannot guard POST /transcribe does not run.
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

	// The settings the kit's routes need of a parent app: bodies streamed (a callback's token
	// is checked before its body is received), BodyLimit at least receiver.body_limit, no
	// multipart parsing before the handlers, the server's timeouts (Fiber's defaults are none),
	// and the receiver's error handler. The rest is the app's to set.
	fcfg := kit.FiberConfig()
	fcfg.DisableStartupMessage = true
	app := fiber.New(fcfg)
	app.Get("/hello", func(c *fiber.Ctx) error {
		return c.SendString("hello from the app's own route\n")
	})
	app.Post("/transcribe", requireToken(token), func(c *fiber.Ctx) error {
		// Decided here, before the service is asked for anything: it would fetch the URL.
		audioURL, err := audioOrigins.check(c.Query("audio_url"))
		if err != nil {
			return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"error": err.Error()})
		}
		// fasthttp's context is not cancelled when the client leaves: bound the call instead.
		sctx, cancel := context.WithTimeout(c.UserContext(), 30*time.Second)
		defer cancel()
		created, err := sub.Submit(sctx, api.PreRecordedRequest{AudioURL: audioURL})
		id := created.ID
		if err != nil {
			// A job may exist even though recording it failed; its id is worth returning.
			return c.Status(fiber.StatusBadGateway).JSON(fiber.Map{"id": id, "error": err.Error()})
		}
		return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"id": id})
	})
	kit.Mount(app.Group(hooksPrefix), receiver.MountOptions{ReadAPI: true, Health: true})

	lines.Printf("listening on http://%s (callbacks at %s)\n", ln.Addr(), publicURL)
	// Until ctx ends; then the app first (its in-flight callbacks finish and commit), then the
	// kit, whose pipeline and handlers finish their current events (the rest wait in the store
	// for the next start). kit.Listener caps connections per client address and lets a client
	// still sending a refused body read its 401 or 413.
	err = kit.RunServer(ctx, func() error { return app.Listener(kit.Listener(ln)) }, func(ctx context.Context) error {
		lines.Println("shutting down")
		return app.ShutdownWithContext(ctx)
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

// requireToken lets a request through to the next handler only with the app's bearer token;
// any other gets 401 with a Bearer challenge, and an answer that repeats nothing it sent.
func requireToken(token appToken) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !token.allows(c.Get(fiber.HeaderAuthorization)) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="transcribe"`)
			return c.Status(fiber.StatusUnauthorized).JSON(fiber.Map{"error": "a valid bearer token (APP_TOKEN) is required"})
		}
		return c.Next()
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
