package retention_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	scribehook "github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/retention"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// A week of traffic, compressed on a fake clock: every simulated hour a pre-recorded job's
// callback (with subtitles rendered), a live session of 18 messages and one delivery that cannot
// be classified, all over HTTP into a real serve on SQLite on disk. The same week runs twice,
// once with the kit's pruner run every six simulated hours and once without.

const (
	partials, finals, acks = 6, 2, 2
	weekHours              = 7 * 24
	pruneEvery             = 6 // simulated hours
	weekToken              = "week-route-token"
)

// The live session of one hour: start, partials, finals, acknowledgments, end.
var sessionShape = []struct {
	typ api.MessageType
	n   int
}{
	{api.MessageStartSession, 1}, {api.MessageTranscript, partials}, {api.MessageTranscript, finals}, {api.MessageAudioChunk, acks},
	{api.MessageEndSession, 1},
}

// weekTokenTTL is the week's receiver.token_ttl: no longer than the jobs are kept.
const weekTokenTTL = 3 * 24 * time.Hour

// weekRetention: everything finite, jobs outliving every live category and every token.
func weekRetention() configs.RetentionConfig {
	r := configs.DefaultRetention()
	r.Interval = 0 // the test runs the kit's pruner itself, on the fake clock
	r.BatchSize = 200
	r.Inbox, r.Jobs, r.SinkDelivered, r.Quarantine = configs.Days(1), configs.Days(3), configs.Keep(12*time.Hour), configs.Days(1)
	r.Live = configs.LiveRetention{
		PartialTranscripts: configs.Keep(6 * time.Hour), Acknowledgments: configs.Keep(6 * time.Hour),
		FinalTranscripts: configs.Days(2), SpeechEvents: configs.Days(1), PreProcessingEvents: configs.Days(1),
		RealtimeProcessingEvents: configs.Days(1), PostProcessingEvents: configs.Days(1), Errors: configs.Days(1),
		LifecycleEvents: configs.Days(1),
	}
	return r
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// recorder is a Go sink that counts the events it delivers; while hold is open it does not
// deliver (a sink that is down), and nothing it was given is delivered.
type recorder struct {
	name string
	hold chan struct{}
	mu   sync.Mutex
	got  map[string]int
}

func newRecorder(name string, held bool) *recorder {
	r := &recorder{name: name, got: map[string]int{}}
	if held {
		r.hold = make(chan struct{})
	}
	return r
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Close() error { return nil }

func (r *recorder) Deliver(ctx context.Context, ev api.Event) error {
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	r.got[ev.ID]++
	r.mu.Unlock()
	return nil
}

func (r *recorder) delivered() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.got)
}

// week is one run of the week on its own database.
type week struct {
	t       *testing.T
	clock   *fakeClock
	dir     string
	dbPath  string
	st      *sqlite.Store
	kit     *scribehook.Kit
	url     string
	result  json.RawMessage
	archive *recorder // every event, always up
	stuck   *recorder // the first job's events, down all week
	sizes   []int64   // database file size after each day
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetLevel(logrus.ErrorLevel)
	return logrus.NewEntry(l)
}

func newWeek(t *testing.T, name string) *week {
	var job struct {
		Result json.RawMessage `json:"result"`
	}
	testjson.FullJob(t, &job)
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &week{t: t, clock: &fakeClock{t: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}, dir: dir,
		dbPath: filepath.Join(dir, "scribehook.db"), result: job.Result}
	w.st = teststore.OpenSQLite(t, sqlite.Config{Path: w.dbPath, Synchronous: sqlite.SynchronousNormal, Now: w.clock.Now})
	w.start(true)
	return w
}

