package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// replica is one "serve" process as the tests see it: its own store connection (wrapped to
// count) and its own pipeline and bus.
type replica struct {
	name string
	cs   *countingStore
	r    *running
}

// startReplica starts a bus-mode pipeline on st.
func startReplica(t *testing.T, name string, st store.Store, b *broker, cfg handlers.Config) *replica {
	t.Helper()
	cs := newCountingStore(st)
	cfg.Store = cs
	if cfg.Bus == nil {
		cfg.Bus = openBus(t, b, 2*time.Second)
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 3
	}
	if cfg.SweepInterval == 0 {
		// Only the notices (and the start's sweep) process rows, unless a test says otherwise.
		cfg.SweepInterval = time.Hour
	}
	return &replica{name: name, cs: cs, r: start(t, cfg)}
}

// deliver commits one delivery through a replica and notifies its pipeline, as its receiver
// would; notify false leaves the row without a notice (a process killed after its commit).
func (rp *replica) deliver(t *testing.T, d store.Delivery, notify bool) int64 {
	t.Helper()
	res, err := rp.cs.Ingest(context.Background(), []store.Delivery{d})
	if err != nil {
		t.Errorf("ingest on %s: %v", rp.name, err)
		return 0
	}
	if notify && !res[0].Duplicate {
		rp.r.p.Committed(res[0].ID, d.PartitionKey)
	}
	return res[0].ID
}

