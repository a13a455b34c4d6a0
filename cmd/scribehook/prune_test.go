package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/store/sqlite/sqlitetest"
)

// pruneEnv is a store as serve leaves it after weeks: two deliveries applied ten days ago, one
// still pending, and a job finished forty days ago with a subtitle file on disk.
func pruneEnv(t *testing.T) (cfgPath, dbPath, srt string) {
	t.Helper()
	dir, dbPath := tempDB(t)
	cfgPath = writeSQLiteConfig(t, dir, dbPath, "retention: {jobs: 30d, live: {final_transcripts: 30d}}\n")
	ctx := context.Background()
	tenDaysAgo, fortyDaysAgo := time.Now().Add(-10*24*time.Hour), time.Now().Add(-40*24*time.Hour)
	st := teststore.OpenSQLite(t, sqlite.Config{Path: dbPath, Now: func() time.Time { return tenDaysAgo }})
	defer st.Close()
	srt = filepath.Join(dir, "artifacts", "job-1", "subtitles.en.srt")
	if err := os.MkdirAll(filepath.Dir(srt), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, srt, []byte("1\n00:00:00,000 --> 00:00:01,000\nHello\n"))
	var ds []store.Delivery
	for _, id := range []string{"job-1", "job-2", "job-3"} {
		ds = append(ds, store.Delivery{DedupeKey: "job:" + id, Route: "job", Kind: api.CallbackJobSuccess,
			Event: string(api.EventTranscriptionSuccess), JobID: id, PartitionKey: id, Body: []byte(`{}`), ReceivedAt: tenDaysAgo})
	}
	res, err := st.Ingest(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	// A token past receiver.token_ttl (7d) goes; a young one stays.
	for name, created := range map[string]time.Time{"expired": tenDaysAgo, "young": time.Now()} {
		if err := st.CreateToken(ctx, store.Token{Hash: store.HashToken(name), Kind: api.KindPreRecorded, CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range res[:2] {
		if err := st.Apply(ctx, r.ID, func(ctx context.Context, tx store.Tx) error {
			if r.ID != res[0].ID {
				return nil
			}
			rec := store.JobRecord{Job: api.Job{ID: "job-1", Version: 2, Kind: api.KindPreRecorded, Status: api.StatusDone,
				CreatedAt: api.NewTime(fortyDaysAgo), CompletedAt: api.PtrTime(fortyDaysAgo)},
				Local: store.Local{Source: "callback", Final: string(api.EventTranscriptionSuccess)}}
			if err := tx.PutJob(ctx, rec); err != nil {
				return err
			}
			return tx.PutArtifact(ctx, store.Artifact{JobID: "job-1", Name: "subtitles.en.srt", Format: "srt", Language: "en", Path: srt})
		}); err != nil {
			t.Fatal(err)
		}
	}
	return cfgPath, dbPath, srt
}

func TestPruneCommand(t *testing.T) {
	cfgPath, dbPath, srt := pruneEnv(t)
	run := func(args ...string) string {
		t.Helper()
		out, errOut, err := runCmd(context.Background(), nil, append([]string{"--config", cfgPath, "prune"}, args...)...)
		if err != nil {
			t.Fatalf("prune %v: %v\n%s", args, err, errOut)
		}
		return out
	}

	out := run("--dry-run")
	want := `KIND                                      KEPT  ROWS
inbox                                     7d    2
inbox_failed                              30d   0
live_messages.partial_transcripts         2d    0
live_messages.final_transcripts           30d   0
live_messages.speech_events               30d   0
live_messages.pre_processing_events       30d   0
live_messages.realtime_processing_events  30d   0
live_messages.post_processing_events      30d   0
live_messages.acknowledgments             2d    0
live_messages.errors                      30d   0
live_messages.lifecycle_events            30d   0
jobs                                      30d   1
artifacts                                 30d   1
live_messages                             30d   0
sink_delivered                            7d    0
dead_letters                              30d   0
events                                    7d    0
quarantine                                30d   0
tokens                                    7d    1
sessions                                  1h    0
would prune (dry run) 5 rows
`
	if out != want {
		t.Fatalf("dry run printed\n%s\nwant\n%s", out, want)
	}
	if _, err := os.Stat(srt); err != nil {
		t.Fatalf("the dry run touched the subtitle file: %v", err)
	}

	var res pruneResult
	if err := json.Unmarshal([]byte(run("-o", "json")), &res); err != nil {
		t.Fatal(err)
	}
	wantRows := map[store.PruneKind]int64{store.PruneInbox: 2, store.PruneJobs: 1, store.PruneArtifacts: 1, store.PruneTokens: 1}
	if res.DryRun || res.Total != 5 || len(res.Rows) != len(wantRows) {
		t.Fatalf("run = %+v, want %v", res, wantRows)
	}
	for k, n := range wantRows {
		if res.Rows[k] != n {
			t.Errorf("%s: %d rows, want %d", k, res.Rows[k], n)
		}
	}
	if _, err := os.Stat(filepath.Dir(srt)); !os.IsNotExist(err) {
		t.Errorf("the job's subtitle directory is still there: %v", err)
	}
	if out := run(); !strings.HasSuffix(out, "\npruned 0 rows\n") {
		t.Errorf("second run printed\n%s", out)
	}

	st := teststore.OpenSQLite(t, sqlite.Config{Path: dbPath})
	if n, err := st.InboxBacklog(context.Background()); err != nil || n != 1 {
		t.Errorf("pending rows = %d, %v; want the one not yet processed", n, err)
	}
	if _, err := st.LookupToken(context.Background(), store.HashToken("young")); err != nil {
		t.Errorf("the young token: %v", err)
	}
	if _, err := st.LookupToken(context.Background(), store.HashToken("expired")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the expired token: %v, want it gone", err)
	}
}

// A database created before retention is told about, converted by --vacuum, and not told
// about again.
func TestPruneVacuum(t *testing.T) {
	dir, dbPath := tempDB(t)
	sqlitetest.ForeignDatabase(t, dbPath)
	cfgPath := writeSQLiteConfig(t, dir, dbPath)
	const note = "note: this SQLite database was created before retention: pruned pages are reused, not given back; run scribehook prune --vacuum once with serve stopped\n"
	for _, tc := range []struct {
		args []string
		tail string
	}{
		{nil, "pruned 0 rows\n" + note},
		{[]string{"--dry-run", "--vacuum"}, "would prune (dry run) 0 rows\n" + note}, // a dry run changes nothing
		{[]string{"--vacuum"}, "pruned 0 rows\ndatabase rewritten: pruning gives space back from now on\n"},
		{nil, "quarantine                                30d      0\ntokens                                    7d       0\nsessions                                  1h       0\npruned 0 rows\n"},
	} {
		out, errOut, err := runCmd(context.Background(), nil, append([]string{"--config", cfgPath, "prune"}, tc.args...)...)
		if err != nil || !strings.HasSuffix(out, tc.tail) {
			t.Fatalf("prune %v: %v %s\n%s\nwant it to end with\n%s", tc.args, err, errOut, out, tc.tail)
		}
	}
}
