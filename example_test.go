package scribehook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sinks"
)

// Handle job.succeeded in Go: the kit receives the job's callback, commits it, and calls the
// handler with the finished job. The service is a sandbox whose scripted engine returns known
// words.
func ExampleWithEventHandler() {
	ctx := context.Background()
	service := startSandbox("Welcome to scribehook", "Callbacks land here")
	defer service.Close()
	// The defaults, with public_url where the kit listens on ln: the service calls it back
	// there (in production, a tunnel or load balancer in front of it). See kitConfig.
	cfg, ln := service.kitConfig()

	// The handler is called at least once per event: after a crash the same event comes
	// again with the same ID, so it skips the IDs it has handled.
	var handled sync.Map
	succeeded := make(chan api.Job, 1)
	onSucceeded := scribehook.JobSucceeded(func(ctx context.Context, ev api.Event, job api.Job) error {
		if _, dup := handled.LoadOrStore(ev.ID, true); dup {
			return nil
		}
		succeeded <- job
		return nil
	})

	kit, err := scribehook.New(ctx, cfg,
		scribehook.WithLogger(quietLogger()), // the example prints only what it received
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}),
		scribehook.WithEventHandler(scribehook.EventHandler{
			Name:   "on-succeeded",
			Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}},
			Func:   onSucceeded,
		}),
	)
	if err != nil {
		panic(err) // rather than log.Fatal: the deferred clean-up still runs
	}
	defer kit.Close()
	if err := kit.Start(ctx); err != nil {
		panic(err)
	}
	go func() { _ = kit.Serve(ln) }()

	sub, err := kit.Submitter()
	if err != nil {
		panic(err)
	}
	created, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: service.AudioURL})
	if err != nil {
		panic(err)
	}

	select {
	case job := <-succeeded:
		fmt.Println("succeeded:", job.ID == created.ID, job.Status)
		result, _ := job.DecodeResult()
		first := result.Transcription.Utterances[0]
		fmt.Printf("first utterance: %q at %.1f s\n", first.Text, first.Start)
	case <-time.After(time.Minute):
		fmt.Println("no job.succeeded within a minute")
	}
	// Output:
	// succeeded: true done
	// first utterance: "Welcome to scribehook" at 0.5 s
}

// Submit a job whose callback comes back to the kit, and wait for it in the kit's store: the
// service is never polled.
func ExampleWaitJob() {
	ctx := context.Background()
	service := startSandbox("Nobody polls", "the callback brings the result")
	defer service.Close()
	cfg, ln := service.kitConfig()

	kit, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}))
	if err != nil {
		panic(err)
	}
	defer kit.Close()
	if err := kit.Start(ctx); err != nil {
		panic(err)
	}
	go func() { _ = kit.Serve(ln) }()

	sub, err := kit.Submitter()
	if err != nil {
		panic(err)
	}
	created, err := sub.Submit(ctx, api.PreRecordedRequest{
		AudioURL:       service.AudioURL,
		CustomMetadata: json.RawMessage(`{"team":"docs"}`),
		CallbackConfig: &api.CallbackConfig{Method: "PUT"}, // the callback's method; POST when empty
	})
	if err != nil {
		panic(err)
	}

	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rec, err := scribehook.WaitJob(waitCtx, kit.Records(), created.ID, 0, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("status:", rec.Job.Status)
	fmt.Println("created by:", rec.Local.Source, "metadata:", string(rec.Job.CustomMetadata))
	result, err := rec.Job.DecodeResult()
	if err != nil {
		panic(err)
	}
	fmt.Println("transcript:", result.Transcription.FullTranscript)
	// Output:
	// status: done
	// created by: submit metadata: {"team":"docs"}
	// transcript: Nobody polls the callback brings the result
}

// shelf is a sink of the program's own: it keeps the subtitle files of each job. A sink gets
// the queue, retries, breaker and dead letters of the configured sinks; an error from Deliver
// is retried, a *sinks.Failure says how.
type shelf struct {
	files chan []sinks.SubtitleFile
}

func (s *shelf) Name() string { return "shelf" }

func (s *shelf) Deliver(ctx context.Context, ev api.Event) error {
	var set sinks.SubtitlesReadyData
	if err := json.Unmarshal(ev.Data, &set); err != nil {
		// The same bytes would fail again: dead-letter the event at once.
		return &sinks.Failure{Err: err, Permanent: true}
	}
	select {
	case s.files <- set.Files:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *shelf) Close() error { return nil }

// Add a sink of your own: here one that takes the subtitle files the kit renders for each
// finished job, in the formats of subtitles.formats.
func ExampleWithSink() {
	ctx := context.Background()
	service := startSandbox("Subtitles are rendered", "from the words of the result")
	defer service.Close()
	cfg, ln := service.kitConfig()
	cfg.Subtitles.Dir = service.artifacts() // where the files are written; none by default
	cfg.Subtitles.Formats = []string{"srt", "vtt"}

	sink := &shelf{files: make(chan []sinks.SubtitleFile, 1)}
	kit, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}),
		scribehook.WithSink(sinks.Spec{
			Name:   sink.Name(),
			Kind:   "shelf", // informative: shown in the read API's sink list
			Filter: sinks.Filter{Events: []string{api.EventSubtitlesReady}},
		}, sink))
	if err != nil {
		panic(err)
	}
	defer kit.Close()
	if err := kit.Start(ctx); err != nil {
		panic(err)
	}
	go func() { _ = kit.Serve(ln) }()

	sub, err := kit.Submitter()
	if err != nil {
		panic(err)
	}
	if _, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: service.AudioURL}); err != nil {
		panic(err)
	}
	select {
	case files := <-sink.files:
		for _, f := range files {
			fmt.Println(f.Name)
		}
		fmt.Print(files[0].Content)
	case <-time.After(time.Minute):
		fmt.Println("no subtitles.ready within a minute")
	}
	// Output:
	// subtitles.en.srt
	// subtitles.en.vtt
	// 1
	// 00:00:00,500 --> 00:00:01,600
	// Subtitles are rendered
	//
	// 2
	// 00:00:02,300 --> 00:00:04,600
	// from the words of the result
}