// sessionsAcross sends every session's messages the way the service does, one after another
// (each committed before the next is sent), the sessions concurrently; pick chooses the
// replica (the load balancer) of message n of a session. It returns the messages by session
// and the row id of each dedupe key.
func sessionsAcross(t *testing.T, sessions []string, perSession int, pick func(sid string, n int) *replica, between func(n int)) (map[string][]live, map[string]int64) {
	t.Helper()
	bySession := map[string][]live{}
	var (
		mu  sync.Mutex
		ids = map[string]int64{}
		wg  sync.WaitGroup
	)
	for _, sid := range sessions {
		for n := range perSession {
			l := variedLive(sid, n)
			l.Delivery.ReceivedAt = time.Now().UTC()
			bySession[sid] = append(bySession[sid], l)
		}
	}
	for _, sid := range sessions {
		msgs := bySession[sid]
		wg.Go(func() {
			for n, l := range msgs {
				if between != nil {
					between(n)
				}
				l.Delivery.ReceivedAt = time.Now().UTC()
				id := pick(sid, n).deliver(t, l.Delivery, true)
				mu.Lock()
				ids[l.Delivery.DedupeKey] = id
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The premise of the design: a session's later message has the higher row id.
	for sid, msgs := range bySession {
		for i := 1; i < len(msgs); i++ {
			if ids[msgs[i].Delivery.DedupeKey] <= ids[msgs[i-1].Delivery.DedupeKey] {
				t.Fatalf("session %s: message %d has row %d, after message %d's row %d", sid, i,
					ids[msgs[i].Delivery.DedupeKey], i-1, ids[msgs[i-1].Delivery.DedupeKey])
			}
		}
	}
	return bySession, ids
}

// checkOnce asserts that every row is done, applied once in all by the replicas, with one
// attempt.
func checkOnce(t *testing.T, s store.Store, ids map[string]int64, replicas ...*replica) {
	t.Helper()
	for key, id := range ids {
		applied := 0
		for _, rp := range replicas {
			applied += rp.cs.appliedCount(id)
		}
		if applied != 1 {
			t.Errorf("row %d (%s) applied %d times by the replicas", id, key, applied)
		}
		if row := inboxRow(t, s, id); row.Status != store.InboxDone || row.Attempts != 1 {
			t.Errorf("row %d (%s): %s, %d attempts (%q)", id, key, row.Status, row.Attempts, row.LastError)
		}
	}
}

// Two replicas share PostgreSQL and a broker; the sessions' callbacks alternate between them
// (a round-robin load balancer), with job callbacks among them: every row is applied once, and
// every session is stored in the order it was sent.
func TestBusReplicasKeepSessionOrderExactlyOnce(t *testing.T) {
	forEachBrokerOnPG(t, func(t *testing.T, b *broker, dsn string) {
		stA, stB := openPG(t, dsn), openPG(t, dsn)
		a := startReplica(t, "a", stA, b, handlers.Config{})
		bb := startReplica(t, "b", stB, b, handlers.Config{})
		var sessions []string
		for i := range 8 {
			sessions = append(sessions, fmt.Sprintf("bus-sess-%d", i))
		}
		var turn atomic.Uint64
		pick := func(string, int) *replica {
			if turn.Add(1)%2 == 0 {
				return a
			}
			return bb
		}
		// Job callbacks of pre-recorded jobs arrive meanwhile, on either replica.
		jobs := map[string]int64{}
		var jobsMu sync.Mutex
		var jwg sync.WaitGroup
		jwg.Go(func() {
			for i := range 10 {
				d := jobSuccess(fmt.Sprintf("bus-job-%d", i), sampleResult("hello"), "")
				id := pick("", i).deliver(t, d, true)
				jobsMu.Lock()
				jobs[d.DedupeKey] = id
				jobsMu.Unlock()
			}
		})
		bySession, ids := sessionsAcross(t, sessions, 40, pick, nil)
		jwg.Wait()
		for k, v := range jobs {
			ids[k] = v
		}
		waitBacklogEmpty(t, stA)
		for _, sid := range sessions {
			checkSession(t, stA, sid, bySession[sid], ids)
		}
		checkOnce(t, stA, ids, a, bb)
		for i := range 10 {
			if rec := getJob(t, stB, fmt.Sprintf("bus-job-%d", i)); rec.Job.Status != api.StatusDone || rec.Local.Deliveries != 1 {
				t.Errorf("job %d: %s, %d deliveries", i, rec.Job.Status, rec.Local.Deliveries)
			}
		}
		if a.cs.max.Load() == 0 || bb.cs.max.Load() == 0 {
			t.Errorf("one replica applied nothing (a %d, b %d at once): the notices did not spread", a.cs.max.Load(), bb.cs.max.Load())
		}
	})
}

// A notice of row N applies the key's earlier pending rows first, whatever became of their own
// notices; a row that fails holds the rows after it back until it succeeds, and a row marked
// failed (here at once: it cannot be decoded) holds nothing back.
func TestBusNoticeDrainsEarlierRowsFirst(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b *broker) {
		s := teststore.SQLite(t)
		const sid = "drain-first"
		msgs := make([]live, 6)
		for n := range msgs {
			msgs[n] = newLive(sid, n, api.MessageTranscript, nil)
		}
		// Row 1 fails twice before it succeeds: row 2 must wait for it. A group holding it fails
		// meanwhile too (the group then applies its rows one by one, and row 1 fails alone).
		var failsLeft atomic.Int64
		failsLeft.Store(2)
		rp := startReplica(t, "solo", s, b, handlers.Config{MaxRetries: 3, RetrySchedule: fastRetries})
		rp.cs.hold = func(ctx context.Context, id int64) error {
			row, err := s.InboxRow(ctx, id)
			if err != nil || row.DedupeKey != msgs[1].Delivery.DedupeKey {
				return nil
			}
			if inGroup(ctx) && failsLeft.Load() > 0 || !inGroup(ctx) && failsLeft.Add(-1) >= 0 {
				return errors.New("database is locked (injected)")
			}
			return nil
		}
		// Rows 0, 1, 2 without notices (their replica died after the commits), then 2's notice.
		var ids []int64
		for _, l := range msgs[:3] {
			ids = append(ids, rp.deliver(t, l.Delivery, false))
		}
		rp.r.p.Committed(ids[2], sid)
		waitStatus(t, s, store.InboxDone, ids...)
		if row := inboxRow(t, s, ids[1]); row.Attempts != 3 || row.Status != store.InboxDone {
			t.Errorf("row 1: %d attempts, %s; want 3 (two failures recorded), done", row.Attempts, row.Status)
		}
		// A poisoned row between rows 3 and 4: marked failed, and row 4 goes on.
		ids = append(ids, rp.deliver(t, msgs[3].Delivery, false))
		poison := rp.deliver(t, poisonDelivery(sid), false)
		ids = append(ids, rp.deliver(t, msgs[4].Delivery, false))
		ids = append(ids, rp.deliver(t, msgs[5].Delivery, true))
		waitStatus(t, s, store.InboxDone, ids...)
		waitStatus(t, s, store.InboxFailed, poison)
		if row := inboxRow(t, s, poison); row.Attempts != 1 || !strings.Contains(row.LastError, "decode live callback") {
			t.Errorf("poisoned row: %d attempts, error %q; want 1 (no retry changes a decoding error)", row.Attempts, row.LastError)
		}
		idOf := map[string]int64{}
		for i, l := range msgs {
			idOf[l.Delivery.DedupeKey] = ids[i]
		}
		checkSession(t, s, sid, msgs, idOf)
	})
}

// A replica dies with notices delivered to it and not acknowledged (its drains held mid-way):
// the broker gives them to another replica after ClaimAfter (Redis: XCLAIM of the idle pending
// entries; JetStream: redelivery after the consumer's jetstream.ConsumerConfig.AckWait), which applies the rows. Each row is the only
// one of its key, so nothing but its own notice can lead to it, and the sweep is off (grace
// and interval of an hour).
func TestBusDeadReplicaNoticesAreClaimedByTheOther(t *testing.T) {
	forEachBrokerOnPG(t, func(t *testing.T, b *broker, dsn string) {
		noSweep := handlers.Config{SweepInterval: time.Hour, SweepGrace: time.Hour, Partitions: 3}
		reg := prometheus.NewRegistry()
		withMetrics := noSweep
		withMetrics.Metrics = reg
		// The doomed replica hangs until it dies: its attempts must not time out first (30 s
		// each, six of them, on a machine slow enough to take that long before the crash), or
		// its rows are marked failed, which a killed process never does.
		withMetrics.HandlerTimeout = time.Hour
		doomed := startReplica(t, "doomed", openPG(t, dsn), b, withMetrics)
		entered := make(chan int64, 100)
		doomed.cs.hold = func(ctx context.Context, id int64) error {
			entered <- id
			<-ctx.Done() // never finishes: the process hangs, then dies
			return ctx.Err()
		}
		// Five keys, one row each: the doomed replica's three subscriptions take three notices
		// and hang on them; the two others wait in the broker (or in its client's buffer).
		var ids []int64
		var msgs []live
		for i := range 5 {
			l := newLive(fmt.Sprintf("orphan-%d", i), 0, api.MessageTranscript, nil)
			l.Delivery.ReceivedAt = time.Now().UTC()
			msgs = append(msgs, l)
			ids = append(ids, doomed.deliver(t, l.Delivery, true))
		}
		held := map[int64]bool{}
		for len(held) < 3 {
			select {
			case id := <-entered:
				held[id] = true
			case <-time.After(waitTimeout):
				t.Fatalf("the doomed replica holds %d rows, want 3", len(held))
			}
		}
		// It dies once its notices are with the broker (a replica killed before publishing leaves
		// its rows to the sweep: TestBusSweepProcessesRowsWithoutNotice).
		waitFor(t, func() string { return "the doomed replica's notices published" }, func() bool {
			return testmetrics.Value(t, reg, "scribehook_bus_notices_published_total") == float64(len(ids))
		})
		doomed.r.p.Crash()
		doomed.r.stop()
		for _, id := range ids {
			if row := inboxRow(t, doomed.cs, id); row.Status != store.InboxPending || row.Attempts != 0 {
				t.Fatalf("row %d after the crash: %s, %d attempts; want pending, untouched", id, row.Status, row.Attempts)
			}
		}
		stB := openPG(t, dsn)
		survivor := startReplica(t, "survivor", stB, b, noSweep)
		waitStatus(t, stB, store.InboxDone, ids...)
		for i, id := range ids {
			if n := survivor.cs.appliedCount(id); n != 1 {
				t.Errorf("row %d applied %d times by the survivor", id, n)
			}
			if n := doomed.cs.appliedCount(id); n != 0 {
				t.Errorf("row %d applied by the doomed replica", id)
			}
			checkSession(t, stB, msgs[i].Session, msgs[i:i+1], map[string]int64{msgs[i].Delivery.DedupeKey: id})
		}
	})
}

// The broker stops mid-stream and starts again on the same port (Redis without persistence
// loses its stream and group; JetStream keeps them in its store directory): deliveries go on
// being stored meanwhile, readiness reports the broker's absence, and every row ends applied
// once, every session in order.
func TestBusBrokerRestartLosesNothing(t *testing.T) {
	forEachBrokerOnPG(t, func(t *testing.T, b *broker, dsn string) {
		stA, stB := openPG(t, dsn), openPG(t, dsn)
		regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
		a := startReplica(t, "a", stA, b, handlers.Config{SweepInterval: 3 * time.Second, SweepGrace: time.Second, Metrics: regA})
		bb := startReplica(t, "b", stB, b, handlers.Config{SweepInterval: 3 * time.Second, SweepGrace: time.Second, Metrics: regB})
		received := func() float64 {
			return testmetrics.Value(t, regA, "scribehook_bus_notices_received_total") + testmetrics.Value(t, regB, "scribehook_bus_notices_received_total")
		}
		sessions := []string{"restart-1", "restart-2", "restart-3"}
		const per = 60
		var (
			restarted = make(chan struct{})
			once      sync.Once
			sawDown   atomic.Bool
		)
		between := func(n int) {
			if n != per/3 {
				time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
				return
			}
			once.Do(func() {
				b.stop()
				// Deliveries keep coming while the broker is away; BrokerUp says it is.
				go func() {
					defer close(restarted)
					deadline := time.Now().Add(waitTimeout)
					for time.Now().Before(deadline) {
						if !a.r.p.BrokerUp() && !bb.r.p.BrokerUp() {
							sawDown.Store(true)
							break
						}
						time.Sleep(20 * time.Millisecond)
					}
					b.start()
				}()
			})
			if n == per/3 {
				time.Sleep(30 * time.Millisecond)
			}
		}
		bySession, ids := sessionsAcross(t, sessions, per, func(_ string, n int) *replica {
			if n%2 == 0 {
				return a
			}
			return bb
		}, between)
		<-restarted
		if !sawDown.Load() {
			t.Error("the replicas reported the broker up while it was down")
		}
		waitBacklogEmpty(t, stA)
		for _, sid := range sessions {
			checkSession(t, stA, sid, bySession[sid], ids)
		}
		checkOnce(t, stA, ids, a, bb)
		waitFor(t, func() string { return "replicas see the broker again after its restart" }, func() bool {
			return a.r.p.BrokerUp() && bb.r.p.BrokerUp()
		})
		// The bus works again: new rows' notices reach the subscriptions (the sweep alone would
		// also apply the rows, but receives no notice).
		before := received()
		var more []int64
		for n := range 10 {
			l := newLive("restart-1", per+n, api.MessageSpeechEnd, nil)
			l.Delivery.ReceivedAt = time.Now().UTC()
			more = append(more, []*replica{a, bb}[n%2].deliver(t, l.Delivery, true))
		}
		waitStatus(t, stA, store.InboxDone, more...)
		waitFor(t, func() string { return fmt.Sprintf("%v notices received after the restart, want 10", received()-before) }, func() bool {
			return received()-before >= 10
		})
	})
}

// Rows committed without a notice (a replica killed between its commit and its publish) are
// processed by the sweep once older than the grace period.
func TestBusSweepProcessesRowsWithoutNotice(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b *broker) {
		s := teststore.SQLite(t)
		rp := startReplica(t, "solo", s, b, handlers.Config{SweepInterval: 500 * time.Millisecond, SweepGrace: 300 * time.Millisecond})
		var ids []int64
		var msgs []live
		idOf := map[string]int64{}
		for n := range 20 {
			l := variedLive("swept", n)
			l.Delivery.ReceivedAt = time.Now().UTC()
			msgs = append(msgs, l)
			id := rp.deliver(t, l.Delivery, false)
			ids = append(ids, id)
			idOf[l.Delivery.DedupeKey] = id
		}
		waitStatus(t, s, store.InboxDone, ids...)
		checkSession(t, s, "swept", msgs, idOf)
	})
}

