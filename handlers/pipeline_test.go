package handlers_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// checkSession asserts that a session's stored messages are exactly want in inbox-id order,
// numbered 1..n, with their payloads and categories.
func checkSession(t *testing.T, s store.Store, session string, want []live, ids map[string]int64) {
	t.Helper()
	want = slices.Clone(want)
	slices.SortFunc(want, func(a, b live) int { return cmp.Compare(ids[a.Delivery.DedupeKey], ids[b.Delivery.DedupeKey]) })
	got := liveMessages(t, s, session)
	if len(got) != len(want) {
		t.Fatalf("session %s: %d messages stored, want %d", session, len(got), len(want))
	}
	for i, m := range got {
		w := want[i]
		id := ids[w.Delivery.DedupeKey]
		if m.Seq != int64(i+1) || m.InboxID != id || m.SessionID != session {
			t.Fatalf("session %s message %d: seq %d inbox %d session %q, want seq %d inbox %d (message n=%d)",
				session, i, m.Seq, m.InboxID, m.SessionID, i+1, id, w.N)
		}
		if !bytes.Equal(m.Payload, w.Payload) {
			t.Fatalf("session %s seq %d: payload %s, want %s", session, m.Seq, m.Payload, w.Payload)
		}
		if m.Type != w.Type || m.Category != w.Category {
			t.Fatalf("session %s seq %d: %s/%s, want %s/%s", session, m.Seq, m.Type, m.Category, w.Type, w.Category)
		}
		if !m.CreatedAt.Equal(baseTime.Add(time.Duration(w.N) * time.Millisecond)) {
			t.Fatalf("session %s seq %d: created_at %v", session, m.Seq, m.CreatedAt)
		}
	}
}

// liveWorkload ingests sessions×perSession varied messages, interleaved in small batches from
// several goroutines, notifying the pipeline of each batch's rows in a shuffled order (the
// receiver's requests that shared a group commit notify from their own goroutines). It
// returns the messages by session and the row id of each dedupe key.
func liveWorkload(t *testing.T, s store.Store, p *handlers.Pipeline, sessions []string, perSession int, seed uint64) (map[string][]live, map[string]int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	bySession := map[string][]live{}
	next := map[string]int{}
	for _, sid := range sessions {
		for n := range perSession {
			l := variedLive(sid, n)
			if n%7 == 3 {
				// Rows without a category (older receivers) take api.Category's.
				l.Delivery.Category = ""
			}
			bySession[sid] = append(bySession[sid], l)
		}
	}
	// Batches draw the next message of random sessions, so sessions interleave.
	var batches [][]store.Delivery
	left := len(sessions) * perSession
	for left > 0 {
		size := 1 + rng.IntN(6)
		var b []store.Delivery
		for len(b) < size && left > 0 {
			sid := sessions[rng.IntN(len(sessions))]
			if next[sid] == perSession {
				continue
			}
			b = append(b, bySession[sid][next[sid]].Delivery)
			next[sid]++
			left--
		}
		batches = append(batches, b)
	}
	work := make(chan []store.Delivery)
	var (
		mu  sync.Mutex
		ids = map[string]int64{}
		wg  sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			wr := rand.New(rand.NewPCG(seed, uint64(w)))
			for b := range work {
				res, err := s.Ingest(context.Background(), b)
				if err != nil {
					t.Errorf("ingest: %v", err)
					return
				}
				mu.Lock()
				for i, r := range res {
					ids[b[i].DedupeKey] = r.ID
				}
				mu.Unlock()
				for _, i := range wr.Perm(len(res)) {
					p.Committed(res[i].ID, b[i].PartitionKey)
				}
			}
		})
	}
	for _, b := range batches {
		work <- b
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return bySession, ids
}

func waitBacklogEmpty(t *testing.T, s store.Store) {
	t.Helper()
	var n int64
	waitFor(t, func() string { return fmt.Sprintf("%d rows still pending", n) }, func() bool {
		var err error
		n, err = s.InboxBacklog(context.Background())
		if err != nil {
			t.Fatalf("backlog: %v", err)
		}
		return n == 0
	})
}

