package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/internal/testwait"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// envChildArgs makes the test binary run the root command with these arguments (separated by
// newlines) and exit: a command in a process of its own, as an operator runs it beside serve.
const envChildArgs = "SCRIBEHOOK_CMD_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(envChildArgs); args != "" {
		cmd := newRootCmd()
		cmd.SetArgs(strings.Split(args, "\n"))
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild runs the root command with args in a child process and returns its stdout and
// stderr.
func runChild(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe)
	cmd.Env = append(os.Environ(), envChildArgs+"="+strings.Join(args, "\n"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

const backupRouteToken = "backup-route-token-0123456789abcdef"

// callbackLoad posts distinct live transcripts of one session per client to a static route,
// without pause, and records the deliveries answered "stored".
type callbackLoad struct {
	t    *testing.T
	url  string
	stop chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	acks []ackedDelivery
}

type ackedDelivery struct {
	id   int64
	body []byte
}

// liveTranscript is the callback of a session's n-th final transcript: each (session, n) is a
// new delivery.
func liveTranscript(session string, n int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"event":"live.transcript","payload":{"session_id":%q,`+
		`"created_at":"2026-11-24T10:00:00.%03dZ","type":"transcript","data":{"id":"u%d","is_final":true,`+
		`"utterance":{"start":%d,"end":%d.5,"text":"word %d","words":[]}}}}`, session, session, n%1000, n, n, n, n)
}

// errNotAcked is postCallback's error for an answer other than a 200 ack.
var errNotAcked = errors.New("callback not acknowledged")

// postCallback sends body to url and returns the receiver's ack: its status ("stored",
// "duplicate") and inbox row id; an error for a failed request, wrapping errNotAcked for an
// answer other than a 200 ack.
func postCallback(url string, body []byte) (string, int64, error) {
	code, raw, err := send(http.MethodPost, url, http.Header{"Content-Type": {"application/json"}}, body)
	if err != nil {
		return "", 0, err
	}
	var a struct {
		Status string `json:"status"`
		ID     int64  `json:"id"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &a) != nil {
		return "", 0, fmt.Errorf("%w: %d %s", errNotAcked, code, raw)
	}
	return a.Status, a.ID, nil
}

func (l *callbackLoad) client(session string) {
	l.wg.Go(func() {
		for n := 1; ; n++ {
			select {
			case <-l.stop:
				return
			default:
			}
			body := liveTranscript(session, n)
			status, id, err := postCallback(l.url, body)
			if errors.Is(err, errNotAcked) || err == nil && status != "stored" {
				l.t.Errorf("delivery %s #%d: %q, %v; want stored (each body is new)", session, n, status, err)
				return
			}
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			l.mu.Lock()
			l.acks = append(l.acks, ackedDelivery{id: id, body: body})
			l.mu.Unlock()
		}
	})
}

func (l *callbackLoad) acked() []ackedDelivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackedDelivery(nil), l.acks...)
}