// A row whose failure cannot be recorded stays pending, and a drain stops at it: the session's
// later message is not applied before it, whichever notice drains the key (the sweep tries
// again later). The drain is the same on every broker, so one is enough.
func TestBusDrainStopsAtRowLeftPending(t *testing.T) {
	rp := startReplica(t, "solo", teststore.SQLite(t), startRedis(t), handlers.Config{MaxRetries: 1, RetrySchedule: fastRetries})
	const sid = "unrecordable"
	stuck := rp.deliver(t, poisonDelivery(sid), false)
	rp.cs.mu.Lock()
	rp.cs.failMark[stuck] = true
	rp.cs.mu.Unlock()
	rp.r.p.Committed(stuck, sid)
	later := rp.deliver(t, newLive(sid, 1, api.MessageTranscript, nil).Delivery, true)
	waitFor(t, func() string { return fmt.Sprintf("%d failure records tried", rp.cs.markCount(stuck)) },
		// Both notices' drains: each tries to record the failure of its attempt.
		func() bool { return rp.cs.markCount(stuck) >= 2 })
	// Absence of an apply cannot be awaited: watch for 40 retry waits.
	time.Sleep(200 * time.Millisecond)
	for _, id := range []int64{stuck, later} {
		if row := inboxRow(t, rp.cs, id); row.Status != store.InboxPending {
			t.Errorf("row %d is %s, want pending behind the row whose failure was not recorded", id, row.Status)
		}
	}
	if n := rp.cs.appliedCount(later); n != 0 {
		t.Errorf("the later message was applied %d times before the row ahead of it", n)
	}
}

