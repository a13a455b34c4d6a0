package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/testmetrics"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// testClock is a clock the test moves; safe for concurrent use.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// failing makes the Applies of the row with dedupe key fail, alone or in a group, while its
// counter is positive (each of its Applies alone takes one), with a transient error.
func failing(s store.Store, key string, times *atomic.Int64) func(ctx context.Context, id int64) error {
	return func(ctx context.Context, id int64) error {
		row, err := s.InboxRow(ctx, id)
		if err != nil || row.DedupeKey != key {
			return nil
		}
		if inGroup(ctx) && times.Load() > 0 || !inGroup(ctx) && times.Add(-1) >= 0 {
			return errors.New("database is locked (injected)")
		}
		return nil
	}
}

// settleTime is how long a test watches for something that must not happen.
const settleTime = 200 * time.Millisecond

// A failed attempt is recorded in the row with its due time (the first wait of the schedule,
// on the pipeline's clock); nothing retries it before then, and the session's later messages
// wait behind it. Once the clock reaches the due time the row is retried (the second wait
// next), applied at its third attempt, and the session is stored in order, each row once.
func TestRetryWaitsForItsDueTimeAndHoldsItsSession(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clock := newTestClock(t0)
	cs := newCountingStore(teststore.SQLite(t))
	const sid = "retried"
	msgs := []live{newLive(sid, 0, api.MessageStartSession, nil), newLive(sid, 1, api.MessageTranscript, nil),
		newLive(sid, 2, api.MessageTranscript, nil), newLive(sid, 3, api.MessageSpeechEnd, nil)}
	var fails atomic.Int64
	fails.Store(2)
	cs.hold = failing(cs.Store, msgs[1].Delivery.DedupeKey, &fails)
	reg := prometheus.NewRegistry()
	r := start(t, handlers.Config{Store: cs, Partitions: 1, Now: clock.Now, Metrics: reg, RetryPoll: 5 * time.Millisecond,
		RetrySchedule: []time.Duration{30 * time.Second, 2 * time.Minute}, MaxRetries: 3})
	other := newLive("bystander", 0, api.MessageTranscript, nil)
	ids := ingest(t, cs, r.p, msgs[0].Delivery, msgs[1].Delivery, msgs[2].Delivery, other.Delivery)
	waitStatus(t, cs, store.InboxDone, ids[0], ids[3])
	waitFor(t, func() string { return "the first failure recorded" }, func() bool { return inboxRow(t, cs, ids[1]).Attempts == 1 })
	// A message received while its session waits waits too.
	ids = append(ids, ingest(t, cs, r.p, msgs[3].Delivery)...)
	time.Sleep(settleTime)

	steps := []struct {
		advance  time.Duration
		attempts int
		due      time.Time
		status   store.InboxStatus
	}{
		{0, 1, t0.Add(30 * time.Second), store.InboxPending},                                         // first attempt failed
		{29 * time.Second, 1, t0.Add(30 * time.Second), store.InboxPending},                          // not due yet: untouched
		{time.Second, 2, t0.Add(30*time.Second + 2*time.Minute), store.InboxPending},                 // due: second attempt failed
		{2*time.Minute - time.Second, 2, t0.Add(30*time.Second + 2*time.Minute), store.InboxPending}, // not due yet
		{time.Second, 3, t0.Add(30*time.Second + 2*time.Minute), store.InboxDone},                    // third attempt applied
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		if st.status == store.InboxDone {
			waitStatus(t, cs, store.InboxDone, ids...)
		} else if st.advance > 0 && st.attempts > steps[i-1].attempts {
			waitFor(t, func() string { return fmt.Sprintf("step %d: attempt %d recorded", i, st.attempts) },
				func() bool { return inboxRow(t, cs, ids[1]).Attempts == st.attempts })
		} else {
			time.Sleep(settleTime)
		}
		row := inboxRow(t, cs, ids[1])
		if row.Status != st.status || row.Attempts != st.attempts || !row.NextAttempt.Equal(st.due) {
			t.Errorf("step %d (clock t0+%s): row %s, %d attempts, due %v; want %s, %d, %v",
				i, clock.Now().Sub(t0), row.Status, row.Attempts, row.NextAttempt, st.status, st.attempts, st.due)
		}
		if st.status == store.InboxPending {
			if row.LastError != "database is locked (injected)" {
				t.Errorf("step %d: last error %q", i, row.LastError)
			}
			for _, later := range []int64{ids[2], ids[4]} {
				if n := cs.appliedCount(later); n != 0 || inboxRow(t, cs, later).Status != store.InboxPending {
					t.Errorf("step %d: row %d, behind the waiting row of its session, was applied (%d)", i, later, n)
				}
			}
		}
	}
	for _, id := range ids {
		if n := cs.appliedCount(id); n != 1 {
			t.Errorf("row %d applied %d times, want once", id, n)
		}
	}
	idOf := idsOf([]store.Delivery{msgs[0].Delivery, msgs[1].Delivery, msgs[2].Delivery, other.Delivery, msgs[3].Delivery}, ids)
	checkSession(t, cs, sid, msgs, idOf)
	if got := testmetrics.Value(t, reg, "scribehook_handler_errors_total"); got != 2 {
		t.Errorf("handler errors counted %v, want 2", got)
	}
	if got := testmetrics.Value(t, reg, "scribehook_deliveries_failed_total"); got != 0 {
		t.Errorf("rows failed for good counted %v, want 0", got)
	}
}