// Messages of six sessions ingested concurrently are stored per session exactly in inbox
// order, each once, with their categories, and every row ends done.
func TestLiveOrderPerSessionUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, r := startOn(t, handlers.Config{Partitions: 3})
	sessions := []string{"sess-a", "sess-b", "sess-c", "sess-d", "sess-e", "sess-f"}
	bySession, ids := liveWorkload(t, s, r.p, sessions, 150, 1)
	if len(ids) != 900 {
		t.Fatalf("%d rows ingested, want 900", len(ids))
	}
	waitBacklogEmpty(t, s)
	for _, sid := range sessions {
		checkSession(t, s, sid, bySession[sid], ids)
		rec := getJob(t, s, sid)
		if rec.Local.Deliveries != 150 || rec.Job.Kind != api.KindLive || rec.Job.Status != api.StatusProcessing {
			t.Errorf("record %s: deliveries %d kind %s status %s", sid, rec.Local.Deliveries, rec.Job.Kind, rec.Job.Status)
		}
	}
	for key, id := range ids {
		if row := inboxRow(t, s, id); row.Status != store.InboxDone || row.Attempts != 1 || row.LastError != "" {
			t.Errorf("row %d (%s): status %s attempts %d error %q", id, key, row.Status, row.Attempts, row.LastError)
		}
	}
}

// Notifications can arrive out of commit order (the requests of one group commit notify from
// their own goroutines): a session's later row notified first must still wait for the earlier.
func TestLateNotificationKeepsInboxOrder(t *testing.T) {
	t.Parallel()
	s, r := startOn(t, handlers.Config{Partitions: 2})
	for round := range 20 {
		sid := fmt.Sprintf("late-%d", round)
		a, b, c := newLive(sid, 0, api.MessageSpeechStart, nil), newLive(sid, 1, api.MessageTranscript, nil), newLive(sid, 2, api.MessageSpeechEnd, nil)
		ids := ingest(t, s, nil, a.Delivery, b.Delivery, c.Delivery)
		r.p.Committed(ids[2], sid)
		r.p.Committed(ids[0], sid)
		r.p.Committed(ids[1], sid)
		waitStatus(t, s, store.InboxDone, ids...)
		checkSession(t, s, sid, []live{a, b, c}, map[string]int64{
			a.Delivery.DedupeKey: ids[0], b.Delivery.DedupeKey: ids[1], c.Delivery.DedupeKey: ids[2],
		})
	}
}

