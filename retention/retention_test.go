package retention_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/retention"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// TestDurations pins the configuration key each kind of the prune report shows the duration
// of; every key differs, so a kind read from the wrong key shows.
func TestDurations(t *testing.T) {
	r := configs.RetentionConfig{
		Inbox: configs.Days(1), Jobs: configs.Days(2), SinkDelivered: configs.Days(3),
		DeadLetters: configs.Days(4), Quarantine: configs.Days(5),
		Live: configs.LiveRetention{PartialTranscripts: configs.Days(7), Errors: configs.Days(8)},
	}
	want := map[store.PruneKind]configs.Keep{
		store.PruneInbox:                               configs.Days(1),
		store.PruneInboxFailed:                         configs.Days(4),
		store.PruneJobs:                                configs.Days(2),
		store.PruneArtifacts:                           configs.Days(2),
		store.PruneSessionRest:                         configs.Days(2),
		store.PruneSinkDelivered:                       configs.Days(3),
		store.PruneDeadLetters:                         configs.Days(4),
		store.PruneEvents:                              configs.Days(3), // with the sooner of the two
		store.PruneQuarantine:                          configs.Days(5),
		store.PruneTokens:                              configs.Days(6),
		store.PruneSessions:                            configs.Keep(retention.SessionGrace),
		store.LiveKind(api.CategoryPartialTranscripts): configs.Days(7),
		store.LiveKind(api.CategoryErrors):             configs.Days(8),
	}
	for _, c := range api.Categories {
		if _, ok := want[store.LiveKind(c)]; !ok {
			want[store.LiveKind(c)] = configs.Forever
		}
	}
	got := retention.Durations(r, time.Duration(configs.Days(6)))
	if !maps.Equal(got, want) {
		t.Fatalf("Durations = %v, want %v", got, want)
	}
}

func TestRemoveFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(p string) string {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a1, a2 := write("j1/en.srt"), write("j1/en.vtt")
	b1, other := write("j2/en.srt"), write("j2/notes.txt") // j2 keeps a file of its own
	flat := write("flat.srt")                              // not in a directory of its job
	arts := []store.Artifact{{JobID: "j1", Path: a1}, {JobID: "j1", Path: a2}, {JobID: "j2", Path: b1},
		{JobID: "j3", Path: flat}, {JobID: "j4", Path: filepath.Join(dir, "j4/gone.srt")}}
	if err := retention.RemoveFiles(context.Background(), arts); err != nil {
		t.Fatal(err)
	}
	for p, exists := range map[string]bool{a1: false, a2: false, filepath.Join(dir, "j1"): false, b1: false,
		other: true, flat: false, dir: true} {
		if _, err := os.Stat(p); (err == nil) != exists {
			t.Errorf("%s: exists = %v, want %v", p, err == nil, exists)
		}
	}
}

// TestRemoveFilesElsewhere: from a directory other than serve's (scribehook prune run from
// elsewhere), the relative paths find no artifacts directory: that is an error, which keeps
// the jobs' rows, not files taken for already removed while they stay on disk.
func TestRemoveFilesElsewhere(t *testing.T) {
	arts := []store.Artifact{{JobID: "j1", Path: "no-such-artifacts/j1/en.srt"}, {JobID: "j1", Path: "no-such-artifacts/j1/en.vtt"},
		{JobID: "j2", Path: "no-such-artifacts/j2/en.srt"}}
	err := retention.RemoveFiles(context.Background(), arts)
	const want = "artifacts directory no-such-artifacts not found: files are removed by paths relative to serve's working directory, run from there"
	if err == nil || err.Error() != want {
		t.Errorf("RemoveFiles = %v, want %q once", err, want)
	}
}

// Start prunes after FirstRun and then every Interval, counting rows by kind; Stop waits for it.
func TestPrunerStartCounts(t *testing.T) {
	ctx := context.Background()
	weekAgo := time.Now().Add(-7 * 24 * time.Hour)
	s := teststore.OpenSQLite(t, sqlite.Config{Now: func() time.Time { return weekAgo }})
	res, err := s.Ingest(ctx, []store.Delivery{
		{DedupeKey: "a", Route: "job", Kind: api.CallbackJobSuccess, JobID: "a", PartitionKey: "a", Body: []byte("{}")},
		{DedupeKey: "b", Route: "job", Kind: api.CallbackJobSuccess, JobID: "b", PartitionKey: "b", Body: []byte("{}")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if err := s.Apply(ctx, r.ID, func(context.Context, store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateToken(ctx, store.Token{Hash: store.HashToken("t"), Kind: api.KindPreRecorded, CreatedAt: weekAgo}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p, err := retention.New(retention.Config{Store: s, Policy: store.RetentionPolicy{Inbox: 24 * time.Hour, Tokens: 24 * time.Hour}, Interval: time.Hour,
		FirstRun: time.Millisecond, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctx)
	testwait.For(t, "the first run's success", 5*time.Second, func() bool {
		return testmetrics.Value(t, reg, "scribehook_prune_last_success_timestamp_seconds") != 0
	})
	p.Stop()
	if got := testmetrics.Value(t, reg, "scribehook_pruned_rows_total", "kind", "inbox"); got != 2 {
		t.Errorf("scribehook_pruned_rows_total{kind=inbox} = %v, want 2", got)
	}
	for kind, want := range map[store.PruneKind]float64{store.PruneTokens: 1, store.PruneQuarantine: 0} {
		if got, listed := testmetrics.Series(t, reg, "scribehook_pruned_rows_total", "kind", string(kind)); got != want || !listed {
			t.Errorf("scribehook_pruned_rows_total{kind=%s} = %v (listed: %v), want %v", kind, got, listed, want)
		}
	}
	if last := testmetrics.Value(t, reg, "scribehook_prune_last_success_timestamp_seconds"); time.Since(time.Unix(int64(last), 0)) > time.Minute {
		t.Errorf("last success at %v", last)
	}
}
