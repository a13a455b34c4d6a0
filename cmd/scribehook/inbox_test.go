package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// refusingStore refuses to apply inbox rows while refuse is set, as a store whose disk fails.
type refusingStore struct {
	store.Store
	refuse atomic.Bool
}

func (s *refusingStore) Apply(ctx context.Context, id int64, fn func(context.Context, store.Tx) error) error {
	if s.refuse.Load() {
		return errors.New("disk I/O error (injected)")
	}
	return s.Store.Apply(ctx, id, fn)
}

func (s *refusingStore) ApplyGroup(ctx context.Context, ids []int64, fn func(context.Context, store.Tx, []int64) error) error {
	if s.refuse.Load() {
		return errors.New("disk I/O error (injected)")
	}
	return s.Store.ApplyGroup(ctx, ids, fn)
}

// TestInboxListAndReplay: a live message that serve cannot apply fails its attempt and its
// retry and is marked failed; `scribehook inbox list`, run beside the running serve, shows it
// (table and JSON), `inbox replay --dry-run` changes nothing, a bare replay is refused, and
// once the store is fixed `inbox replay ID` moves it back: the running serve (told of nothing,
// another process did it) applies it within a few seconds, once.
func TestInboxListAndReplay(t *testing.T) {
	dir, db := tempDB(t)
	st := &refusingStore{Store: teststore.OpenSQLite(t, sqlite.Config{Path: db})}
	st.refuse.Store(true)
	srv := serveOn(t, st, "", serverOptions{Routes: []receiver.Route{{Name: "load", Token: backupRouteToken}},
		Logger: logx.Discard(), InboxRetry: []time.Duration{10 * time.Millisecond}})
	defer srv.stop(t)
	const session = "1b0c5000-0000-4000-8000-00000000000a"
	if status, _, err := postCallback("http://"+srv.addr+"/v1/callbacks/"+backupRouteToken, liveTranscript(session, 1)); err != nil || status != "stored" {
		t.Fatalf("callback: %q, %v", status, err)
	}
	testwait.For(t, "the delivery failed for good", 30*time.Second, func() bool {
		n, err := st.CountFailedInbox(t.Context())
		return err == nil && n == 1
	})
	cfg := writeSQLiteConfig(t, dir, db)
	run := func(args ...string) (string, error) {
		t.Helper()
		out, _, err := runCmd(t.Context(), nil, append(args, "--config", cfg)...)
		return out, err
	}

	out, err := run("inbox", "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID  JOB") || !strings.Contains(lines[1], session) ||
		!strings.Contains(lines[1], "live.message  live.transcript  2 ") || !strings.HasSuffix(lines[1], "disk I/O error (injected)") {
		t.Errorf("inbox list printed:\n%s", out)
	}
	id := strings.Fields(lines[1])[0]
	for _, args := range [][]string{{"inbox", "list", "--job", session, "--json"}, {"inbox", "list", "--kind", "live.message", "-o", "json"}} {
		out, err := run(args...)
		var views []receiver.FailedView
		if err != nil || json.Unmarshal([]byte(out), &views) != nil || len(views) != 1 || strconv.FormatInt(views[0].ID, 10) != id ||
			views[0].JobID != session || views[0].Attempts != 2 || views[0].LastError != "disk I/O error (injected)" || views[0].FailedAt.IsZero() {
			t.Errorf("%v printed %q, %v", args, out, err)
		}
	}
	for _, args := range [][]string{{"inbox", "list", "--job", "no-such-job", "--json"}, {"inbox", "list", "--since", "1m", "--until", "2m", "--json"}} {
		if out, err := run(args...); err != nil || strings.TrimSpace(out) != "[]" {
			t.Errorf("%v printed %q, %v; want []", args, out, err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inbox", "replay"}, "give failed delivery ids, or --job, --kind, --since, --until or --error, or --all to replay every failed delivery"},
		{[]string{"inbox", "replay", "x1"}, `failed delivery id "x1" is not a positive integer`},
		{[]string{"inbox", "list", "--kind", "job.other"}, "--kind must be one of job.success, job.error, live.message, account.webhook"},
		{[]string{"inbox", "list", "--since", "yesterday"}, "--since: "},
	} {
		if _, err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	out, err = run("inbox", "replay", "--dry-run", "--job", session)
	if err != nil || !strings.Contains(out, "1 failed deliveries would be replayed (dry run: nothing changed)") {
		t.Errorf("dry run: %q, %v", out, err)
	}
	if n, err := st.CountFailedInbox(t.Context()); err != nil || n != 1 {
		t.Fatalf("after the dry run %d failed, %v; want 1", n, err)
	}

	st.refuse.Store(false) // the cause, fixed
	out, err = run("inbox", "replay", id)
	if err != nil || out != "1 failed deliveries replayed (ids "+id+"): a running serve applies them within a few seconds\n" {
		t.Fatalf("replay: %q, %v", out, err)
	}
	testwait.For(t, "the running serve to apply the replayed delivery", 10*time.Second, func() bool {
		n, err := st.InboxBacklog(t.Context())
		return err == nil && n == 0
	})
	msgs, err := st.LiveMessages(t.Context(), session, 0, 0)
	if err != nil || len(msgs) != 1 || strconv.FormatInt(msgs[0].InboxID, 10) != id {
		t.Errorf("session after the replay: %v, %d messages; want 1, from row %s", err, len(msgs), id)
	}
	var none struct {
		IDs      []int64 `json:"ids"`
		Replayed *int    `json:"replayed"`
	}
	if out, err := run("inbox", "replay", "--all", "--json"); err != nil || json.Unmarshal([]byte(out), &none) != nil ||
		none.IDs == nil || len(none.IDs) != 0 || none.Replayed == nil || *none.Replayed != 0 {
		t.Errorf("replay --all with nothing failed: %q, %v", out, err)
	}
	time.Sleep(500 * time.Millisecond) // nothing may apply it twice: watch a while
	if msgs, _ := st.LiveMessages(t.Context(), session, 0, 0); len(msgs) != 1 {
		t.Errorf("%d messages after the replay, want 1", len(msgs))
	}
}