// No more rows are applied at once than there are partitions.
func TestApplyConcurrencyBoundedByPartitions(t *testing.T) {
	t.Parallel()
	const partitions = 3
	cs := newCountingStore(teststore.SQLite(t))
	// Each Apply lasts a little, so that rows of several partitions overlap.
	cs.hold = func(ctx context.Context, _ int64) error {
		select {
		case <-time.After(time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r := start(t, handlers.Config{Store: cs, Partitions: partitions})
	var sessions []string
	for i := range 12 {
		sessions = append(sessions, fmt.Sprintf("bound-%d", i))
	}
	bySession, ids := liveWorkload(t, cs, r.p, sessions, 25, 2)
	waitBacklogEmpty(t, cs)
	if m := cs.max.Load(); m > partitions {
		t.Errorf("%d Apply calls ran at once, want at most %d", m, partitions)
	} else if m < 2 {
		t.Errorf("at most %d Apply call ran at once: the partitions did not run in parallel", m)
	}
	for _, sid := range sessions {
		checkSession(t, cs, sid, bySession[sid], ids)
	}
}

// A row notified twice, notifications racing the startup scan and the sweep, and a duplicate
// delivery: every delivery is applied once and counted once.
func TestExactlyOnce(t *testing.T) {
	t.Parallel()
	cs := newCountingStore(teststore.SQLite(t))
	var ds []store.Delivery
	var msgs []live
	for n := range 60 {
		for _, sid := range []string{"once-x", "once-y"} {
			l := variedLive(sid, n)
			msgs = append(msgs, l)
			ds = append(ds, l.Delivery)
		}
	}
	job := jobSuccess("job-once", sampleResult("hello"), "")
	ds = append(ds, job)
	// Committed before the pipeline runs: the startup scan finds the rows too.
	ids := ingest(t, cs, nil, ds...)
	p, err := handlers.New(handlers.Config{Store: cs, Partitions: 2, SweepInterval: time.Millisecond, Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		p.Committed(id, ds[i].PartitionKey)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		_ = p.Close()
		cancel()
		<-done
	})
	// Notifications race the startup scan and the sweeps, each row twice, from two goroutines.
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for k := range ids {
				i := k
				if g == 1 {
					i = len(ids) - 1 - k
				}
				p.Committed(ids[i], ds[i].PartitionKey)
				p.Committed(ids[i], ds[i].PartitionKey)
			}
		})
	}
	// The service resends one delivery: a duplicate, committed nowhere.
	res, err := cs.Ingest(context.Background(), []store.Delivery{job, msgs[0].Delivery})
	if err != nil || !res[0].Duplicate || !res[1].Duplicate || res[0].ID != ids[len(ids)-1] || res[1].ID != ids[0] {
		t.Fatalf("re-ingest: %+v, %v", res, err)
	}
	wg.Wait()
	waitStatus(t, cs, store.InboxDone, ids...)
	// Late notifications again, then a marker of each session behind them.
	for i, id := range ids {
		p.Committed(id, ds[i].PartitionKey)
	}
	mx, my := newLive("once-x", 1000, api.MessageSpeechEnd, nil), newLive("once-y", 1000, api.MessageSpeechEnd, nil)
	markers := ingest(t, cs, p, mx.Delivery, my.Delivery)
	waitStatus(t, cs, store.InboxDone, markers...)

	idOf := idsOf(ds, ids)
	idOf[mx.Delivery.DedupeKey], idOf[my.Delivery.DedupeKey] = markers[0], markers[1]
	for _, sid := range []string{"once-x", "once-y"} {
		var want []live
		for _, l := range msgs {
			if l.Session == sid {
				want = append(want, l)
			}
		}
		marker := mx
		if sid == "once-y" {
			marker = my
		}
		checkSession(t, cs, sid, append(want, marker), idOf)
		if rec := getJob(t, cs, sid); rec.Local.Deliveries != 61 {
			t.Errorf("%s: %d deliveries counted, want 61", sid, rec.Local.Deliveries)
		}
	}
	if rec := getJob(t, cs, "job-once"); rec.Local.Deliveries != 1 || rec.Job.Status != api.StatusDone {
		t.Errorf("job: %d deliveries counted, status %s; want 1, done", rec.Local.Deliveries, rec.Job.Status)
	}
	for _, id := range append(ids, markers...) {
		if n := cs.appliedCount(id); n != 1 {
			t.Errorf("row %d applied %d times", id, n)
		}
		if row := inboxRow(t, cs, id); row.Attempts != 1 {
			t.Errorf("row %d: %d attempts recorded, want 1", id, row.Attempts)
		}
	}
}

// poisonDelivery is a live.message row whose payload is not a message.
func poisonDelivery(session string) store.Delivery {
	return store.Delivery{
		DedupeKey: "live:" + session + ":poison", Route: "job", Kind: api.CallbackLiveMessage,
		Event: "live.transcript", JobID: session, MessageType: api.MessageTranscript,
		Category: api.CategoryFinalTranscripts, PartitionKey: session,
		Body: []byte(`{"id":"` + session + `","event":"live.transcript","payload":"nope"}`), ReceivedAt: baseTime,
	}
}

// A row that cannot be decoded for its kind is marked failed at its first attempt (no retry
// changes its bytes), with its error, and the rows behind it in its partition and its session
// still run.
func TestPoisonRowFailsWithoutBlockingItsPartition(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	reg := prometheus.NewRegistry()
	r := start(t, handlers.Config{Store: s, Partitions: 1, MaxRetries: 2, RetrySchedule: fastRetries, Metrics: reg})
	const sid = "poisoned"
	a, b, c := newLive(sid, 0, api.MessageStartSession, nil), newLive(sid, 1, api.MessageTranscript, nil), newLive(sid, 2, api.MessageSpeechEnd, nil)
	ids := ingest(t, s, r.p, a.Delivery, poisonDelivery(sid), b.Delivery)
	more := ingest(t, s, r.p, c.Delivery)
	waitStatus(t, s, store.InboxDone, ids[0], ids[2], more[0])
	waitStatus(t, s, store.InboxFailed, ids[1])

	row := inboxRow(t, s, ids[1])
	if !strings.Contains(row.LastError, "decode live callback") {
		t.Errorf("last error %q does not name the problem", row.LastError)
	}
	if row.Attempts != 1 || row.FailedAt.IsZero() || !row.NextAttempt.IsZero() {
		t.Errorf("%d attempts recorded, failed at %v, due %v; want 1, a time, none", row.Attempts, row.FailedAt, row.NextAttempt)
	}
	checkSession(t, s, sid, []live{a, b, c}, map[string]int64{
		a.Delivery.DedupeKey: ids[0], b.Delivery.DedupeKey: ids[2], c.Delivery.DedupeKey: more[0],
	})
	waitFor(t, func() string { return "poisoned counter" }, func() bool {
		return testmetrics.Value(t, reg, "scribehook_deliveries_failed_total") == 1
	})
	if got := testmetrics.Value(t, reg, "scribehook_handler_errors_total"); got != 1 {
		t.Errorf("handler errors counted %v, want 1", got)
	}
	if got := testmetrics.Value(t, reg, "scribehook_deliveries_processed_total"); got != 3 {
		t.Errorf("processed counted %v, want 3", got)
	}
}