// A broker that cannot be reached at start is an error that says so, without the URL's
// password.
func TestOpenBusUnreachable(t *testing.T) {
	for _, tc := range []struct{ driver, url string }{
		{handlers.BusRedisStream, "redis://:s3cret-pw@127.0.0.1:" + freePort(t) + "/0"},
		{handlers.BusNATS, "nats://user:s3cret-pw@127.0.0.1:" + freePort(t)},
		{handlers.BusNATS, "nats://s3cret-token@127.0.0.1:" + freePort(t)},
	} {
		_, err := handlers.OpenBus(context.Background(), handlers.BusConfig{Driver: tc.driver, URL: tc.url, Logger: logx.Discard()})
		if err == nil {
			t.Fatalf("%s: OpenBus on a closed port succeeded", tc.driver)
		}
		if !strings.Contains(err.Error(), "cannot reach") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: error %q", tc.driver, err)
		}
		if red := configs.RedactBusURL(tc.url); strings.Contains(red, "s3cret") || !strings.Contains(red, "REDACTED") {
			t.Errorf("redacted %q", red)
		}
	}
	if _, err := handlers.OpenBus(context.Background(), handlers.BusConfig{Driver: "kafka", URL: "x"}); err == nil {
		t.Error("unknown driver accepted")
	}
}