// A row's retry keeps its timing across a restart: the next pipeline finds it in the store
// with its attempts and due time, does not retry it before then (nor the session's later row),
// and retries it when it is due.
func TestRetrySurvivesRestart(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clock := newTestClock(t0)
	cs := newCountingStore(teststore.SQLite(t))
	const sid = "restarted"
	msgs := []live{newLive(sid, 0, api.MessageTranscript, nil), newLive(sid, 1, api.MessageTranscript, nil)}
	var fails atomic.Int64
	fails.Store(1)
	cs.hold = failing(cs.Store, msgs[0].Delivery.DedupeKey, &fails)
	cfg := handlers.Config{Store: cs, Partitions: 1, Now: clock.Now, RetryPoll: 5 * time.Millisecond,
		RetrySchedule: []time.Duration{time.Hour}, MaxRetries: 2}
	r := start(t, cfg)
	ids := ingest(t, cs, r.p, msgs[0].Delivery, msgs[1].Delivery)
	waitFor(t, func() string { return "the failure recorded" }, func() bool { return inboxRow(t, cs, ids[0]).Attempts == 1 })
	r.stop()

	clock.Advance(30 * time.Minute) // the process was down half the wait
	start(t, cfg)
	time.Sleep(settleTime)
	for _, id := range ids {
		if row := inboxRow(t, cs, id); row.Status != store.InboxPending || cs.appliedCount(id) != 0 {
			t.Fatalf("row %d before its due time: %s, applied %d times", id, row.Status, cs.appliedCount(id))
		}
	}
	if row := inboxRow(t, cs, ids[0]); row.Attempts != 1 || !row.NextAttempt.Equal(t0.Add(time.Hour)) {
		t.Errorf("after the restart: %d attempts, due %v; want 1, %v", row.Attempts, row.NextAttempt, t0.Add(time.Hour))
	}
	clock.Advance(30 * time.Minute)
	waitStatus(t, cs, store.InboxDone, ids...)
	if row := inboxRow(t, cs, ids[0]); row.Attempts != 2 {
		t.Errorf("retried row: %d attempts, want 2", row.Attempts)
	}
	checkSession(t, cs, sid, msgs, idsOf([]store.Delivery{msgs[0].Delivery, msgs[1].Delivery}, ids))
}

