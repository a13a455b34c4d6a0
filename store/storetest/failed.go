package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The inbox's failures: due retries (DueInboxKeys), the failed rows (InboxFailures) and their
// replay.

// failedSet ingests five deliveries about three jobs, received an hour apart, and leaves three
// failed (with their errors), one pending and one done. It returns the ids in ingest order.
func failedSet(t *testing.T, s store.Store) []int64 {
	t.Helper()
	mk := func(key, job string, kind api.CallbackKind, hours int) store.Delivery {
		d := delivery(key)
		d.JobID, d.PartitionKey, d.Kind, d.ReceivedAt = job, job, kind, base.Add(time.Duration(hours)*time.Hour)
		if kind != api.CallbackLiveMessage {
			d.MessageType, d.Category, d.Event = "", "", "transcription.success"
		}
		return d
	}
	res := ingest(t, s,
		mk("f0", "job-a", api.CallbackLiveMessage, 0),
		mk("f1", "job-a", api.CallbackJobSuccess, 1),
		mk("f2", "job-b", api.CallbackJobSuccess, 2),
		mk("f3", "job-b", api.CallbackLiveMessage, 3),
		mk("f4", "job-c", api.CallbackAccountWebhook, 4))
	id := func(i int) int64 { return res[i].ID }
	markFailed(t, s, id(0), "decode live callback: not an object", true)
	markFailed(t, s, id(1), "render subtitles: disk full", false)
	markFailed(t, s, id(1), "render subtitles: disk full again", true)
	markFailed(t, s, id(2), "decode job callback: bad number", true)
	markFailed(t, s, id(3), "timeout", false) // pending, due again at retryAt
	apply(t, s, id(4), nil)
	return []int64{id(0), id(1), id(2), id(3), id(4)}
}

func failed(t *testing.T, s store.Store, f store.InboxFilter, limit int) []store.InboxRow {
	t.Helper()
	return must(s.FailedInbox(t.Context(), f, limit))(t, "FailedInbox(%+v, %d)", f, limit)
}

// FailedInbox lists failed rows only, newest first, filtered by every criterion of the
// filter, without bodies; CountFailedInbox counts them.
func testFailedInboxFilters(t *testing.T, s store.Store) {
	if n := must(s.CountFailedInbox(t.Context()))(t, "CountFailedInbox"); n != 0 {
		t.Errorf("CountFailedInbox of an empty inbox = %d", n)
	}
	id := failedSet(t, s)
	for _, tc := range []struct {
		name  string
		f     store.InboxFilter
		limit int
		want  []int64
	}{
		{"all", store.InboxFilter{}, 0, []int64{id[2], id[1], id[0]}},
		{"limit", store.InboxFilter{}, 2, []int64{id[2], id[1]}},
		{"next page", store.InboxFilter{BeforeID: id[1]}, 2, []int64{id[0]}},
		{"job", store.InboxFilter{JobID: "job-a"}, 0, []int64{id[1], id[0]}},
		{"job of pending and done rows", store.InboxFilter{JobID: "job-c"}, 0, nil},
		{"kind", store.InboxFilter{Kind: api.CallbackJobSuccess}, 0, []int64{id[2], id[1]}},
		{"since", store.InboxFilter{Since: base.Add(time.Hour)}, 0, []int64{id[2], id[1]}},
		{"until", store.InboxFilter{Until: base.Add(time.Hour)}, 0, []int64{id[0]}},
		{"since and until", store.InboxFilter{Since: base.Add(time.Hour), Until: base.Add(2 * time.Hour)}, 0, []int64{id[1]}},
		{"error text", store.InboxFilter{Error: "decode"}, 0, []int64{id[2], id[0]}},
		{"error text is case-sensitive", store.InboxFilter{Error: "Decode"}, 0, nil},
		{"ids", store.InboxFilter{IDs: []int64{id[0], id[2], id[3], 99999}}, 0, []int64{id[2], id[0]}},
		{"every criterion", store.InboxFilter{IDs: id, JobID: "job-a", Kind: api.CallbackJobSuccess,
			Since: base, Until: base.Add(3 * time.Hour), Error: "disk full", BeforeID: id[4]}, 0, []int64{id[1]}},
		{"every criterion, one off", store.InboxFilter{JobID: "job-a", Kind: api.CallbackJobSuccess, Error: "disk empty"}, 0, nil},
	} {
		if got := ids(failed(t, s, tc.f, tc.limit)); !slices.Equal(got, orEmpty(tc.want)) {
			t.Errorf("%s: FailedInbox = %v, want %v", tc.name, got, orEmpty(tc.want))
		}
	}
	if n := must(s.CountFailedInbox(t.Context()))(t, "CountFailedInbox"); n != 3 {
		t.Errorf("CountFailedInbox = %d, want 3", n)
	}
	rows := failed(t, s, store.InboxFilter{IDs: []int64{id[1]}}, 0)
	if len(rows) != 1 {
		t.Fatalf("FailedInbox(row %d) = %d rows", id[1], len(rows))
	}
	r := rows[0]
	if r.ID != id[1] || r.JobID != "job-a" || r.PartitionKey != "job-a" || r.Kind != api.CallbackJobSuccess ||
		r.Event != "transcription.success" || r.Route != "job" || r.DedupeKey != "f1" || r.Status != store.InboxFailed ||
		r.Attempts != 2 || r.LastError != "render subtitles: disk full again" || !r.ReceivedAt.Equal(base.Add(time.Hour)) ||
		!r.NextAttempt.IsZero() {
		t.Errorf("failed row = %+v", r)
	}
	if r.FailedAt.IsZero() || r.FailedAt.Before(time.Now().Add(-time.Minute)) || r.FailedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("failed row's failed_at = %v, want about now", r.FailedAt)
	}
	if r.Body != nil || r.Headers != nil {
		t.Errorf("FailedInbox returned a body (%d bytes) or headers (%v)", len(r.Body), r.Headers)
	}
	if full := inboxRow(t, s, id[1]); !full.FailedAt.Equal(r.FailedAt) || len(full.Body) == 0 {
		t.Errorf("InboxRow of the failed row: failed_at %v (listed %v), %d bytes of body", full.FailedAt, r.FailedAt, len(full.Body))
	}
}