// When the store cannot even record the failure, the row stays pending for the sweep and the
// rows behind it go on: nothing retries it at once into the same refusal, over and over.
func TestPoisonRowWhoseFailureCannotBeRecorded(t *testing.T) {
	t.Parallel()
	cs := newCountingStore(teststore.SQLite(t))
	r := start(t, handlers.Config{Store: cs, Partitions: 1, MaxRetries: 2, RetrySchedule: fastRetries})
	const sid = "unrecordable"
	ids := ingest(t, cs, nil, poisonDelivery(sid))
	cs.mu.Lock()
	cs.failMark[ids[0]] = true
	cs.mu.Unlock()
	after := newLive(sid, 1, api.MessageTranscript, nil)
	r.p.Committed(ids[0], sid)
	next := ingest(t, cs, r.p, after.Delivery)
	waitStatus(t, cs, store.InboxDone, next...)
	waitFor(t, func() string { return fmt.Sprintf("%d failure records tried", cs.markCount(ids[0])) },
		func() bool { return cs.markCount(ids[0]) >= 1 })
	// Absence of a loop cannot be awaited: watch for 40 retry waits.
	time.Sleep(200 * time.Millisecond)
	if n := cs.markCount(ids[0]); n > 2 {
		t.Errorf("the failure of one row was recorded %d times: the pipeline loops on it", n)
	}
	if row := inboxRow(t, cs, ids[0]); row.Status != store.InboxPending {
		t.Errorf("row is %s; nothing could be recorded, so it stays pending for the sweep", row.Status)
	}
}

// Rows committed before Run (no notifications) are processed at start, in order.
func TestRecoveryProcessesRowsCommittedBeforeRun(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	var (
		ds   []store.Delivery
		msgs = map[string][]live{}
	)
	for n := range 40 {
		for _, sid := range []string{"rec-1", "rec-2", "rec-3"} {
			l := variedLive(sid, n)
			msgs[sid] = append(msgs[sid], l)
			ds = append(ds, l.Delivery)
		}
	}
	ds = append(ds, jobSuccess("rec-job", sampleResult("recovered"), ""))
	var ids []int64
	for i := 0; i < len(ds); i += 10 {
		ids = append(ids, ingest(t, s, nil, ds[i:min(i+10, len(ds))]...)...)
	}
	idOf := idsOf(ds, ids)
	start(t, handlers.Config{Store: s, Partitions: 2})
	waitStatus(t, s, store.InboxDone, ids...)
	for sid, want := range msgs {
		checkSession(t, s, sid, want, idOf)
	}
	if rec := getJob(t, s, "rec-job"); rec.Job.Status != api.StatusDone || len(rec.Job.Result) == 0 {
		t.Errorf("job after recovery: %+v", rec.Job)
	}
}