// start runs a kit on the week's store; stuckHeld keeps the stuck sink down.
func (w *week) start(stuckHeld bool) {
	t := w.t
	cfg := configs.Default()
	cfg.Store.DSN = w.dbPath
	cfg.Subtitles.Dir = filepath.Join(w.dir, "artifacts")
	cfg.Subtitles.Formats = []string{"srt", "vtt"}
	cfg.Routes = []configs.Route{{Name: "week", TokenEnv: "SCRIBEHOOK_WEEK_UNUSED"}}
	cfg.Retention = weekRetention()
	cfg.Receiver.TokenTTL = weekTokenTTL
	fast := []time.Duration{0, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}
	if w.archive == nil {
		w.archive = newRecorder("archive", false)
	}
	w.stuck = newRecorder("stuck", stuckHeld)
	k, err := scribehook.New(context.Background(), cfg, scribehook.WithLogger(quietLog()), scribehook.WithStore(w.st),
		scribehook.WithClock(w.clock.Now),
		scribehook.WithSecrets(configs.Secrets{Routes: map[string]configs.RouteSecrets{"week": {Token: weekToken}}}),
		scribehook.WithSink(sinks.Spec{Name: "archive", Kind: "go", Filter: sinks.Filter{Events: []string{"*"}}, Retry: fast}, w.archive),
		scribehook.WithSink(sinks.Spec{Name: "stuck", Kind: "go", Concurrency: 1, BreakerThreshold: 1 << 20,
			Filter: sinks.Filter{Events: []string{"*"}, CustomMetadata: json.RawMessage(`{"sink":"stuck"}`)},
			Retry:  append(fast, fast...)}, w.stuck))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.Serve(ln) }()
	w.kit, w.url = k, "http://"+ln.Addr().String()+"/v1/callbacks/"+weekToken
}

func (w *week) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.kit.Shutdown(ctx); err != nil {
		w.t.Fatalf("shutdown: %v", err)
	}
}

func (w *week) post(body []byte) {
	w.t.Helper()
	resp, err := http.Post(w.url, "application/json", bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		w.t.Fatalf("callback answered %d", resp.StatusCode)
	}
}

// hour sends hour h's traffic, all received at the hour's start, and waits until it is applied
// and delivered to the archive, so that every time the store stamps is the hour's.
func (w *week) hour(h int) {
	t := w.t
	at := w.clock.Now()
	callback := map[string]any{"id": fmt.Sprintf("job-%03d", h), "event": api.EventTranscriptionSuccess, "payload": w.result}
	if h == 0 {
		callback["custom_metadata"] = map[string]any{"sink": "stuck"}
	}
	w.post(testjson.Marshal(t, callback))
	session, seq := fmt.Sprintf("sess-%03d", h), 0
	for _, part := range sessionShape {
		for range part.n {
			seq++
			msg := map[string]any{"type": part.typ, "session_id": session, "created_at": api.NewTime(at.Add(time.Duration(seq) * time.Second)),
				"data": map[string]any{"n": seq, "is_final": seq > 1+partials, "text": fmt.Sprintf("words of message %d of the hour", seq)}}
			w.post(testjson.Marshal(t, map[string]any{"id": session, "event": "live." + string(part.typ), "payload": msg}))
		}
	}
	w.post([]byte(fmt.Sprintf("not JSON, hour %d", h)))
	w.settle()
}

// settle waits until no inbox row is pending and the archive has nothing queued.
func (w *week) settle() { w.drain("archive", true) }

