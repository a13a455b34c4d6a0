package scribehook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sinks"
)

// Name a job's speakers once it is done: its subtitles are rendered again with the names (the
// WebVTT voice, and a label where a speaker takes the turn) and subtitles.ready comes again
// with the next revision, for the sinks to replace the files they have. The sandbox's scripted
// engine alternates speakers from one utterance to the next: here, one sentence each. The same names again
// change nothing; a name that breaks a rule is refused with the rule.
func ExampleKit_SetSpeakers() {
	ctx := context.Background()
	service := startSandbox("Welcome back", "Let us begin")
	defer service.Close()
	cfg, ln := service.kitConfig()
	cfg.Subtitles.Dir = service.artifacts()
	cfg.Subtitles.Formats = []string{"vtt"}

	ready := make(chan sinks.SubtitlesReadyData, 2)
	kit, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}),
		scribehook.WithEventHandler(scribehook.EventHandler{
			Name:   "subtitles",
			Filter: sinks.Filter{Events: []string{api.EventSubtitlesReady}},
			Func: func(_ context.Context, ev api.Event) error {
				var d sinks.SubtitlesReadyData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					return &sinks.Failure{Err: err, Permanent: true}
				}
				ready <- d
				return nil
			},
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
	created, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: service.AudioURL, Diarization: api.Bool(true)})
	if err != nil {
		panic(err)
	}
	next := func() (sinks.SubtitlesReadyData, bool) {
		select {
		case d := <-ready:
			return d, true
		case <-time.After(time.Minute):
			fmt.Println("no subtitles.ready within a minute")
			return sinks.SubtitlesReadyData{}, false
		}
	}
	first, ok := next()
	if !ok {
		return
	}
	fmt.Println("revision", first.Revision)
	fmt.Print(first.Files[0].Content)

	res, err := kit.SetSpeakers(ctx, created.ID, api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone"})
	if err != nil {
		panic(err)
	}
	fmt.Println("named:", res.Changed, "revision", res.Revision, res.Files)
	again, ok := next()
	if !ok {
		return
	}
	fmt.Println("revision", again.Revision)
	fmt.Print(again.Files[0].Content)

	res, err = kit.SetSpeakers(ctx, created.ID, api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone"})
	if err != nil {
		panic(err)
	}
	fmt.Println("the same names:", res.Changed, "revision", res.Revision)

	_, err = kit.SetSpeakers(ctx, created.ID, api.SpeakerNames{0: "Alice\nMartin"})
	fmt.Println(errors.Is(err, scribehook.ErrNamesInvalid), err)
	// Output:
	// revision 1
	// WEBVTT
	//
	// 1
	// 00:00:00.500 --> 00:00:01.816
	// <v Speaker 1>Welcome back
	//
	// 2
	// 00:00:01.900 --> 00:00:03.000
	// <v Speaker 2>Let us begin
	// named: true revision 2 [subtitles.en.vtt]
	// revision 2
	// WEBVTT
	//
	// 1
	// 00:00:00.500 --> 00:00:01.816
	// <v Alice Martin>Alice Martin: Welcome back
	//
	// 2
	// 00:00:01.900 --> 00:00:03.050
	// <v Bob Stone>Bob Stone: Let us begin
	// the same names: false revision 2
	// true invalid speaker names: speaker "0" must not contain control or formatting characters (line breaks, tabs, bidirectional marks)
}