// TestBackupDuringLoadRestores: `scribehook backup`, run in a process of its own while serve
// ingests a steady load of callbacks, writes a copy from which a fresh serve processes every
// delivery acknowledged before the backup started, each exactly once: one inbox row applied
// once, one live message, one event in the sink's queue, delivered, nothing twice.
func TestBackupDuringLoadRestores(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	st := teststore.OpenSQLite(t, sqlite.Config{Path: live})
	route := []receiver.Route{{Name: "load", Token: backupRouteToken}}
	srv := serveOn(t, st, "", serverOptions{Routes: route, Logger: logx.Discard(),
		Sinks: []sinkSetup{fileSink(t, filepath.Join(dir, "out"))}})
	load := &callbackLoad{t: t, url: "http://" + srv.addr + "/v1/callbacks/" + backupRouteToken, stop: make(chan struct{})}
	sessions := []string{"5e55a000-0000-4000-8000-00000000000a", "5e55b000-0000-4000-8000-00000000000b",
		"5e55c000-0000-4000-8000-00000000000c"}
	for _, s := range sessions {
		load.client(s)
	}
	testwait.For(t, "200 deliveries acknowledged", 30*time.Second, func() bool { return len(load.acked()) >= 200 || t.Failed() })
	before := load.acked()
	cfg := writeSQLiteConfig(t, dir, live)
	copyPath := filepath.Join(dir, "backup.db")
	out, errOut, err := runChild(t, "backup", "--config", cfg, "--out", copyPath)
	during := len(load.acked()) - len(before)
	close(load.stop)
	load.wg.Wait()
	srv.stop(t)
	if err != nil {
		t.Fatalf("scribehook backup: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "backup of "+live+" written to "+copyPath) || !strings.Contains(out, "integrity ok") {
		t.Errorf("backup printed %q", out)
	}
	if during == 0 {
		t.Error("no delivery was acknowledged while the backup command ran: serve's ingest was blocked, or the test proves nothing")
	}
	inCopy := sqliteCounter(t, copyPath)
	t.Logf("%d deliveries acknowledged before the backup, %d during it; the copy holds %d inbox rows, %d pending, %d events queued",
		len(before), during, inCopy(`SELECT count(*) FROM inbox`), inCopy(`SELECT count(*) FROM inbox WHERE status = 'pending'`),
		inCopy(`SELECT count(*) FROM sink_deliveries WHERE status = 'queued'`))

	// The restore: the copy as the database of a fresh serve, which processes what the copy
	// holds pending and delivers what it holds queued.
	restored := filepath.Join(t.TempDir(), "scribehook.db")
	writeFile(t, restored, readFile(t, copyPath))
	st2 := teststore.OpenSQLite(t, sqlite.Config{Path: restored})
	srv2 := serveOn(t, st2, "", serverOptions{Routes: route, Logger: logx.Discard(),
		Sinks: []sinkSetup{fileSink(t, filepath.Join(dir, "out-restored"))}})
	testwait.For(t, "the restored serve to process and deliver everything", 30*time.Second, func() bool {
		backlog, err1 := st2.InboxBacklog(t.Context())
		depth, err2 := st2.SinkDepth(t.Context(), "files")
		return err1 == nil && err2 == nil && backlog == 0 && depth == 0
	})
	for _, a := range before {
		row, err := st2.InboxRow(t.Context(), a.id)
		switch {
		case err != nil:
			t.Errorf("delivery %d, acknowledged before the backup, is not in the restored store: %v", a.id, err)
		case !bytes.Equal(row.Body, a.body):
			t.Errorf("restored inbox row %d holds %s, want %s", a.id, row.Body, a.body)
		case row.Status != store.InboxDone || row.Attempts != 1:
			t.Errorf("restored inbox row %d is %s after %d attempts, want done after 1", a.id, row.Status, row.Attempts)
		}
	}
	srv2.stop(t)
	checkAppliedOnce(t, restored, before)
}

// checkAppliedOnce reads the database at path: each inbox row gave one live message and one
// event queued once and delivered, and each session's messages are numbered without a gap.
func checkAppliedOnce(t *testing.T, path string, acked []ackedDelivery) {
	t.Helper()
	count := sqliteCounter(t, path)
	for _, a := range acked {
		if n := count(`SELECT count(*) FROM live_messages WHERE inbox_id = ?`, a.id); n != 1 {
			t.Errorf("inbox row %d gave %d live messages, want 1", a.id, n)
		}
	}
	inbox := count(`SELECT count(*) FROM inbox`)
	if n := count(`SELECT count(*) FROM live_messages`); n != inbox {
		t.Errorf("%d live messages for %d inbox rows", n, inbox)
	}
	if n := count(`SELECT count(*) FROM (SELECT session_id FROM live_messages GROUP BY session_id HAVING max(seq) != count(*))`); n != 0 {
		t.Errorf("%d sessions have gaps or repeats in their sequence numbers", n)
	}
	if n := count(`SELECT count(*) FROM sink_deliveries WHERE sink = 'files' AND status = 'delivered'`); n != inbox {
		t.Errorf("%d events delivered to the sink for %d inbox rows, want one each", n, inbox)
	}
	if n := count(`SELECT count(*) FROM sink_deliveries`); n != inbox {
		t.Errorf("%d sink queue rows for %d inbox rows", n, inbox)
	}
}

// sqliteCounter reads counts from the SQLite database at path, read-only.
func sqliteCounter(t *testing.T, path string) func(query string, args ...any) int {
	t.Helper()
	db := openSQLiteRO(t, path)
	return func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(t.Context(), query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
}

func TestBackupRefuses(t *testing.T) {
	dir := t.TempDir()
	pg := filepath.Join(dir, "pg.yaml")
	writeFile(t, pg, []byte("store: {driver: postgres, dsn: \"postgres://u@127.0.0.1:1/db\"}\n"))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no --out", []string{"backup", "--config", pg}, "--out is required"},
		{"postgres", []string{"backup", "--config", pg, "--out", filepath.Join(dir, "b.db")}, "store.driver postgres: scribehook backup copies SQLite stores only; back a PostgreSQL store up with pg_dump"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := runCmd(t.Context(), nil, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
