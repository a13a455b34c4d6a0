package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The group apply (ApplyGroup, InboxRows): several rows in one transaction, with each row's
// effects exactly once, as Apply gives them one by one.

func groupDeliveries(t *testing.T, s store.Store, prefix string, n int) []int64 {
	t.Helper()
	var ds []store.Delivery
	for i := range n {
		ds = append(ds, delivery(fmt.Sprintf("%s-%d", prefix, i)))
	}
	var out []int64
	for _, r := range ingest(t, s, ds...) {
		out = append(out, r.ID)
	}
	return out
}

// ApplyGroup marks the pending rows done, runs fn once with them in the order given (a row
// done already, or missing, left out), and commits their effects together; a second group of
// the same rows changes nothing and does not run fn.
func testApplyGroup(t *testing.T, s store.Store) {
	rows := groupDeliveries(t, s, "group", 5)
	apply(t, s, rows[1], nil) // done before the group
	markFailed(t, s, rows[3], "exhausted", true)
	const missing = 999999
	rec := jobRecord("session-g", api.StatusProcessing, api.KindLive, base, `{"team":"g"}`)
	calls := 0
	var got []int64
	before := time.Now()
	err := s.ApplyGroup(t.Context(), []int64{rows[0], rows[1], missing, rows[2], rows[3], rows[4]},
		func(ctx context.Context, tx store.Tx, ids []int64) error {
			calls++
			got = ids
			for i, id := range ids {
				if _, err := tx.AppendLiveMessage(ctx, liveMessage("session-g", id, i)); err != nil {
					return err
				}
			}
			_, err := putJobReadBack(ctx, t, tx, rec)
			return err
		})
	after := time.Now()
	if err != nil {
		t.Fatalf("ApplyGroup: %v", err)
	}
	want := []int64{rows[0], rows[2], rows[3], rows[4]}
	if calls != 1 || !slices.Equal(got, want) {
		t.Fatalf("fn ran %d times with rows %v, want once with %v", calls, got, want)
	}
	for _, id := range rows {
		wantAttempts := 1
		if id == rows[3] {
			wantAttempts = 2 // its failed attempt, then the group
		}
		row := inboxRow(t, s, id)
		if row.Status != store.InboxDone || row.Attempts != wantAttempts {
			t.Errorf("row %d after the group = %s/%d, want done/%d", id, row.Status, row.Attempts, wantAttempts)
		}
		if id != rows[1] && (row.ProcessedAt.Before(before.Add(-time.Second)) || row.ProcessedAt.After(after.Add(time.Second))) {
			t.Errorf("row %d processed_at = %v, want between %v and %v", id, row.ProcessedAt, before, after)
		}
	}
	checkJob(t, getJob(t, s, "session-g"), rec)
	msgs := liveMessages(t, s, "session-g", 0, 0)
	if len(msgs) != len(want) {
		t.Fatalf("%d live messages, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.InboxID != want[i] {
			t.Errorf("message %d = seq %d of row %d, want seq %d of row %d", i, m.Seq, m.InboxID, i+1, want[i])
		}
	}
	if n := backlog(t, s); n != 0 {
		t.Errorf("backlog after the group = %d", n)
	}

	// The same rows again: every one is done, so nothing runs and nothing changes.
	err = s.ApplyGroup(t.Context(), rows, func(context.Context, store.Tx, []int64) error {
		calls++
		return nil
	})
	if err != nil || calls != 1 {
		t.Errorf("second ApplyGroup = %v with fn run %d times in all, want nil and once", err, calls)
	}
	for _, id := range rows {
		if row := inboxRow(t, s, id); row.Status != store.InboxDone || row.Attempts > 2 {
			t.Errorf("second ApplyGroup changed row %d: %s/%d", id, row.Status, row.Attempts)
		}
	}
	if err := s.ApplyGroup(t.Context(), nil, nil); err != nil {
		t.Errorf("ApplyGroup of no rows = %v", err)
	}
}

// fn's error rolls back every row of the group and every effect, without using up sequence
// numbers; the rows are then pending and untouched.
func testApplyGroupRollback(t *testing.T, s store.Store) {
	rows := groupDeliveries(t, s, "group-rb", 3)
	boom := errors.New("boom")
	err := s.ApplyGroup(t.Context(), rows, func(ctx context.Context, tx store.Tx, ids []int64) error {
		for i, id := range ids {
			if _, err := tx.AppendLiveMessage(ctx, liveMessage("session-grb", id, i)); err != nil {
				return err
			}
		}
		if err := tx.PutJob(ctx, jobRecord("session-grb", api.StatusProcessing, api.KindLive, base, "")); err != nil {
			return err
		}
		if err := tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{{Sink: "hook", Event: api.Event{ID: "ev-grb", Type: "live.transcript", JobID: "session-grb"}}}); err != nil {
			return err
		}
		return fmt.Errorf("third row: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("ApplyGroup error = %v, want fn's error", err)
	}
	for _, id := range rows {
		if row := inboxRow(t, s, id); row.Status != store.InboxPending || row.Attempts != 0 || !row.ProcessedAt.IsZero() {
			t.Errorf("row %d after a failed group = %s/%d/%v, want pending/0/zero", id, row.Status, row.Attempts, row.ProcessedAt)
		}
	}
	if _, err := s.GetJob(t.Context(), "session-grb"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("job written by a failed group: GetJob error = %v", err)
	}
	if msgs := liveMessages(t, s, "session-grb", 0, 0); len(msgs) != 0 {
		t.Errorf("a failed group left %d live messages", len(msgs))
	}
	if n, err := s.SinkDepth(t.Context(), "hook"); err != nil || n != 0 {
		t.Errorf("a failed group left %d sink deliveries (%v)", n, err)
	}
	// Applied one by one afterwards, the rows number their messages from 1.
	for i, id := range rows {
		var seq int64
		apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
			var err error
			seq, err = tx.AppendLiveMessage(ctx, liveMessage("session-grb", id, i))
			return err
		})
		if seq != int64(i+1) {
			t.Errorf("row %d after the rolled-back group got seq %d, want %d", id, seq, i+1)
		}
	}
}

