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

// List the deliveries that failed for good, and replay them once the cause is fixed: here the
// store's disk fails while a job's result arrives, so applying the callback fails at every
// attempt (two here, a second apart; by default six over about 13 minutes, docs/operations.md).
// The delivery itself is never lost: it stays in the inbox, and the replay applies it once.
func ExampleRecords_ReplayInbox() {
	ctx := context.Background()
	service := startSandbox("Failures get a way back")
	defer service.Close()
	cfg, ln := service.kitConfig()
	disk := service.failingDisk(cfg) // a store whose Applies fail while Down is set
	defer disk.Close()
	disk.Down.Store(true)

	kit, err := scribehook.New(ctx, cfg, scribehook.WithLogger(quietLogger()),
		scribehook.WithSecrets(configs.Secrets{APIKey: service.APIKey}),
		scribehook.WithStore(disk),
		scribehook.WithInboxRetry(time.Second)) // one retry, a second after the first attempt
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

	records := kit.Records()
	mine := store.InboxFilter{JobID: created.ID}
	var failed []store.InboxRow
	for deadline := time.Now().Add(time.Minute); len(failed) == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if failed, err = records.FailedInbox(ctx, mine, 10); err != nil {
			panic(err)
		}
	}
	for _, row := range failed {
		fmt.Printf("failed: %s after %d attempts: %s\n", row.Kind, row.Attempts, row.LastError)
	}

	disk.Down.Store(false) // the cause, fixed
	moved, err := records.ReplayInbox(ctx, mine)
	if err != nil {
		panic(err)
	}
	fmt.Println("replayed:", len(moved))
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rec, err := scribehook.WaitJob(waitCtx, records, created.ID, 0, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("job:", rec.Job.Status, "deliveries applied:", rec.Local.Deliveries)
	// Output:
	// failed: job.success after 2 attempts: disk I/O error
	// replayed: 1
	// job: done deliveries applied: 1
}
