package scribehook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// A kit lists its Go handler's queue (kind go, registered) beside the configured sinks, and a
// queue left under a handler's old name as orphaned, which Start warns about by name; the
// handler's own queue is not warned about.
func TestKitSinkStatusesHandlersAndOrphans(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	ln := listen(t)
	_ = ln.Close()
	st := teststore.OpenSQLite(t, sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var ds []store.SinkDelivery
	for i, sink := range []string{"billing", "billing", "billing-v2"} {
		ev := api.Event{ID: fmt.Sprintf("ev-%d", i), Type: api.EventJobSucceeded, CreatedAt: api.Time{Time: at},
			JobID: "job-1", Kind: api.KindPreRecorded, Data: json.RawMessage(`{}`)}
		// Due in a day: the started kit must not deliver billing-v2's before it is counted.
		ds = append(ds, store.SinkDelivery{Sink: sink, EventID: ev.ID, Event: ev, OrderKey: "job-1",
			NextAttempt: time.Now().Add(24 * time.Hour), CreatedAt: at})
	}
	if err := st.EnqueueSinkDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}

	cfg := kitConfig(dir, ln, "http://127.0.0.1:1")
	cfg.Sinks = []configs.Sink{{Name: "audit", Kind: sinks.KindLog, Events: []string{"*"}, Timeout: configs.DefaultSinkTimeout}}
	var logs bytes.Buffer
	logger := logrus.New()
	logger.SetOutput(&logs)
	k, err := New(ctx, cfg, WithLogger(logger), WithSecrets(configs.Secrets{}), WithStore(st), WithSinkOutput(io.Discard),
		WithEventHandler(EventHandler{Name: "billing-v2", Filter: sinks.Filter{Events: []string{api.EventJobSucceeded}},
			Func: func(context.Context, api.Event) error { return nil }}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })

	got, err := k.SinkStatuses(ctx)
	want := []SinkStatus{
		{Name: "audit", Kind: sinks.KindLog, Configured: true},
		{Name: "billing", Queued: 2},
		{Name: "billing-v2", Kind: KindGo, Registered: true, Queued: 1},
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Kit.SinkStatuses = %+v, %v\nwant %+v", got, err, want)
	}
	if orphans := slices.DeleteFunc(slices.Clone(got), func(s SinkStatus) bool { return !s.Orphaned() }); len(orphans) != 1 || orphans[0].Name != "billing" {
		t.Errorf("orphaned: %+v, want billing only", orphans)
	}

	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "neither configured nor registered") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.HasSuffix(warned[0], "sink=billing") || !strings.Contains(warned[0], "queued=2") {
		t.Errorf("Start warned %q, want one warning naming billing with 2 queued", warned)
	}
}
