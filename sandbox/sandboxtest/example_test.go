package sandboxtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox"
	"github.com/scribehook/scribehook/sandbox/sandboxtest"
)

// Run the service in-process with a recording of two sentences, and transcribe it: the
// scripted engine returns the sentences' words, at the times Synthesize gave them. A kit under
// test is pointed at world.Service.URL (configs' service.base_url) and submits
// world.Files.AudioURL the same way; the service then calls the kit back on loopback.
func ExampleStartWorld() {
	rec, err := sandboxtest.Synthesize("talk.wav", "Hello from the sandbox", "every word is known")
	if err != nil {
		panic(err)
	}
	world, err := sandboxtest.StartWorld(sandbox.Config{APIKey: "test-key"}, rec)
	if err != nil {
		panic(err)
	}
	defer world.Close()

	client, err := world.Service.Client() // the service's client, with its key
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := client.CreatePreRecorded(ctx, api.PreRecordedRequest{AudioURL: world.Files.AudioURL})
	if err != nil {
		panic(err)
	}
	job, err := client.GetPreRecorded(ctx, created.ID)
	for err == nil && !job.Status.Final() { // a kit gets it by callback instead
		time.Sleep(20 * time.Millisecond)
		job, err = client.GetPreRecorded(ctx, created.ID)
	}
	if err != nil {
		panic(err)
	}
	result, err := job.DecodeResult()
	if err != nil {
		panic(err)
	}
	fmt.Println("status:", job.Status)
	for _, u := range result.Transcription.Utterances {
		fmt.Printf("%.1f–%.1f s: %s\n", u.Start, u.End, u.Text)
	}
	// Output:
	// status: done
	// 0.5–2.0 s: Hello from the sandbox
	// 2.7–4.2 s: every word is known
}
