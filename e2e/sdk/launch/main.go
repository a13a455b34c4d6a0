// Command launch starts what the official SDK's contract test (e2e/sdk/test.mjs) runs against,
// all on loopback: the sandbox (internal/sandboxtest's: scripted engine, audio_url fetches
// allowed to 127.0.0.0/8; here with the key in x-gladia-key as the SDK sends it), a file server
// with the sample recording and its .json sidecar, and serve (the kit,
// scribehook.New/Start/Serve, over a fresh SQLite store) receiving the sandbox's callbacks, plus
// a small control API that mints callback URLs into serve. It prints one line of JSON with the
// URLs and keys, and runs until its standard input closes or it gets SIGINT/SIGTERM.
//
//	go run ./e2e/sdk/launch [-sample cmd/scribehook/demodata/sample.wav]
//
// Control API: POST /callback-url?kind=pre-recorded|live answers {"url"}: a callback URL of
// serve with a fresh per-job token, which the first callback binds to its job, as the
// callbacks of jobs that `scribehook submit` creates.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/e2elaunch"
	"github.com/scribehook/scribehook/internal/sandboxtest"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/store"
)

const (
	apiKey    = "sdk-e2e-service-key"
	keyHeader = "x-gladia-key" // what the official SDKs send
	readToken = "sdk-e2e-read-token-0123456789"
)

func main() {
	sample := flag.String("sample", "cmd/scribehook/demodata/sample.wav", "recording (and its .json sidecar) to serve")
	flag.Parse()
	if err := run(*sample); err != nil {
		fmt.Fprintln(os.Stderr, "launch:", err)
		os.Exit(1)
	}
}

func run(sample string) error {
	ctx, env, err := e2elaunch.Start("scribehook-sdk-", sample)
	if err != nil {
		return err
	}
	defer env.Close()

	// The service. Jobs stay a moment in queued and processing, so that polling sees them move;
	// callbacks are retried quickly.
	sb, err := sandboxtest.StartService(sandbox.Config{
		APIKey: apiKey, KeyHeader: keyHeader, Logger: env.Log, TempDir: env.Dir,
		ProcessingDelay: 300 * time.Millisecond, Callbacks: e2elaunch.CallbackRetries,
	})
	if err != nil {
		return err
	}
	defer sb.Close()
	service, err := sb.Client()
	if err != nil {
		return err
	}
	files := sandboxtest.StartFiles(env.Recording)
	defer files.Close()

	// serve: the kit, as `scribehook serve` runs it, fetching jobs from the sandbox.
	serveURL, closeKit, err := env.ServeKit(ctx, "127.0.0.1:0", configs.ServeDefaults(), scribehook.WithService(service),
		scribehook.WithSecrets(configs.Secrets{APIKey: apiKey, ReadToken: readToken}))
	if err != nil {
		return err
	}
	defer closeKit()

	control := http.NewServeMux()
	control.HandleFunc("POST /callback-url", func(w http.ResponseWriter, r *http.Request) {
		kind := api.JobKind(r.URL.Query().Get("kind"))
		if !kind.Valid() {
			http.Error(w, "kind must be pre-recorded or live", http.StatusBadRequest)
			return
		}
		u, err := mintCallbackURL(r.Context(), env.Store, serveURL, kind)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		e2elaunch.WriteJSON(w, map[string]string{"url": u})
	})
	controlSrv := sandboxtest.Serve(control)
	defer controlSrv.Close()
	if err := e2elaunch.PrintLine(map[string]string{
		"sandbox": sb.URL, "api_key": apiKey, "key_header": keyHeader,
		"sample_url": files.AudioURL, "serve": serveURL, "read_token": readToken,
		"control": controlSrv.URL,
	}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// mintCallbackURL stores a per-job callback token of the kind, unbound: the sandbox's first
// callback binds it to the job the SDK created, as it binds the token of a job whose callback
// arrives before `scribehook submit` has recorded the job.
func mintCallbackURL(ctx context.Context, st store.Store, serveURL string, kind api.JobKind) (string, error) {
	token, err := store.NewToken()
	if err != nil {
		return "", fmt.Errorf("mint a token: %w", err)
	}
	if err := st.CreateToken(ctx, store.Token{Hash: store.HashToken(token), Kind: kind, CreatedAt: time.Now()}); err != nil {
		return "", fmt.Errorf("store the token: %w", err)
	}
	return configs.Config{PublicURL: serveURL}.CallbackURL(token), nil
}