// Close returns while rows are pending (one even being applied); those rows stay pending, not
// failed, and a later pipeline on the same store processes them in order.
func TestCloseLeavesPendingRowsForTheNextStart(t *testing.T) {
	t.Parallel()
	cs := newCountingStore(teststore.SQLite(t))
	entered := make(chan int64, 1)
	cs.hold = func(ctx context.Context, id int64) error {
		select {
		case entered <- id:
		default:
		}
		<-ctx.Done() // the first row is being applied when Close comes, and never finishes
		return ctx.Err()
	}
	r := start(t, handlers.Config{Store: cs, Partitions: 1, MaxRetries: 2, RetrySchedule: fastRetries})
	const sid = "closing"
	var want []live
	var ds []store.Delivery
	for n := range 20 {
		l := variedLive(sid, n)
		want = append(want, l)
		ds = append(ds, l.Delivery)
	}
	ids := ingest(t, cs, r.p, ds...)
	select {
	case id := <-entered:
		if id != ids[0] {
			t.Fatalf("row %d applied first, want %d", id, ids[0])
		}
	case <-time.After(waitTimeout):
		t.Fatal("no row reached Apply")
	}
	r.stop()
	for _, id := range ids {
		// An attempt cut short by the stop is no failure of the row: nothing is recorded.
		if row := inboxRow(t, cs, id); row.Status != store.InboxPending || row.Attempts != 0 || row.LastError != "" {
			t.Fatalf("row %d after Close: %s, %d attempts, error %q; want pending, untouched",
				id, row.Status, row.Attempts, row.LastError)
		}
	}
	if n := len(liveMessages(t, cs, sid)); n != 0 {
		t.Fatalf("%d messages stored while every Apply was held", n)
	}
	// Committed after Close is ignored, without blocking or panicking.
	r.p.Committed(ids[0], sid)

	cs.hold = nil
	start(t, handlers.Config{Store: cs, Partitions: 1})
	waitStatus(t, cs, store.InboxDone, ids...)
	idOf := idsOf(ds, ids)
	checkSession(t, cs, sid, want, idOf)
}

// Run refuses to run twice, and New refuses a pipeline without a store.
func TestRunTwiceAndMissingStore(t *testing.T) {
	t.Parallel()
	if _, err := handlers.New(handlers.Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
	r := start(t, handlers.Config{Store: teststore.SQLite(t)})
	if err := r.p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Run: %v", err)
	}
	if !r.p.Ready() {
		t.Error("a running pipeline is not ready")
	}
	r.stop()
	if r.p.Ready() {
		t.Error("a closed pipeline is ready")
	}
	if err := r.p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// refusing is a registerer that refuses the collector describing the metric named name, as a
// registry refuses a name another part took.
type refusing struct {
	prometheus.Registerer
	name string
}

func (r refusing) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(descs); close(descs) }()
	refused := false
	for d := range descs {
		refused = refused || strings.Contains(d.String(), `fqName: "`+r.name+`"`)
	}
	if refused {
		return fmt.Errorf("%s is taken", r.name)
	}
	return r.Registerer.Register(c)
}

// A pipeline whose last metric is refused by the registry fails with that error, not a panic,
// and leaves none of its metrics registered: a pipeline built next on the same registry
// registers them all and counts.
func TestNewOnATakenRegistry(t *testing.T) {
	t.Parallel()
	const last = "scribehook_deliveries_after_final_total" // the last of the pipeline's metrics
	reg := prometheus.NewRegistry()
	s := teststore.SQLite(t)
	_, err := handlers.New(handlers.Config{Store: s, Metrics: refusing{reg, last}})
	if want := "handlers: register metrics: " + last + " is taken"; err == nil || err.Error() != want {
		t.Fatalf("New on a registry that refuses %s = %v, want %q", last, err, want)
	}
	r := start(t, handlers.Config{Store: s, Metrics: reg}) // fails if the refused New left any
	waitStatus(t, s, store.InboxDone, ingest(t, s, r.p, jobSuccess("j1", sampleResult("counted"), ""))...)
	// The count follows the apply's commit, which marked the row done.
	counted := func() float64 {
		return testmetrics.Value(t, reg, "scribehook_deliveries_processed_total", "kind", string(api.CallbackJobSuccess))
	}
	waitFor(t, func() string { return fmt.Sprintf("the pipeline counted %v rows, want 1", counted()) },
		func() bool { return counted() >= 1 })
	if got := counted(); got != 1 {
		t.Errorf("the pipeline counted %v rows, want 1", got)
	}
}

// A pipeline closed without Run (a program that built the kit and returned early) closes at
// once and without an error; it used to wait for Watermill's 10 s close timeout and fail
// "router close timeout". Run after it does nothing.
func TestCloseWithoutRun(t *testing.T) {
	p, err := handlers.New(handlers.Config{Store: teststore.SQLite(t), Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := p.Close(); err != nil {
		t.Errorf("close without run: %v", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("close without run took %s", took)
	}
	if err := p.Run(context.Background()); err == nil {
		t.Error("run after close: no error")
	}
}
