package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/store"
)

// groupFixture ingests, before the pipeline runs (so that the startup scan queues them at once
// and the partition hands them over in batches), perSession varied messages of each session,
// interleaved (some of the second session's stored by an earlier version, unlocated), plus
// extra deliveries after message at of the first session.
func groupFixture(t *testing.T, s store.Store, sessions []string, perSession, at int, extra ...store.Delivery) (map[string][]live, map[string]int64, []store.Delivery) {
	t.Helper()
	bySession := map[string][]live{}
	var ds []store.Delivery
	for n := range perSession {
		for i, sid := range sessions {
			l := variedLive(sid, n)
			if i == 1 && n%5 == 3 {
				// Rows of an earlier version among located ones: their copies are numbered
				// between the located messages, in order.
				l = unlocated(l)
			}
			bySession[sid] = append(bySession[sid], l)
			ds = append(ds, l.Delivery)
			if i == 0 && n == at {
				ds = append(ds, extra...)
			}
		}
	}
	return bySession, idsOf(ds, ingest(t, s, nil, ds...)), ds
}

// Rows queued together are applied in groups: every row once, each session in order, its
// record counting every message once, with the events of every row.
func TestGroupApplyKeepsOrderAndCounts(t *testing.T) {
	t.Parallel()
	cs := newCountingStore(teststore.SQLite(t))
	sessions := []string{"group-a", "group-b", "group-c"}
	bySession, idOf, ds := groupFixture(t, cs, sessions, 40, -1)
	var groups atomic.Int64
	cs.hold = func(ctx context.Context, _ int64) error {
		if inGroup(ctx) {
			groups.Add(1)
		}
		return nil
	}
	r := start(t, handlers.Config{Store: cs, Partitions: 1})
	waitBacklogEmpty(t, cs)
	// The store's commit empties the backlog a moment before the counting store counts it.
	waitFor(t, func() string { return "every row counted" }, func() bool {
		for _, d := range ds {
			if cs.appliedCount(idOf[d.DedupeKey]) == 0 {
				return false
			}
		}
		return true
	})
	if groups.Load() == 0 {
		t.Error("no row was applied in a group")
	}
	for _, d := range ds {
		if n := cs.appliedCount(idOf[d.DedupeKey]); n != 1 {
			t.Errorf("row %s applied %d times, want once", d.DedupeKey, n)
		}
	}
	for _, sid := range sessions {
		checkSession(t, cs, sid, bySession[sid], idOf)
		if rec := getJob(t, cs, sid); rec.Local.Deliveries != 40 || rec.Job.Status != api.StatusProcessing {
			t.Errorf("session %s record: %d deliveries, %s; want 40, processing", sid, rec.Local.Deliveries, rec.Job.Status)
		}
	}
	_ = r
}

// A group that fails is applied again one row at a time: a transient failure of the group
// costs no row an attempt; a row that keeps failing is retried, marked failed, and the rows
// around it are applied once, in order.
func TestGroupFailureFallsBackToRows(t *testing.T) {
	t.Parallel()
	cs := newCountingStore(teststore.SQLite(t))
	const sid = "group-fail"
	poison := poisonDelivery(sid)
	bySession, idOf, ds := groupFixture(t, cs, []string{sid, "group-other"}, 30, 12, poison)
	// Every group fails once, as a busy database would fail it.
	var groupFailures atomic.Int64
	failed := map[int64]bool{}
	cs.hold = func(ctx context.Context, id int64) error {
		if !inGroup(ctx) || failed[id] {
			return nil
		}
		failed[id] = true // hold runs in one partition: no race
		groupFailures.Add(1)
		return errors.New("database is locked (injected)")
	}
	start(t, handlers.Config{Store: cs, Partitions: 1, MaxRetries: 2, RetrySchedule: fastRetries})
	poisonID := idOf[poison.DedupeKey]
	waitStatus(t, cs, store.InboxFailed, poisonID)
	var rest []int64
	for _, d := range ds {
		if d.DedupeKey != poison.DedupeKey {
			rest = append(rest, idOf[d.DedupeKey])
		}
	}
	waitStatus(t, cs, store.InboxDone, rest...)
	if groupFailures.Load() == 0 {
		t.Fatal("no group was tried")
	}
	for _, id := range rest {
		if row := inboxRow(t, cs, id); row.Attempts != 1 || row.LastError != "" || cs.appliedCount(id) != 1 {
			t.Errorf("row %d: %d attempts, error %q, applied %d times; want 1, none, once", id, row.Attempts, row.LastError, cs.appliedCount(id))
		}
	}
	if row := inboxRow(t, cs, poisonID); row.Attempts != 1 || !strings.Contains(row.LastError, "decode live callback") {
		t.Errorf("poisoned row: %d attempts, error %q; want 1 (no retry changes a decoding error), a decoding error", row.Attempts, row.LastError)
	}
	for sess, want := range bySession {
		checkSession(t, cs, sess, want, idOf)
		if rec := getJob(t, cs, sess); rec.Local.Deliveries != len(want) {
			t.Errorf("session %s record counts %d deliveries, want %d", sess, rec.Local.Deliveries, len(want))
		}
	}
}

