//go:build sqlite_fts5 || fts5

package scribehook_test

import (
	"context"
	"fmt"
	"time"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/store"
)

// Search every stored transcript: the words of a phrase in a row and a prefix, with the job
// list's filters, each hit with its job, its time and the matched words marked. (Built with
// -tags sqlite_fts5, as make test builds: SQLite searches through FTS5.)
func ExampleRecords_Search() {
	ctx := context.Background()
	service := startSandbox("Open source speech tools", "speak to everyone")
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
	created, err := sub.Submit(ctx, api.PreRecordedRequest{AudioURL: service.AudioURL})
	if err != nil {
		panic(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The job's utterances are indexed in the transaction that stores its result.
	if _, err := scribehook.WaitJob(waitCtx, kit.Records(), created.ID, 0, nil); err != nil {
		panic(err)
	}

	page, err := kit.Records().Search(ctx, store.SearchQuery{
		Text: `"open source" speech*`,
		List: api.ListQuery{Kind: []api.JobKind{api.KindPreRecorded}, Limit: api.Int(10)},
	})
	if err != nil {
		panic(err)
	}
	for _, hit := range page.Items {
		fmt.Printf("%v %s %.1fs: %s\n", hit.JobID == created.ID, hit.Kind, hit.Start, hit.Highlight)
	}
	_, err = kit.Records().Search(ctx, store.SearchQuery{Text: `"`})
	fmt.Println(err)
	// Output:
	// true pre-recorded 0.5s: <mark>Open source</mark> <mark>speech</mark> tools
	// invalid search query: no words
}