// OpenBus refuses the topics and groups the configuration refuses, with the configuration's
// rule, before it reaches for the broker.
func TestOpenBusChecksNames(t *testing.T) {
	redis, nats := "redis://127.0.0.1:"+freePort(t)+"/0", "nats://127.0.0.1:"+freePort(t)
	for _, tc := range []struct {
		opts handlers.BusConfig
		want string
	}{
		{handlers.BusConfig{Driver: handlers.BusRedisStream, URL: redis, Topic: "a b"}, `topic must not contain white space, '*' or '>' (got "a b")`},
		{handlers.BusConfig{Driver: handlers.BusNATS, URL: nats, Topic: "a..b"}, `topic must be a NATS subject, dot-separated tokens none of them empty (got "a..b")`},
		{handlers.BusConfig{Driver: handlers.BusNATS, URL: nats, Group: "my group"}, `group must be letters, digits, '-' and '_' (got "my group")`},
	} {
		tc.opts.Logger = logx.Discard()
		if _, err := handlers.OpenBus(context.Background(), tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("OpenBus(%+v) = %v, want %s", tc.opts, err, tc.want)
		}
	}
}

// With a bus, another replica may store a session's messages: the feed of event streams pings
// periodically as well as on this replica's own messages, so that streams look at the store.
func TestBusSessionFeedPingsWithoutLocalMessages(t *testing.T) {
	b := startRedis(t)
	rp := startReplica(t, "solo", teststore.SQLite(t), b, handlers.Config{})
	ch, cancel := rp.r.p.SessionFeed().Subscribe("elsewhere")
	defer cancel()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatal("no ping")
	}
	// In one process the feed pings only on stored messages.
	local := start(t, handlers.Config{Store: teststore.SQLite(t)})
	if local.p.SessionFeed() != local.p.LocalFeed() {
		t.Errorf("the GoChannel pipeline's session feed is %T, want its local feed", local.p.SessionFeed())
	}
}
