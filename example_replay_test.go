package scribehook_test

import (
	"context"
	"fmt"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sinks"
)

// Replay a window of a sink's events: after a target was fixed, the events of the last hour
// go to it again under their original ids (receivers dedupe on them). The same call feeds a
// sink added later the stored events its filter takes (a backfill).
func ExampleRecords_ReplaySink() {
	ctx := context.Background()
	service := startSandbox("Replayed under the same id")
	defer service.Close()
	cfg, ln := service.kitConfig()

	events := make(chan api.Event, 4)
	kit, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}),
		scribehook.WithEventHandler(scribehook.EventHandler{
			Name:   "audit",
			Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}},
			Func:   func(_ context.Context, ev api.Event) error { events <- ev; return nil },
		}))
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
	var first api.Event
	select {
	case first = <-events:
	case <-time.After(time.Minute):
		fmt.Println("no job.succeeded within a minute")
		return
	}

	// The handler has the event; its delivery is recorded once the handler returned.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, err := kit.Records().SinkDepth(ctx, "audit"); err == nil && n == 0 {
			break
		}
	}
	rep, err := kit.Records().ReplaySink(ctx, "audit", scribehook.ReplayWindow{
		Since: time.Now().Add(-time.Hour),
		Types: []string{"job.*"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("queued again:", len(rep.Requeued), "backfilled:", len(rep.Backfilled))
	select {
	case again := <-events:
		fmt.Println("same event id:", again.ID == first.ID)
	case <-time.After(time.Minute):
		fmt.Println("no replay within a minute")
	}

	_, err = kit.Records().ReplaySink(ctx, "nope", scribehook.ReplayWindow{Since: time.Now().Add(-time.Hour)})
	fmt.Println(err)
	// Output:
	// queued again: 1 backfilled: 0
	// same event id: true
	// unknown sink "nope": the sinks are audit
}