// A group's rows of a session already ended are set aside as one by one: a message created
// after the end is quarantined, a late one (created before the end) stored and forwarded,
// and the record stays as the end left it.
func TestGroupAfterEndSession(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	const sid = "group-ended"
	var ds []store.Delivery
	for n := range 5 {
		ds = append(ds, newLive(sid, n, api.MessageTranscript, nil).Delivery)
	}
	ds = append(ds, newLive(sid, 100, api.MessageEndSession, nil).Delivery)
	late := newLive(sid, 50, api.MessageTranscript, nil)
	after := newLive(sid, 200, api.MessageTranscript, nil)
	ds = append(ds, late.Delivery, after.Delivery, newLive(sid, 201, api.MessageSpeechStart, nil).Delivery)
	ids := ingest(t, s, nil, ds...)
	start(t, handlers.Config{Store: s, Partitions: 1})
	waitStatus(t, s, store.InboxDone, ids...)
	msgs := liveMessages(t, s, sid)
	if len(msgs) != 7 || msgs[6].InboxID != ids[6] {
		t.Fatalf("%d messages stored, the last of row %d; want 7, the late one (row %d) last", len(msgs), msgs[len(msgs)-1].InboxID, ids[6])
	}
	rec := getJob(t, s, sid)
	if rec.Local.Final != api.EventLiveEndSession || rec.Local.Deliveries != 6 {
		t.Errorf("record: final %q, %d deliveries; want %s, 6", rec.Local.Final, rec.Local.Deliveries, api.EventLiveEndSession)
	}
	q, err := s.Quarantined(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || !strings.Contains(q[0].Reason, "is final") {
		t.Errorf("quarantined %d rows (%v), want the 2 created after the end", len(q), fmt.Sprint(q))
	}
}

// Rows of a batch that are not grouped (a job callback, a session's end, a live message between
// them) are applied with what the batch read: each row is read once, not once more by the
// per-row handler.
func TestUngroupedRowsReadOnce(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	cs := newCountingStore(s)
	var ds []store.Delivery
	for n := range 10 {
		job, sid := fmt.Sprintf("alone-job-%d", n), fmt.Sprintf("alone-session-%d", n)
		ds = append(ds, jobSuccess(job, sampleResult("alone"), ""), newLive(sid, 0, api.MessageTranscript, nil).Delivery,
			newLive(sid, 1, api.MessageEndSession, nil).Delivery)
	}
	ids := ingest(t, cs, nil, ds...)
	start(t, handlers.Config{Store: cs, Partitions: 1})
	waitStatus(t, s, store.InboxDone, ids...) // through s: the test's reads are not counted
	for i, id := range ids {
		if n, applied := cs.readCount(id), cs.appliedCount(id); n != 1 || applied != 1 {
			t.Errorf("row %d (%s): read %d times, applied %d times; want once, once", id, ds[i].DedupeKey, n, applied)
		}
	}
	for n := range 10 {
		if rec := getJob(t, s, fmt.Sprintf("alone-session-%d", n)); rec.Local.Final != api.EventLiveEndSession || rec.Local.Deliveries != 2 {
			t.Errorf("session %d record: final %q, %d deliveries; want %s, 2", n, rec.Local.Final, rec.Local.Deliveries, api.EventLiveEndSession)
		}
	}
}
