package scribehook_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
)

// Serve the kit from your own net/http server: its routes on your mux, your server on the
// kit's Listener, and RunServer to stop the two in the order that loses nothing (your server
// first, so the callbacks it is taking commit; then the kit) once ctx ends.
func ExampleKit_RunServer() {
	ctx := context.Background()
	service := startSandbox("My own server", "takes the callbacks")
	defer service.Close()
	cfg, ln := service.kitConfig()

	kit, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}))
	if err != nil {
		panic(err)
	}
	if err := kit.Start(ctx); err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "my own page") })
	mux.Handle("/", kit.Handler(receiver.MountOptions{Health: true}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() {
		stopped <- kit.RunServer(runCtx, func() error { return srv.Serve(kit.Listener(ln)) }, srv.Shutdown)
	}()

	sub, err := kit.Submitter()
	if err != nil {
		panic(err)
	}
	created, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: service.AudioURL})
	if err != nil {
		panic(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rec, err := scribehook.WaitJob(waitCtx, kit.Records(), created.ID, 0, nil)
	if err != nil {
		panic(err)
	}
	result, err := rec.Job.DecodeResult()
	if err != nil {
		panic(err)
	}
	fmt.Println("transcript:", result.Transcription.FullTranscript)
	stop()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// transcript: My own server takes the callbacks
	// stopped: <nil>
}

// Take a sink out of the fan-out and put it back, from a program of your own: what
// `scribehook sinks disable|enable|list` do. A running serve on the same store follows the
// recorded state within sinks.DefaultStateInterval; deliveries wait in the sink's queue.
func ExampleSetSinkState() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "scribehook-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := configs.Default()
	cfg.Store.DSN = filepath.Join(dir, "scribehook.db")
	cfg.Sinks = []configs.Sink{{Name: "archive", Kind: "file", Dir: filepath.Join(dir, "out")}}
	st, err := scribehook.OpenStore(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer st.Close()

	if _, err := scribehook.SetSinkState(ctx, cfg, st, store.SinkState{Name: "archive", Disabled: true, Reason: "disk swap"}); err != nil {
		panic(err)
	}
	statuses, err := scribehook.SinkStatuses(ctx, cfg, st)
	if err != nil {
		panic(err)
	}
	for _, s := range statuses {
		fmt.Printf("%s: disabled=%t (%s), %d queued\n", s.Name, s.Disabled, s.Reason, s.Queued)
	}
	_, err = scribehook.SetSinkState(ctx, cfg, st, store.SinkState{Name: "archiv"})
	fmt.Println(err)
	// Output:
	// archive: disabled=true (disk swap), 0 queued
	// no sink "archiv" in the configuration (sinks: archive)
}