// A row that keeps failing is marked failed after its last retry, with its attempts, error and
// time; the rows behind it then go on. A replay moves it back to pending; once the cause is
// gone it is applied once, whether the replay told the pipeline (Replayed, as the read API and
// Kit.Records do) or only the store (scribehook inbox replay, another process: found within
// RetryPoll), on the in-process bus and through a broker.
func TestFailedRowReplayedIsAppliedOnce(t *testing.T) {
	t.Parallel()
	type mode struct {
		name   string
		notify bool
		broker func(t *testing.T) *broker
	}
	for _, m := range []mode{
		{"in process, told", true, nil},
		{"in process, store only", false, nil},
		{"redis, told", true, startRedis},
		{"nats, store only", false, startNATS},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			cs := newCountingStore(teststore.SQLite(t))
			const sid = "replayed"
			msgs := []live{newLive(sid, 0, api.MessageTranscript, nil), newLive(sid, 1, api.MessageTranscript, nil)}
			var fails atomic.Int64
			fails.Store(1 << 30) // until the cause is fixed
			cs.hold = failing(cs.Store, msgs[0].Delivery.DedupeKey, &fails)
			reg := prometheus.NewRegistry()
			cfg := handlers.Config{Store: cs, Partitions: 1, Metrics: reg, RetryPoll: 20 * time.Millisecond,
				RetrySchedule: fastRetries, MaxRetries: 2}
			if m.broker != nil {
				cfg.Bus = openBus(t, m.broker(t), 2*time.Second)
				cfg.SweepInterval = time.Hour
			}
			r := start(t, cfg)
			ids := ingest(t, cs, r.p, msgs[0].Delivery, msgs[1].Delivery)
			waitStatus(t, cs, store.InboxFailed, ids[0])
			waitStatus(t, cs, store.InboxDone, ids[1])
			row := inboxRow(t, cs, ids[0])
			if row.Attempts != 3 || row.LastError != "database is locked (injected)" || row.FailedAt.IsZero() || !row.NextAttempt.IsZero() {
				t.Errorf("failed row: %d attempts, error %q, failed at %v, due %v; want 3 (MaxRetries 2 + 1), the error, a time, none",
					row.Attempts, row.LastError, row.FailedAt, row.NextAttempt)
			}
			listed, err := cs.FailedInbox(t.Context(), store.InboxFilter{JobID: sid}, 0)
			if err != nil || len(listed) != 1 || listed[0].ID != ids[0] {
				t.Fatalf("FailedInbox(job %s) = %v, %v; want row %d", sid, listed, err, ids[0])
			}
			waitFor(t, func() string { return "the row failed for good, counted" }, func() bool {
				return testmetrics.Value(t, reg, "scribehook_deliveries_failed_total") == 1
			})

			fails.Store(0) // the cause is fixed
			moved, err := cs.ReplayInbox(t.Context(), store.InboxFilter{IDs: []int64{ids[0]}}, time.Now())
			if err != nil || len(moved) != 1 || moved[0].ID != ids[0] || moved[0].PartitionKey != sid {
				t.Fatalf("ReplayInbox = %v, %v", moved, err)
			}
			if m.notify {
				r.p.Replayed(moved)
			}
			waitStatus(t, cs, store.InboxDone, ids[0])
			if row := inboxRow(t, cs, ids[0]); row.Attempts != 1 || !row.FailedAt.IsZero() {
				t.Errorf("replayed row: %d attempts, failed at %v; want 1 (counted from the replay), none", row.Attempts, row.FailedAt)
			}
			// Replaying it again moves nothing, and nothing applies it twice.
			if again, err := cs.ReplayInbox(t.Context(), store.InboxFilter{IDs: []int64{ids[0]}}, time.Now()); err != nil || len(again) != 0 {
				t.Errorf("second replay = %v, %v; want nothing moved", again, err)
			}
			time.Sleep(settleTime)
			if n := cs.appliedCount(ids[0]); n != 1 {
				t.Errorf("replayed row applied %d times, want once", n)
			}
			stored := liveMessages(t, cs, sid)
			if len(stored) != 2 || stored[1].InboxID != ids[0] {
				t.Errorf("session after the replay: %d messages, the last of row %d; want 2, the replayed row last", len(stored), lastInbox(stored))
			}
			want := 0.0
			if m.notify {
				want = 1
			}
			if got := testmetrics.Value(t, reg, "scribehook_inbox_replayed_total"); got != want {
				t.Errorf("replays counted %v, want %v", got, want)
			}
		})
	}
}

func lastInbox(msgs []store.LiveMessage) int64 {
	if len(msgs) == 0 {
		return 0
	}
	return msgs[len(msgs)-1].InboxID
}

// The schedule gives each retry its wait, the last repeating; a negative wait is refused.
func TestRetryScheduleChecked(t *testing.T) {
	if got := handlers.DefaultRetrySchedule(); len(got) != 5 || got[0] != time.Second || got[4] != 10*time.Minute {
		t.Errorf("DefaultRetrySchedule = %v", got)
	}
	_, err := handlers.New(handlers.Config{Store: teststore.SQLite(t), RetrySchedule: []time.Duration{time.Second, -time.Second}})
	if want := "handlers: retry schedule: wait 2 is negative (-1s)"; err == nil || err.Error() != want {
		t.Errorf("New with a negative wait = %v, want %q", err, want)
	}
}