// drain waits until sink has nothing queued and, with inbox, no inbox row is pending.
func (w *week) drain(sink string, inbox bool) {
	t := w.t
	deadline := time.Now().Add(20 * time.Second)
	for {
		var backlog int64
		if inbox {
			var err error
			if backlog, err = w.st.InboxBacklog(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		depth, err := w.st.SinkDepth(context.Background(), sink)
		if err != nil {
			t.Fatal(err)
		}
		if backlog == 0 && depth == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("at %s: %d rows pending, %d %s deliveries queued", w.clock.Now(), backlog, depth, sink)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// run sends the week; with prune, the kit's pruner runs every pruneEvery hours.
func (w *week) run(prune bool) {
	start := w.clock.Now()
	for h := range weekHours {
		w.clock.Set(start.Add(time.Duration(h) * time.Hour))
		w.hour(h)
		end := start.Add(time.Duration(h+1) * time.Hour)
		if prune && (h+1)%pruneEvery == 0 {
			w.clock.Set(end)
			if _, err := w.kit.Pruner().Prune(context.Background(), false); err != nil {
				w.t.Fatalf("prune at hour %d: %v", h+1, err)
			}
		}
		if (h+1)%24 == 0 {
			w.sizes = append(w.sizes, w.size())
		}
	}
	w.clock.Set(start.Add(weekHours * time.Hour))
}

// size is the database file's size once its WAL is checkpointed into it (the WAL file keeps
// its largest size; what is measured is what the database holds).
func (w *week) size() int64 {
	t := w.t
	db, err := sql.Open("sqlite3", w.dbPath+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The kit keeps running: a read of its dispatcher or pipeline that holds a snapshot at this
	// moment makes the checkpoint busy (seen under load), and the next try completes it.
	var busy, log, done int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done)
		if err != nil || (busy != 0 && time.Now().After(deadline)) {
			t.Fatalf("checkpoint: busy %d, %v", busy, err)
		}
		if busy == 0 {
			break
		}
	}
	fi, err := os.Stat(w.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestWeekOfTrafficStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a week of traffic, twice")
	}
	ctx := context.Background()
	kept := newWeek(t, "kept")
	kept.run(false)
	kept.stop()
	w := newWeek(t, "pruned")
	w.run(true)

	// Every run deleted rows the last run's cutoffs would have taken too, so the counts are
	// those of the hours older than each duration at the last run, at hour 168 (rows are
	// stamped with their hour's start, and a cutoff keeps a row stamped at it).
	older := func(keep time.Duration) int64 { return int64(weekHours - keep/time.Hour) }
	arts, err := w.st.Artifacts(ctx, fmt.Sprintf("job-%03d", weekHours-1))
	if err != nil || len(arts) == 0 {
		t.Fatalf("artifacts of the last job: %v, %v", arts, err)
	}
	all := int64(len(w.archive.delivered()))
	if all%weekHours != 0 {
		t.Fatalf("the archive got %d events, not the same every hour", all)
	}
	events := all / weekHours
	// An inbox row holding a live message stays while the message does: it goes at the first
	// run after its message went (a run prunes the inbox before the messages), if the inbox's
	// own day has passed by then.
	freed := func(message time.Duration) int64 {
		return min(older(24*time.Hour), older(message+pruneEvery*time.Hour))
	}
	want := map[store.PruneKind]int64{
		store.PruneInbox: older(24*time.Hour) + // the job's callback
			freed(6*time.Hour)*(partials+acks) + freed(48*time.Hour)*finals +
			freed(24*time.Hour) + // start_session
			freed(72*time.Hour), // end_session, with its record
		store.LiveKind(api.CategoryPartialTranscripts): older(6*time.Hour) * partials,
		store.LiveKind(api.CategoryFinalTranscripts):   older(48*time.Hour) * finals,
		store.LiveKind(api.CategoryAcknowledgments):    older(6*time.Hour) * acks,
		// start_session; end_session, the session's last message, goes with its record
		store.LiveKind(api.CategoryLifecycleEvents): older(24 * time.Hour),
		store.PruneJobs:          older(72*time.Hour) * 2, // the job and the session
		store.PruneArtifacts:     older(72*time.Hour) * int64(len(arts)),
		store.PruneSessionRest:   older(72 * time.Hour), // end_session
		store.PruneSinkDelivered: older(12*time.Hour) * events,
		store.PruneQuarantine:    older(24 * time.Hour),
	}
	// An event goes with its archive delivery, unless the stuck sink's still refers to it (the
	// first job's, all older than any cutoff).
	stuckQueued, err := w.st.SinkDepth(ctx, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	stuckDead, err := w.st.DeadLetters(ctx, "stuck", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want[store.PruneEvents] = older(12*time.Hour)*events - stuckQueued - int64(len(stuckDead))
	for _, kind := range store.PruneKinds() {
		if got := testmetrics.Value(t, w.kit.Metrics(), "scribehook_pruned_rows_total", "kind", string(kind)); got != float64(want[kind]) {
			t.Errorf("pruned %s: %v rows, want %d", kind, got, want[kind])
		}
	}
	if _, err := os.Stat(filepath.Dir(arts[0].Path)); err != nil {
		t.Errorf("the last job's subtitles: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "artifacts", "job-000")); !os.IsNotExist(err) {
		t.Errorf("the first job's subtitles are still there (%v)", err)
	}

	// Nothing at work is lost. The first job's events have waited all week for the stuck sink,
	// and its record is gone; deliveries committed but not applied when serve stopped, received
	// long ago, wait too. A prune while serve is stopped leaves them, and the next serve applies
	// and delivers them.
	w.stop()
	if _, err := w.st.GetJob(ctx, "job-000"); err == nil {
		t.Error("job-000 was not pruned")
	}
	stuck, err := w.st.SinkDepth(ctx, "stuck")
	if err != nil || stuck == 0 {
		t.Fatalf("stuck sink queue: %d, %v", stuck, err)
	}
	var late []store.Delivery
	for i := range 3 {
		id := fmt.Sprintf("job-late-%d", i)
		late = append(late, store.Delivery{DedupeKey: "job:" + id + ":transcription.success", Route: "week", Kind: api.CallbackJobSuccess,
			Event: string(api.EventTranscriptionSuccess), JobID: id, PartitionKey: id, ReceivedAt: w.clock.Now().Add(-30 * 24 * time.Hour),
			Body: testjson.Marshal(t, map[string]any{"id": id, "event": api.EventTranscriptionSuccess, "payload": w.result})})
	}
	if _, err := w.st.Ingest(ctx, late); err != nil {
		t.Fatal(err)
	}
	w.clock.Set(w.clock.Now().Add(30 * 24 * time.Hour))
	p, err := retention.New(retention.Config{Store: w.st, Policy: retention.PolicyOf(weekRetention(), weekTokenTTL), Now: w.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Prune(ctx, false)
	if err != nil || rep.Rows[store.PruneJobs] == 0 {
		t.Fatalf("prune a month later: %v, %v", rep.Rows, err)
	}
	if n, err := w.st.InboxBacklog(ctx); err != nil || n != int64(len(late)) {
		t.Fatalf("pending rows after the prune: %d, %v", n, err)
	}
	if n, err := w.st.SinkDepth(ctx, "stuck"); err != nil || n != stuck {
		t.Fatalf("stuck queue after the prune: %d, %v; want %d", n, err, stuck)
	}
	w.start(false)
	w.settle()
	w.drain("stuck", false)
	for _, d := range late {
		if rec, err := w.st.GetJob(ctx, d.JobID); err != nil || rec.Job.Status != api.StatusDone {
			t.Errorf("late delivery of %s: %q, %v", d.JobID, rec.Job.Status, err)
		}
	}
	got := w.stuck.delivered()
	for id, n := range got {
		if n != 1 {
			t.Errorf("stuck sink got %s %d times", id, n)
		}
	}
	if int64(len(got)) != stuck {
		t.Errorf("stuck sink delivered %d events once up, want the %d queued all week", len(got), stuck)
	}
	w.stop()

	// Space: after a week the pruned database is at most a third of the one that kept everything
	// (a fifth, measured), and
	// past the longest retention (three days) it stops growing.
	t.Logf("database size at the end of each day: kept %v, pruned %v", kept.sizes, w.sizes)
	if len(w.sizes) != 7 || len(kept.sizes) != 7 {
		t.Fatalf("sizes %v %v", w.sizes, kept.sizes)
	}
	if w.sizes[6] > kept.sizes[6]/3 {
		t.Errorf("after a week the pruned database is %d bytes, the kept one %d: want at most a third", w.sizes[6], kept.sizes[6])
	}
	for d := 4; d < 7; d++ {
		if w.sizes[d] > w.sizes[3]*105/100 {
			t.Errorf("day %d: %d bytes, more than 5%% over day 4's %d: the database keeps growing", d+1, w.sizes[d], w.sizes[3])
		}
	}
}