// orEmpty is want as ids returns it: never nil.
func orEmpty(want []int64) []int64 {
	if want == nil {
		return []int64{}
	}
	return want
}

// ReplayInbox moves the failed rows it selects back to pending (attempts 0, due at its now, no
// failed_at, last error kept) and returns them; a row not failed is left out, and a row
// replayed is not replayed again. A replayed row applies once.
func testReplayInbox(t *testing.T, s store.Store) {
	id := failedSet(t, s)
	now := base.Add(5 * time.Hour)
	for _, tc := range []struct {
		name string
		f    store.InboxFilter
		want []int64
	}{
		{"ids, a pending, a done and an unknown one left out", store.InboxFilter{IDs: []int64{id[0], id[3], id[4], 99999}}, []int64{id[0]}},
		{"replayed already", store.InboxFilter{IDs: []int64{id[0]}}, nil},
		{"by job and error", store.InboxFilter{JobID: "job-b", Error: "decode"}, []int64{id[2]}},
		{"all the rest", store.InboxFilter{All: true}, []int64{id[1]}},
		{"nothing left", store.InboxFilter{All: true}, nil},
	} {
		moved := must(s.ReplayInbox(t.Context(), tc.f, now))(t, "ReplayInbox(%s)", tc.name)
		var got []int64
		for _, k := range moved {
			got = append(got, k.ID)
			if k.PartitionKey == "" || k.ReceivedAt.IsZero() || !k.NextAttempt.Equal(now) {
				t.Errorf("%s: moved %+v, want its partition key, receipt and due time %v", tc.name, k, now)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: ReplayInbox moved %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, i := range []int{0, 1, 2} {
		r := inboxRow(t, s, id[i])
		if r.Status != store.InboxPending || r.Attempts != 0 || !r.NextAttempt.Equal(now) || !r.FailedAt.IsZero() ||
			!strings.Contains(r.LastError, ":") {
			t.Errorf("replayed row %d: %s, %d attempts, due %v, failed_at %v, last error %q; want pending, 0, %v, none, kept",
				r.ID, r.Status, r.Attempts, r.NextAttempt, r.FailedAt, r.LastError, now)
		}
	}
	if r := inboxRow(t, s, id[3]); r.Status != store.InboxPending || r.Attempts != 1 || !r.NextAttempt.Equal(retryAt) {
		t.Errorf("pending row touched by the replay: %s, %d attempts, due %v", r.Status, r.Attempts, r.NextAttempt)
	}
	if n := must(s.CountFailedInbox(t.Context()))(t, "CountFailedInbox"); n != 0 {
		t.Errorf("CountFailedInbox after the replays = %d", n)
	}
	// The replayed rows are pending: applied once, then done.
	apply(t, s, id[0], nil)
	if err := s.Apply(t.Context(), id[0], func(context.Context, store.Tx) error { return nil }); !errors.Is(err, store.ErrAlreadyApplied) {
		t.Errorf("second Apply of a replayed row: %v, want ErrAlreadyApplied", err)
	}
	if r := inboxRow(t, s, id[0]); r.Status != store.InboxDone || r.Attempts != 1 {
		t.Errorf("replayed row after Apply: %s, %d attempts; want done, 1", r.Status, r.Attempts)
	}
}

// ReplayInbox refuses a filter that names nothing, unless it says All, and moves nothing.
func testReplayInboxEmptyFilter(t *testing.T, s store.Store) {
	id := failedSet(t, s)
	if moved, err := s.ReplayInbox(t.Context(), store.InboxFilter{}, base); !errors.Is(err, store.ErrEmptyFilter) || len(moved) != 0 {
		t.Errorf("ReplayInbox(empty filter) = %v, %v; want ErrEmptyFilter", moved, err)
	}
	if n := must(s.CountFailedInbox(t.Context()))(t, "CountFailedInbox"); n != 3 {
		t.Errorf("CountFailedInbox after a refused replay = %d, want 3", n)
	}
	if (store.InboxFilter{All: true}).Empty() != true || (store.InboxFilter{BeforeID: id[0]}).Empty() {
		t.Error("Empty: All is no criterion, BeforeID is one")
	}
}

// DueInboxKeys lists pending rows whose due time has come, by due time then id: retries and
// replayed rows, not rows never tried, failed or done.
func testDueInboxKeys(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("d0"), delivery("d1"), delivery("d2"), delivery("d3"), delivery("d4"))
	id := func(i int) int64 { return res[i].ID }
	mark := func(i int, at time.Time) {
		if err := s.MarkInboxFailed(t.Context(), id(i), "try later", at); err != nil {
			t.Fatal(err)
		}
	}
	mark(0, base.Add(2*time.Minute))
	mark(1, base.Add(time.Minute))
	mark(2, time.Time{}) // failed
	mark(3, base.Add(time.Minute))
	apply(t, s, id(3), nil) // done after its retry
	due := func(now time.Time, limit int) []int64 {
		t.Helper()
		keys := must(s.DueInboxKeys(t.Context(), now, limit))(t, "DueInboxKeys(%v, %d)", now, limit)
		out := []int64{}
		for _, k := range keys {
			out = append(out, k.ID)
			if k.PartitionKey != "session-1" || !k.ReceivedAt.Equal(base) || k.NextAttempt.After(now) {
				t.Errorf("DueInboxKeys(%v): %+v", now, k)
			}
		}
		return out
	}
	for _, tc := range []struct {
		now   time.Time
		limit int
		want  []int64
	}{
		{base, 0, []int64{}},
		{base.Add(90 * time.Second), 0, []int64{id(1)}},
		{base.Add(time.Hour), 0, []int64{id(1), id(0)}},
		{base.Add(time.Hour), 1, []int64{id(1)}},
	} {
		if got := due(tc.now, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("DueInboxKeys(base+%v, %d) = %v, want %v", tc.now.Sub(base), tc.limit, got, tc.want)
		}
	}
	// A replayed row is due at the replay's time.
	must(s.ReplayInbox(t.Context(), store.InboxFilter{IDs: []int64{id(2)}}, base.Add(30*time.Second)))(t, "ReplayInbox")
	if got, want := due(base.Add(time.Hour), 0), []int64{id(2), id(1), id(0)}; !slices.Equal(got, want) {
		t.Errorf("DueInboxKeys after a replay = %v, want %v", got, want)
	}
}
