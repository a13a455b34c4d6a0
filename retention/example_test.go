package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/retention"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// A pruner with the configuration's default durations, on a store holding a delivery applied
// eight days ago and one still pending: the dry run says what would go, the run deletes it, and
// the pending one stays.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "retention-example")
	defer os.RemoveAll(dir)
	eightDaysAgo := time.Now().Add(-8 * 24 * time.Hour)
	s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "scribehook.db"), Now: func() time.Time { return eightDaysAgo }})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	res, _ := s.Ingest(ctx, []store.Delivery{
		{DedupeKey: "job:1:transcription.success", Route: "job", Kind: api.CallbackJobSuccess, JobID: "1", PartitionKey: "1", Body: []byte(`{}`)},
		{DedupeKey: "job:2:transcription.success", Route: "job", Kind: api.CallbackJobSuccess, JobID: "2", PartitionKey: "2", Body: []byte(`{}`)},
	})
	_ = s.Apply(ctx, res[0].ID, func(context.Context, store.Tx) error { return nil })

	p, err := retention.New(retention.Config{Store: s, Policy: retention.PolicyOf(configs.DefaultRetention(), configs.DefaultTokenTTL)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dryRun := range []bool{true, false} {
		rep, err := p.Prune(ctx, dryRun)
		fmt.Println("dry run:", rep.DryRun, "inbox rows:", rep.Rows[store.PruneInbox], err)
	}
	backlog, _ := s.InboxBacklog(ctx)
	fmt.Println("pending:", backlog)
	// Output:
	// dry run: true inbox rows: 1 <nil>
	// dry run: false inbox rows: 1 <nil>
	// pending: 1
}