// ApplyGroup gives fn the rows in the order given, not in id order, and a row given twice once,
// where it first stands.
func testApplyGroupOrder(t *testing.T, s store.Store) {
	rows := groupDeliveries(t, s, "group-order", 4)
	var got []int64
	err := s.ApplyGroup(t.Context(), []int64{rows[2], rows[0], rows[3], rows[2], rows[1], rows[0]},
		func(_ context.Context, _ store.Tx, ids []int64) error {
			got = ids
			return nil
		})
	if err != nil {
		t.Fatalf("ApplyGroup: %v", err)
	}
	if want := []int64{rows[2], rows[0], rows[3], rows[1]}; !slices.Equal(got, want) {
		t.Errorf("fn ran with rows %v, want %v", got, want)
	}
	for _, id := range rows {
		if row := inboxRow(t, s, id); row.Status != store.InboxDone || row.Attempts != 1 {
			t.Errorf("row %d after the group = %s/%d, want done/1", id, row.Status, row.Attempts)
		}
	}
}

// InboxRows reads the rows that exist among ids, by id, with every field.
func testInboxRows(t *testing.T, s store.Store) {
	rows := groupDeliveries(t, s, "rows", 4)
	apply(t, s, rows[2], nil)
	got, err := s.InboxRows(t.Context(), []int64{rows[3], 999999, rows[0], rows[2]})
	if err != nil {
		t.Fatalf("InboxRows: %v", err)
	}
	want := []int64{rows[0], rows[2], rows[3]}
	if !slices.Equal(ids(got), want) {
		t.Fatalf("InboxRows = %v, want %v", ids(got), want)
	}
	for i, r := range got {
		one := inboxRow(t, s, want[i])
		checkDelivery(t, r.Delivery, one.Delivery)
		if r.Status != one.Status || r.Attempts != one.Attempts || !r.ProcessedAt.Equal(one.ProcessedAt) {
			t.Errorf("InboxRows row %d = %s/%d/%v, InboxRow says %s/%d/%v", r.ID, r.Status, r.Attempts, r.ProcessedAt, one.Status, one.Attempts, one.ProcessedAt)
		}
	}
	if got, err := s.InboxRows(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("InboxRows(none) = %v, %v", got, err)
	}
}

// PendingInboxKeys lists what PendingInbox lists, id, partition key and receipt time only, with
// the same cursor and limit.
func testPendingInboxKeys(t *testing.T, s store.Store) {
	var ds []store.Delivery
	for i := range 6 {
		d := delivery(fmt.Sprintf("keys-%d", i))
		d.PartitionKey = fmt.Sprintf("key-%d", i%3)
		ds = append(ds, d)
	}
	rows := ingest(t, s, ds...)
	apply(t, s, rows[1].ID, nil)
	markFailed(t, s, rows[4].ID, "exhausted", true)
	markFailed(t, s, rows[5].ID, "will retry", false) // still pending, due at retryAt
	for _, c := range []struct {
		after int64
		limit int
	}{{0, 0}, {0, 2}, {rows[2].ID, 0}, {rows[5].ID, 10}} {
		keys, err := s.PendingInboxKeys(t.Context(), c.after, c.limit)
		if err != nil {
			t.Fatalf("PendingInboxKeys(%d, %d): %v", c.after, c.limit, err)
		}
		var want []store.InboxKey
		for _, r := range pending(t, s, c.after, c.limit) {
			want = append(want, store.InboxKey{ID: r.ID, PartitionKey: r.PartitionKey, ReceivedAt: r.ReceivedAt, NextAttempt: r.NextAttempt})
		}
		if !slices.EqualFunc(keys, want, func(a, b store.InboxKey) bool {
			return a.ID == b.ID && a.PartitionKey == b.PartitionKey && !a.ReceivedAt.IsZero() && a.ReceivedAt.Equal(b.ReceivedAt) &&
				a.NextAttempt.Equal(b.NextAttempt)
		}) {
			t.Errorf("PendingInboxKeys(%d, %d) = %v, want %v", c.after, c.limit, keys, want)
		}
	}
	if keys, err := s.PendingInboxKeys(t.Context(), 0, 0); err != nil || len(keys) != 4 || keys[0].PartitionKey != "key-0" ||
		!keys[0].NextAttempt.IsZero() || !keys[3].NextAttempt.Equal(retryAt) {
		t.Errorf("PendingInboxKeys = %v, %v; want the 4 pending rows, the first of key-0, the last due at %v", keys, err, retryAt)
	}
}
