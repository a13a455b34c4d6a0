// Package storetest is the contract suite of store.Store: every implementation (SQLite,
// PostgreSQL) runs the same subtests, so callers can rely on the behaviour they check whatever
// the driver. It also holds the checks a store's own tests share beyond the contract: the
// migrations (MigrationsRecorded and Migrations, given raw access to the database) and claims
// at once from several claimers (ClaimAll, which the PostgreSQL tests run across replicas).
//
// Times in the suite have microsecond precision, the finest PostgreSQL keeps; an
// implementation must return every time it was given as the same instant (time.Time.Equal).
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/testjson"
	"github.com/scribehook/scribehook/store"
)

// Features are the behaviours the contract leaves to the implementation.
type Features struct {
	// ReleasesLeases: ReleaseSinkLeases releases the leases (a store one process owns alone,
	// SQLite). Otherwise it must do nothing and return 0 (a store replicas share, PostgreSQL).
	ReleasesLeases bool
}

// Run runs the contract suite. open must return a new, empty store for each call and arrange
// its Close with t.Cleanup.
func Run(t *testing.T, f Features, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"IngestStoresEveryField", testIngestFields},
		{"IngestEmpty", testIngestEmpty},
		{"IngestDuplicates", testIngestDuplicates},
		{"IngestRejectsEmptyDedupeKey", testIngestEmptyKey},
		{"Quarantine", testQuarantine},
		{"QuarantineInApply", testQuarantineInApply},
		{"InboxRowNotFound", testInboxRowNotFound},
		{"PendingInboxPaging", testPendingInbox},
		{"PendingInboxByKey", testPendingInboxByKey},
		{"InboxBacklog", testBacklog},
		{"ApplyExactlyOnce", testApplyOnce},
		{"ApplyUnknownRow", testApplyUnknown},
		{"ApplyRollsBack", testApplyRollback},
		{"ApplyReadsOwnWrites", testApplyReadsOwnWrites},
		{"ApplyFailedRow", testApplyFailedRow},
		{"ApplyGroup", testApplyGroup},
		{"ApplyGroupRollsBack", testApplyGroupRollback},
		{"ApplyGroupOrderGiven", testApplyGroupOrder},
		{"InboxRows", testInboxRows},
		{"PendingInboxKeys", testPendingInboxKeys},
		{"MarkInboxFailed", testMarkInboxFailed},
		{"DueInboxKeys", testDueInboxKeys},
		{"FailedInboxFilters", testFailedInboxFilters},
		{"ReplayInbox", testReplayInbox},
		{"ReplayInboxEmptyFilter", testReplayInboxEmptyFilter},
		{"SinkState", testSinkState},
		{"Reconcile", testReconcile},
		{"LiveMessageFields", testLiveMessageFields},
		{"LiveMessageSequenceConcurrent", testLiveSequenceConcurrent},
		{"JobRoundTrip", testJobRoundTrip},
		{"JobUpdate", testJobUpdate},
		{"CreateJobKeepsExisting", testCreateJob},
		{"ListJobsFilters", testListJobsFilters},
		{"ListJobsPaging", testListJobsPaging},
		{"Artifacts", testArtifacts},
		{"Tokens", testTokens},
		{"TokenBindConcurrent", testTokenBindConcurrent},
		{"ConcurrentReadsAndWrites", testConcurrentMixed},
		{"SinkEnqueueFields", testSinkEnqueueFields},
		{"SinkEnqueueOnce", testSinkEnqueueOnce},
		{"SinkClaimDue", testSinkClaimDue},
		{"SinkLeaseExpiry", testSinkLeaseExpiry},
		{"SinkClaimOrdered", testSinkClaimOrdered},
		{"SinkClaimUnordered", testSinkClaimUnordered},
		{"SinkRetry", testSinkRetry},
		{"SinkComplete", testSinkComplete},
		{"SinkDeadLetters", testSinkDeadLetters},
		{"SinkQueues", testSinkQueues},
		{"SinkReplay", testSinkReplay},
		{"SinkReplayWindow", testSinkReplayWindow},
		{"SinkReplayBackfill", testSinkReplayBackfill},
		{"SinkReplayDataFromInbox", testSinkReplayDataFromInbox},
		{"SinkHistory", testSinkHistory},
		{"SinkClaimConcurrent", testSinkClaimConcurrent},
		{"ReleaseSinkLeases", func(t *testing.T, s store.Store) { testReleaseSinkLeases(t, s, f.ReleasesLeases) }},
		{"Prune", testPrune},
		{"PruneLiveKeepsLast", testPruneLiveKeepsLast},
		{"PruneTokens", testPruneTokens},
		{"Ping", testPing},
		{"Speakers", testSpeakers},
		{"SpeakersOutbox", testSpeakersOutbox},
		{"SpeakersInApply", testSpeakersInApply},
		{"SpeakersConcurrent", testSpeakersConcurrent},
	}
	tests = append(tests, receivedTests...)
	tests = append(tests, searchTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// base is a time with microseconds, in a zone other than UTC: stores must keep the instant.
var base = time.Date(2024, 3, 1, 11, 30, 15, 123456000, time.FixedZone("CET", 3600))

func delivery(key string) store.Delivery {
	return store.Delivery{
		DedupeKey:    key,
		Route:        "job",
		Kind:         api.CallbackLiveMessage,
		Event:        "live.transcript",
		JobID:        "session-1",
		MessageType:  api.MessageTranscript,
		Category:     api.CategoryFinalTranscripts,
		PartitionKey: "session-1",
		Headers:      map[string]string{"content-type": "application/json", "webhook-id": key},
		Body:         []byte(`{"id":"session-1","event":"live.transcript","key":"` + key + `"}`),
		ReceivedAt:   base,
	}
}

// must takes the two results of a call as they come and returns its value, or ends the test
// naming the call (a format of args) and its error: must(s.GetJob(ctx, id))(t, "GetJob(%s)", id).
// The suite's helpers read the store through it.
func must[T any](v T, err error) func(t *testing.T, call string, args ...any) T {
	return func(t *testing.T, call string, args ...any) T {
		t.Helper()
		if err != nil {
			t.Fatalf(call+": %v", append(args, err)...)
		}
		return v
	}
}

func ingest(t *testing.T, s store.Store, ds ...store.Delivery) []store.IngestResult {
	t.Helper()
	res := must(s.Ingest(t.Context(), ds))(t, "Ingest")
	if len(res) != len(ds) {
		t.Fatalf("Ingest returned %d results for %d deliveries", len(res), len(ds))
	}
	return res
}

func checkDelivery(t *testing.T, got, want store.Delivery) {
	t.Helper()
	if got.DedupeKey != want.DedupeKey || got.Route != want.Route || got.Kind != want.Kind ||
		got.Event != want.Event || got.JobID != want.JobID || got.MessageType != want.MessageType ||
		got.Category != want.Category || got.PartitionKey != want.PartitionKey {
		t.Errorf("delivery fields = %+v, want %+v", got, want)
	}
	if !mapsEqual(got.Headers, want.Headers) {
		t.Errorf("headers = %v, want %v", got.Headers, want.Headers)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("body = %q, want %q", got.Body, want.Body)
	}
	if !got.ReceivedAt.Equal(want.ReceivedAt) {
		t.Errorf("received_at = %v, want %v", got.ReceivedAt, want.ReceivedAt)
	}
	if got.Quarantine != "" {
		t.Errorf("inbox row has quarantine reason %q", got.Quarantine)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func inboxRow(t *testing.T, s store.Store, id int64) store.InboxRow {
	t.Helper()
	return must(s.InboxRow(t.Context(), id))(t, "InboxRow(%d)", id)
}

func testIngestFields(t *testing.T, s store.Store) {
	live := delivery("k1")
	result := store.Delivery{
		DedupeKey: "k2", Route: "account", Kind: api.CallbackJobSuccess, Event: "transcription.success",
		JobID: "job-9", PartitionKey: "job-9", Body: []byte{0, 1, 2, 0xff}, ReceivedAt: base.Add(time.Second),
	}
	empty := store.Delivery{DedupeKey: "k3", Route: "job", Kind: api.CallbackJobError, Headers: map[string]string{}}
	res := ingest(t, s, live, result, empty)
	for i, r := range res {
		if r.ID <= 0 || r.Duplicate || r.Quarantined {
			t.Errorf("result %d = %+v, want a new inbox row", i, r)
		}
		if i > 0 && r.ID <= res[i-1].ID {
			t.Errorf("ids not increasing in batch order: %v", res)
		}
	}
	for i, want := range []store.Delivery{live, result, empty} {
		got := inboxRow(t, s, res[i].ID)
		if got.ID != res[i].ID {
			t.Errorf("row id = %d, want %d", got.ID, res[i].ID)
		}
		checkDelivery(t, got.Delivery, want)
		if got.Status != store.InboxPending || got.Attempts != 0 || got.LastError != "" || !got.ProcessedAt.IsZero() {
			t.Errorf("new row state = %s/%d/%q/%v, want pending/0/\"\"/zero", got.Status, got.Attempts, got.LastError, got.ProcessedAt)
		}
	}
}

func testIngestEmpty(t *testing.T, s store.Store) {
	res, err := s.Ingest(t.Context(), nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("Ingest(nil) = %v, %v; want no results, no error", res, err)
	}
}

func testIngestDuplicates(t *testing.T, s store.Store) {
	a, b := delivery("a"), delivery("b")
	first := ingest(t, s, a, b)

	// Across batches: the first delivery's row wins, its body is kept.
	b2, a2 := delivery("b"), delivery("a")
	b2.Body, a2.Body = []byte(`{"resent":"b"}`), []byte(`{"resent":"a"}`)
	second := ingest(t, s, b2, delivery("c"), a2)
	want := []store.IngestResult{{ID: first[1].ID, Duplicate: true}, {ID: second[1].ID}, {ID: first[0].ID, Duplicate: true}}
	if !slices.Equal(second, want) {
		t.Errorf("second batch = %+v, want %+v", second, want)
	}
	if second[1].ID <= first[1].ID {
		t.Errorf("new row id %d not after %d", second[1].ID, first[1].ID)
	}
	if got := inboxRow(t, s, first[0].ID); !bytes.Equal(got.Body, a.Body) {
		t.Errorf("duplicate replaced the body: %q", got.Body)
	}

	// Within one batch: the second of the same key reports the first's row.
	third := ingest(t, s, delivery("d"), delivery("d"), delivery("e"), delivery("c"))
	if third[0].Duplicate || third[0].ID <= second[1].ID {
		t.Errorf("first d = %+v, want a new row", third[0])
	}
	if third[1] != (store.IngestResult{ID: third[0].ID, Duplicate: true}) {
		t.Errorf("second d = %+v, want duplicate of %d", third[1], third[0].ID)
	}
	if third[2].Duplicate || third[2].ID <= third[0].ID {
		t.Errorf("e = %+v, want a new row after d", third[2])
	}
	if third[3] != (store.IngestResult{ID: second[1].ID, Duplicate: true}) {
		t.Errorf("c again = %+v, want duplicate of %d", third[3], second[1].ID)
	}
	if n := backlog(t, s); n != 5 {
		t.Errorf("backlog = %d, want 5 rows (a b c d e)", n)
	}
}

func testIngestEmptyKey(t *testing.T, s store.Store) {
	bad := delivery("")
	if _, err := s.Ingest(t.Context(), []store.Delivery{delivery("ok"), bad}); err == nil {
		t.Fatal("Ingest with an empty dedupe key succeeded")
	}
	// Nothing of the failed batch is committed.
	if rows := pending(t, s, 0, 0); len(rows) != 0 {
		t.Errorf("failed batch left %d rows", len(rows))
	}
	if res := ingest(t, s, delivery("ok")); res[0].Duplicate {
		t.Errorf("delivery of the failed batch was committed: %+v", res[0])
	}
}

func testQuarantine(t *testing.T, s store.Store) {
	q1 := store.Delivery{
		DedupeKey: "x1", Route: "account", Quarantine: "not JSON", Headers: map[string]string{"content-type": "text/plain"},
		Body: []byte("garbage"), ReceivedAt: base,
	}
	q2 := q1 // the same body resent on the same route, under another key and reason
	q2.DedupeKey, q2.Quarantine, q2.ReceivedAt = "x2", "other reason", base.Add(time.Minute)
	q3 := q1 // the same body on another route
	q3.Route, q3.DedupeKey, q3.Quarantine, q3.ReceivedAt = "job", "", "unknown shape", base.Add(2*time.Minute)

	res := ingest(t, s, q1, delivery("in-1"))
	if !res[0].Quarantined || res[0].Duplicate || res[0].ID <= 0 {
		t.Errorf("q1 = %+v, want a new quarantine row", res[0])
	}
	if res[1].Quarantined || res[1].Duplicate || res[1].ID <= 0 {
		t.Errorf("inbox delivery = %+v, want a new inbox row", res[1])
	}
	res2 := ingest(t, s, q2, q3, q2)
	if res2[0] != (store.IngestResult{ID: res[0].ID, Quarantined: true, Duplicate: true}) {
		t.Errorf("q2 = %+v, want duplicate of quarantine row %d", res2[0], res[0].ID)
	}
	if !res2[1].Quarantined || res2[1].Duplicate || res2[1].ID == res[0].ID {
		t.Errorf("q3 = %+v, want a new quarantine row", res2[1])
	}
	if res2[2] != res2[0] {
		t.Errorf("q2 again in the same batch = %+v, want %+v", res2[2], res2[0])
	}

	rows, err := s.Quarantined(t.Context(), 0)
	if err != nil {
		t.Fatalf("Quarantined: %v", err)
	}
	if len(rows) != 2 {
		t.Fatalf("Quarantined = %d rows, want 2", len(rows))
	}
	for i, want := range []struct {
		id int64
		d  store.Delivery
	}{{res2[1].ID, q3}, {res[0].ID, q1}} {
		got := rows[i]
		if got.ID != want.id || got.Route != want.d.Route || got.Reason != want.d.Quarantine ||
			!mapsEqual(got.Headers, want.d.Headers) || !bytes.Equal(got.Body, want.d.Body) ||
			!got.ReceivedAt.Equal(want.d.ReceivedAt) {
			t.Errorf("quarantine row %d = %+v, want id %d and %+v", i, got, want.id, want.d)
		}
	}
	if rows, err := s.Quarantined(t.Context(), 1); err != nil || len(rows) != 1 || rows[0].ID != res2[1].ID {
		t.Errorf("Quarantined(limit 1) = %+v, %v; want the newest only", rows, err)
	}
	// Quarantine is not the inbox.
	if n := backlog(t, s); n != 1 {
		t.Errorf("backlog = %d, want 1", n)
	}
}

// A row applied by setting it aside (a callback after its job's final one) is done and kept in
// the quarantine with its reason, once however often it is set aside.
func testQuarantineInApply(t *testing.T, s store.Store) {
	d := delivery("late-1")
	d.Headers = map[string]string{"content-type": "application/json"}
	id := ingest(t, s, d)[0].ID
	row := inboxRow(t, s, id)
	apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Quarantine(ctx, row, "job is final"); err != nil {
			return err
		}
		return tx.Quarantine(ctx, row, "job is final") // kept once
	})
	if got := inboxRow(t, s, id); got.Status != store.InboxDone {
		t.Errorf("row status %s, want done", got.Status)
	}
	rows, err := s.Quarantined(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Reason != "job is final" || rows[0].Route != d.Route || !bytes.Equal(rows[0].Body, d.Body) ||
		!mapsEqual(rows[0].Headers, d.Headers) || !rows[0].ReceivedAt.Equal(d.ReceivedAt) {
		t.Fatalf("quarantine = %+v, want the row once with its reason", rows)
	}
	// Rolled back with its transaction, like every write of Apply.
	id2 := ingest(t, s, delivery("late-2"))[0].ID
	row2 := inboxRow(t, s, id2)
	err = s.Apply(t.Context(), id2, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Quarantine(ctx, row2, "x"); err != nil {
			return err
		}
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("Apply returned nil")
	}
	if rows, _ := s.Quarantined(t.Context(), 0); len(rows) != 1 {
		t.Errorf("quarantine has %d rows after a rollback, want 1", len(rows))
	}
}

func testInboxRowNotFound(t *testing.T, s store.Store) {
	if _, err := s.InboxRow(t.Context(), 12345); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("InboxRow(unknown) error = %v, want ErrNotFound", err)
	}
}

func pending(t *testing.T, s store.Store, after int64, limit int) []store.InboxRow {
	t.Helper()
	return must(s.PendingInbox(t.Context(), after, limit))(t, "PendingInbox(%d, %d)", after, limit)
}

func ids(rows []store.InboxRow) []int64 {
	out := []int64{}
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func apply(t *testing.T, s store.Store, id int64, fn func(ctx context.Context, tx store.Tx) error) {
	t.Helper()
	if fn == nil {
		fn = func(context.Context, store.Tx) error { return nil }
	}
	if err := s.Apply(t.Context(), id, fn); err != nil {
		t.Fatalf("Apply(%d): %v", id, err)
	}
}

// retryAt is when markFailed's rows that will be retried are due again.
var retryAt = base.Add(time.Minute)

// markFailed records a failed attempt of row id: final marks it failed, otherwise it is due
// again at retryAt.
func markFailed(t *testing.T, s store.Store, id int64, msg string, final bool) {
	t.Helper()
	var next time.Time
	if !final {
		next = retryAt
	}
	if err := s.MarkInboxFailed(t.Context(), id, msg, next); err != nil {
		t.Fatalf("MarkInboxFailed(%d): %v", id, err)
	}
}

// settle leaves three rows in the states the reads of pending rows tell apart: done applied,
// failed failed for good ("gave up"), and retried still pending after a failed attempt ("will
// retry").
func settle(t *testing.T, s store.Store, done, failed, retried int64) {
	t.Helper()
	apply(t, s, done, nil)
	markFailed(t, s, failed, "gave up", true)
	markFailed(t, s, retried, "will retry", false)
}

func testPendingInboxByKey(t *testing.T, s store.Store) {
	var ds []store.Delivery
	for i := range 6 {
		d := delivery(fmt.Sprint("k", i))
		if i%2 == 1 {
			d.JobID, d.PartitionKey = "session-2", "session-2"
		}
		ds = append(ds, d)
	}
	res := ingest(t, s, ds...)
	r := func(i int) int64 { return res[i].ID }
	// session-1 holds rows 0, 2, 4; session-2 rows 1, 3, 5.
	settle(t, s, r(0), r(3), r(5))
	for _, tc := range []struct {
		key   string
		upto  int64
		limit int
		want  []int64
	}{
		{"session-1", r(5), 0, []int64{r(2), r(4)}},
		{"session-1", r(4), 1, []int64{r(2)}},
		{"session-1", r(3), 0, []int64{r(2)}},
		{"session-1", r(0), 0, []int64{}},
		{"session-2", r(5), 0, []int64{r(1), r(5)}},
		{"session-2", r(4), 0, []int64{r(1)}},
		{"session-3", r(5), 0, []int64{}},
	} {
		rows, err := s.PendingInboxByKey(t.Context(), tc.key, tc.upto, tc.limit)
		if err != nil {
			t.Fatalf("PendingInboxByKey(%q, %d, %d): %v", tc.key, tc.upto, tc.limit, err)
		}
		if got := ids(rows); !slices.Equal(got, tc.want) {
			t.Errorf("PendingInboxByKey(%q, %d, %d) = %v, want %v", tc.key, tc.upto, tc.limit, got, tc.want)
		}
	}
	rows, err := s.PendingInboxByKey(t.Context(), "session-2", r(5), 0)
	if err != nil || len(rows) != 2 {
		t.Fatalf("PendingInboxByKey(session-2) = %v, %v", rows, err)
	}
	checkDelivery(t, rows[0].Delivery, ds[1])
	if rows[1].Attempts != 1 || rows[1].LastError != "will retry" {
		t.Errorf("retried row = %d/%q, want 1/\"will retry\"", rows[1].Attempts, rows[1].LastError)
	}
}

func testPendingInbox(t *testing.T, s store.Store) {
	var ds []store.Delivery
	for i := range 5 {
		ds = append(ds, delivery(fmt.Sprint("p", i)))
	}
	res := ingest(t, s, ds...)
	r := func(i int) int64 { return res[i].ID }
	settle(t, s, r(1), r(3), r(4))
	for _, tc := range []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 0, []int64{r(0), r(2), r(4)}},
		{0, 2, []int64{r(0), r(2)}},
		{r(0), 1, []int64{r(2)}},
		{r(2), 10, []int64{r(4)}},
		{r(4), 10, []int64{}},
	} {
		if got := ids(pending(t, s, tc.after, tc.limit)); !slices.Equal(got, tc.want) {
			t.Errorf("PendingInbox(%d, %d) = %v, want %v", tc.after, tc.limit, got, tc.want)
		}
	}
	rows := pending(t, s, 0, 1)
	checkDelivery(t, rows[0].Delivery, ds[0])
	last := pending(t, s, r(2), 1)[0]
	if last.Attempts != 1 || last.LastError != "will retry" || last.Status != store.InboxPending {
		t.Errorf("retried row = %d/%q/%s, want 1/\"will retry\"/pending", last.Attempts, last.LastError, last.Status)
	}
}

func backlog(t *testing.T, s store.Store) int64 {
	t.Helper()
	return must(s.InboxBacklog(t.Context()))(t, "InboxBacklog")
}

func testBacklog(t *testing.T, s store.Store) {
	if n := backlog(t, s); n != 0 {
		t.Errorf("empty store backlog = %d", n)
	}
	res := ingest(t, s, delivery("1"), delivery("2"), delivery("3"), delivery("4"), delivery("1"))
	steps := []struct {
		do   func()
		want int64
	}{
		{func() {}, 4},
		{func() { apply(t, s, res[0].ID, nil) }, 3},
		{func() { markFailed(t, s, res[1].ID, "e", false) }, 3},
		{func() { markFailed(t, s, res[1].ID, "e", true) }, 2},
		{func() { apply(t, s, res[1].ID, nil) }, 2}, // a replay of a failed row
		{func() { ingest(t, s, delivery("5")) }, 3},
	}
	for i, st := range steps {
		st.do()
		if n := backlog(t, s); n != st.want {
			t.Errorf("step %d: backlog = %d, want %d", i, n, st.want)
		}
	}
}

func testApplyOnce(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("once"))
	id := res[0].ID
	rec := jobRecord("job-1", api.StatusDone, api.KindPreRecorded, base, `{"team":"a"}`)
	calls := 0
	before := time.Now()
	apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
		calls++
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		if _, err := tx.AppendLiveMessage(ctx, liveMessage("session-1", id, 0)); err != nil {
			return err
		}
		return tx.PutArtifact(ctx, store.Artifact{JobID: "job-1", Name: "en.srt", Format: "srt", Language: "en", Path: "out/en.srt", Size: 10, CreatedAt: base})
	})
	after := time.Now()
	row := inboxRow(t, s, id)
	if row.Status != store.InboxDone || row.Attempts != 1 {
		t.Errorf("applied row = %s/%d, want done/1", row.Status, row.Attempts)
	}
	if row.ProcessedAt.Before(before.Add(-time.Second)) || row.ProcessedAt.After(after.Add(time.Second)) {
		t.Errorf("processed_at = %v, want between %v and %v", row.ProcessedAt, before, after)
	}

	err := s.Apply(t.Context(), id, func(context.Context, store.Tx) error {
		calls++
		return nil
	})
	if !errors.Is(err, store.ErrAlreadyApplied) {
		t.Errorf("second Apply error = %v, want ErrAlreadyApplied", err)
	}
	if calls != 1 {
		t.Errorf("fn ran %d times, want once", calls)
	}
	if row := inboxRow(t, s, id); row.Attempts != 1 || row.Status != store.InboxDone {
		t.Errorf("second Apply changed the row: %s/%d", row.Status, row.Attempts)
	}

	// The effects were committed with the row.
	checkJob(t, getJob(t, s, "job-1"), rec)
	if msgs := liveMessages(t, s, "session-1", 0, 0); len(msgs) != 1 || msgs[0].Seq != 1 {
		t.Errorf("live messages = %+v, want one with seq 1", msgs)
	}
	if arts := artifacts(t, s, "job-1"); len(arts) != 1 || arts[0].Name != "en.srt" {
		t.Errorf("artifacts = %+v, want en.srt", arts)
	}
	if n := backlog(t, s); n != 0 {
		t.Errorf("backlog after apply = %d", n)
	}
}

func testApplyUnknown(t *testing.T, s store.Store) {
	called := false
	err := s.Apply(t.Context(), 999, func(context.Context, store.Tx) error {
		called = true
		return nil
	})
	if !errors.Is(err, store.ErrNotFound) || called {
		t.Errorf("Apply(unknown) = %v, fn called %v; want ErrNotFound without calling fn", err, called)
	}
}

func testApplyRollback(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("rb"))
	id := res[0].ID
	boom := errors.New("boom")
	err := s.Apply(t.Context(), id, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutJob(ctx, jobRecord("job-rb", api.StatusDone, api.KindLive, base, "")); err != nil {
			return err
		}
		for range 3 {
			if _, err := tx.AppendLiveMessage(ctx, liveMessage("session-rb", id, 0)); err != nil {
				return err
			}
		}
		if err := tx.PutArtifact(ctx, store.Artifact{JobID: "job-rb", Name: "a.srt", Format: "srt", Path: "p"}); err != nil {
			return err
		}
		return fmt.Errorf("handler: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Apply error = %v, want fn's error", err)
	}
	if _, err := s.GetJob(t.Context(), "job-rb"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("job written by a failed Apply: GetJob error = %v", err)
	}
	if msgs := liveMessages(t, s, "session-rb", 0, 0); len(msgs) != 0 {
		t.Errorf("failed Apply left %d live messages", len(msgs))
	}
	if arts := artifacts(t, s, "job-rb"); len(arts) != 0 {
		t.Errorf("failed Apply left %d artifacts", len(arts))
	}
	row := inboxRow(t, s, id)
	if row.Status != store.InboxPending || row.Attempts != 0 || !row.ProcessedAt.IsZero() {
		t.Errorf("row after failed Apply = %s/%d/%v, want pending/0/zero", row.Status, row.Attempts, row.ProcessedAt)
	}
	// The rolled-back messages did not use up sequence numbers.
	var seq int64
	apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
		var err error
		seq, err = tx.AppendLiveMessage(ctx, liveMessage("session-rb", id, 0))
		return err
	})
	if seq != 1 {
		t.Errorf("seq after a rolled-back Apply = %d, want 1", seq)
	}
}

func testApplyReadsOwnWrites(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("own"))
	rec := jobRecord("job-own", api.StatusProcessing, api.KindPreRecorded, base, `{"k":1}`)
	apply(t, s, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		got, err := putJobReadBack(ctx, t, tx, rec)
		if err != nil {
			return err
		}
		// Read-modify-write, as the persist handler does.
		got.Job.Status = api.StatusDone
		got.Local.Deliveries++
		return tx.PutJob(ctx, got)
	})
	got := getJob(t, s, "job-own")
	if got.Job.Status != api.StatusDone || got.Local.Deliveries != rec.Local.Deliveries+1 {
		t.Errorf("job after Apply = %s/%d, want done/%d", got.Job.Status, got.Local.Deliveries, rec.Local.Deliveries+1)
	}
}

// putJobReadBack, in an Apply, checks that tx.Job does not find rec's job yet, stores rec with
// tx.PutJob and reads it back with tx.Job before the commit, as it was put; it returns what it
// read.
func putJobReadBack(ctx context.Context, t *testing.T, tx store.Tx, rec store.JobRecord) (store.JobRecord, error) {
	t.Helper()
	if _, err := tx.Job(ctx, rec.Job.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("tx.Job(unknown) error = %v, want ErrNotFound", err)
	}
	if err := tx.PutJob(ctx, rec); err != nil {
		return store.JobRecord{}, err
	}
	got, err := tx.Job(ctx, rec.Job.ID)
	if err != nil {
		return store.JobRecord{}, err
	}
	checkJob(t, got, rec)
	return got, nil
}

func testApplyFailedRow(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("replay"))
	markFailed(t, s, res[0].ID, "exhausted", true)
	apply(t, s, res[0].ID, nil)
	row := inboxRow(t, s, res[0].ID)
	if row.Status != store.InboxDone || row.Attempts != 2 {
		t.Errorf("replayed row = %s/%d, want done/2", row.Status, row.Attempts)
	}
}

func testMarkInboxFailed(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("f"))
	id := res[0].ID
	for i, st := range []struct {
		msg     string
		retryAt time.Time // zero: failed for good
		status  store.InboxStatus
	}{
		{"timeout", base.Add(time.Second), store.InboxPending},
		{"timeout again", base.Add(5 * time.Second), store.InboxPending},
		{"bad payload", time.Time{}, store.InboxFailed},
	} {
		before := time.Now()
		if err := s.MarkInboxFailed(t.Context(), id, st.msg, st.retryAt); err != nil {
			t.Fatalf("MarkInboxFailed(%d, %q): %v", id, st.msg, err)
		}
		after := time.Now()
		row := inboxRow(t, s, id)
		if row.Attempts != i+1 || row.LastError != st.msg || row.Status != st.status {
			t.Errorf("after attempt %d: %d/%q/%s, want %d/%q/%s", i+1, row.Attempts, row.LastError, row.Status, i+1, st.msg, st.status)
		}
		if !row.NextAttempt.Equal(st.retryAt) {
			t.Errorf("after attempt %d: next attempt %v, want %v", i+1, row.NextAttempt, st.retryAt)
		}
		if st.status == store.InboxFailed {
			if row.FailedAt.Before(before.Add(-time.Second)) || row.FailedAt.After(after.Add(time.Second)) {
				t.Errorf("failed_at = %v, want between %v and %v", row.FailedAt, before, after)
			}
		} else if !row.FailedAt.IsZero() {
			t.Errorf("pending row has failed_at %v", row.FailedAt)
		}
		if !row.ProcessedAt.IsZero() {
			t.Errorf("failed row has processed_at %v", row.ProcessedAt)
		}
	}
	if rows := pending(t, s, 0, 0); len(rows) != 0 {
		t.Errorf("failed row still pending: %v", ids(rows))
	}
	if err := s.MarkInboxFailed(t.Context(), 999, "x", retryAt); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MarkInboxFailed(unknown) error = %v, want ErrNotFound", err)
	}
	// A done row keeps its state: its effects happened.
	done := ingest(t, s, delivery("done"))[0].ID
	apply(t, s, done, nil)
	if err := s.MarkInboxFailed(t.Context(), done, "late", time.Time{}); !errors.Is(err, store.ErrAlreadyApplied) {
		t.Errorf("MarkInboxFailed(done row) error = %v, want ErrAlreadyApplied", err)
	}
	if row := inboxRow(t, s, done); row.Status != store.InboxDone || row.Attempts != 1 || row.LastError != "" {
		t.Errorf("done row changed: %s/%d/%q", row.Status, row.Attempts, row.LastError)
	}
}

func liveMessage(session string, inboxID int64, n int) store.LiveMessage {
	return store.LiveMessage{
		SessionID:  session,
		Type:       api.MessageTranscript,
		Category:   api.CategoryFinalTranscripts,
		CreatedAt:  base.Add(time.Duration(n) * time.Millisecond),
		ReceivedAt: base.Add(time.Second + time.Duration(n)*time.Microsecond),
		InboxID:    inboxID,
		Payload:    json.RawMessage(fmt.Sprintf(`{"type":"transcript", "n": %d}`, n)),
	}
}

func liveMessages(t *testing.T, s store.Store, session string, after int64, limit int) []store.LiveMessage {
	t.Helper()
	return must(s.LiveMessages(t.Context(), session, after, limit))(t, "LiveMessages(%s)", session)
}

func testLiveMessageFields(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("lm"))
	in := []store.LiveMessage{
		liveMessage("s-a", res[0].ID, 0),
		{SessionID: "s-a", Type: api.MessageSpeechStart, Category: api.CategorySpeechEvents, InboxID: res[0].ID,
			Payload: json.RawMessage("{\n  \"type\" : \"speech_start\"\n}")},
		liveMessage("s-b", res[0].ID, 7),
	}
	var seqs []int64
	apply(t, s, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		for _, m := range in {
			seq, err := tx.AppendLiveMessage(ctx, m)
			if err != nil {
				return err
			}
			seqs = append(seqs, seq)
		}
		return nil
	})
	if !slices.Equal(seqs, []int64{1, 2, 1}) {
		t.Errorf("sequence numbers = %v, want [1 2 1] (per session)", seqs)
	}
	got := liveMessages(t, s, "s-a", 0, 0)
	if len(got) != 2 {
		t.Fatalf("s-a has %d messages, want 2", len(got))
	}
	for i, m := range got {
		want := in[i]
		want.Seq = int64(i + 1)
		checkLiveMessage(t, m, want)
	}
	if got := liveMessages(t, s, "s-b", 0, 0); len(got) != 1 {
		t.Errorf("s-b has %d messages, want 1", len(got))
	} else {
		want := in[2]
		want.Seq = 1
		checkLiveMessage(t, got[0], want)
	}
	if got := liveMessages(t, s, "nobody", 0, 0); len(got) != 0 {
		t.Errorf("unknown session has %d messages", len(got))
	}
}

func checkLiveMessage(t *testing.T, got, want store.LiveMessage) {
	t.Helper()
	if got.SessionID != want.SessionID || got.Seq != want.Seq || got.Type != want.Type ||
		got.Category != want.Category || got.InboxID != want.InboxID ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ReceivedAt.Equal(want.ReceivedAt) {
		t.Errorf("live message = %+v, want %+v", got, want)
	}
	if !bytes.Equal(got.Payload, want.Payload) {
		t.Errorf("payload = %q, want the exact bytes %q", got.Payload, want.Payload)
	}
}

// testLiveSequenceConcurrent applies the messages of several sessions from many goroutines at
// once: every session must be numbered 1..n without gaps or repeats, and each Apply's
// returned number must be the one stored with its message.
func testLiveSequenceConcurrent(t *testing.T, s store.Store) {
	const sessions, perSession, workers = 4, 25, 16
	type item struct {
		session string
		inbox   int64
	}
	var ds []store.Delivery
	var items []item
	for i := range sessions * perSession {
		d := delivery(fmt.Sprint("live-", i))
		d.JobID = fmt.Sprint("session-", i%sessions)
		ds = append(ds, d)
	}
	for i, r := range ingest(t, s, ds...) {
		items = append(items, item{ds[i].JobID, r.ID})
	}

	work := make(chan item)
	var mu sync.Mutex
	seqOf := map[int64]int64{} // inbox id → seq returned
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for it := range work {
				err := s.Apply(context.Background(), it.inbox, func(ctx context.Context, tx store.Tx) error {
					seq, err := tx.AppendLiveMessage(ctx, liveMessage(it.session, it.inbox, int(it.inbox)))
					if err != nil {
						return err
					}
					mu.Lock()
					seqOf[it.inbox] = seq
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Errorf("Apply(%d): %v", it.inbox, err)
				}
			}
		})
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()

	for i := range sessions {
		session := fmt.Sprint("session-", i)
		msgs := liveMessages(t, s, session, 0, 0)
		if len(msgs) != perSession {
			t.Errorf("%s has %d messages, want %d", session, len(msgs), perSession)
			continue
		}
		seen := map[int64]bool{}
		for j, m := range msgs {
			if m.Seq != int64(j+1) {
				t.Errorf("%s message %d has seq %d", session, j, m.Seq)
			}
			if seqOf[m.InboxID] != m.Seq {
				t.Errorf("%s: Apply of inbox %d returned seq %d, stored %d", session, m.InboxID, seqOf[m.InboxID], m.Seq)
			}
			if seen[m.InboxID] {
				t.Errorf("%s: inbox %d stored twice", session, m.InboxID)
			}
			seen[m.InboxID] = true
		}
		page := liveMessages(t, s, session, 10, 5)
		if len(page) != 5 || page[0].Seq != 11 || page[4].Seq != 15 {
			t.Errorf("LiveMessages(%s, 10, 5) = %d messages from %v, want seq 11..15", session, len(page), page)
		}
		if rest := liveMessages(t, s, session, perSession, 10); len(rest) != 0 {
			t.Errorf("messages after the last: %d", len(rest))
		}
	}
	if n := backlog(t, s); n != 0 {
		t.Errorf("backlog after applying everything = %d", n)
	}
}

// jobRecord builds a record with members the model does not know, so the round trip checks
// that records come back as they were put.
func jobRecord(id string, status api.JobStatus, kind api.JobKind, created time.Time, metadata string) store.JobRecord {
	raw := fmt.Sprintf(`{"id":%q,"request_id":"G-%s","version":2,"status":%q,"created_at":%q,"kind":%q,
		"file":{"id":"file-1","filename":"talk.mp3","audio_duration":12.25,"file_new":{"x":null}},
		"request_params":{"audio_url":"https://example.com/talk.mp3","callback":true,"rp_new":[1,2]},
		"top_new":{"nested":"Zoë"}}`, id, id, status, created.UTC().Format(api.TimeLayout), kind)
	var j api.Job
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		panic(fmt.Sprintf("storetest: job fixture: %v", err))
	}
	if metadata != "" {
		j.CustomMetadata = json.RawMessage(metadata)
	}
	if status.Final() {
		j.CompletedAt = api.PtrTime(created.Add(42 * time.Second))
	}
	return store.JobRecord{Job: j, Local: store.Local{
		Source: "callback", ReceivedAt: base, UpdatedAt: base.Add(time.Minute), Deliveries: 2,
		ErrorMessage: "", Resolution: "",
	}}
}

func getJob(t *testing.T, s store.Store, id string) store.JobRecord {
	t.Helper()
	return must(s.GetJob(t.Context(), id))(t, "GetJob(%s)", id)
}

// checkJob compares records by their encodings: the record must come back byte for byte.
func checkJob(t *testing.T, got, want store.JobRecord) {
	t.Helper()
	if g, w := testjson.Marshal(t, got.Job), testjson.Marshal(t, want.Job); !bytes.Equal(g, w) {
		t.Errorf("job record =\n%s\nwant\n%s", g, w)
	}
	if g, w := testjson.Marshal(t, got.Local), testjson.Marshal(t, want.Local); !bytes.Equal(g, w) {
		t.Errorf("local = %s, want %s", g, w)
	}
}

func testJobRoundTrip(t *testing.T, s store.Store) {
	rec := jobRecord("job-rt", api.StatusDone, api.KindPreRecorded, base,
		`{"user":"Zoë","ids":[1,2],"huge":123456789012345678901234567890}`)
	rec.Local = store.Local{Source: "webhook", UpdatedAt: base, Deliveries: 1, ErrorMessage: "e", Resolution: "no API key"}
	if err := s.PutJob(t.Context(), rec); err != nil {
		t.Fatalf("PutJob: %v", err)
	}
	got := getJob(t, s, "job-rt")
	checkJob(t, got, rec)
	if len(got.Job.Extra) == 0 {
		t.Error("unknown members of the record were lost")
	}
	if _, err := s.GetJob(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetJob(unknown) error = %v, want ErrNotFound", err)
	}
	if err := s.PutJob(t.Context(), store.JobRecord{}); err == nil {
		t.Error("PutJob without an id succeeded")
	}
}

func testCreateJob(t *testing.T, s store.Store) {
	first := jobRecord("job-create", api.StatusQueued, api.KindPreRecorded, base, `{"by":"submit"}`)
	created, err := s.CreateJob(t.Context(), first)
	if err != nil || !created {
		t.Fatalf("CreateJob = %v, %v; want created", created, err)
	}
	// A second create (the submitter after a faster callback) changes nothing.
	second := jobRecord("job-create", api.StatusDone, api.KindPreRecorded, base, `{"by":"callback"}`)
	created, err = s.CreateJob(t.Context(), second)
	if err != nil || created {
		t.Fatalf("CreateJob again = %v, %v; want not created", created, err)
	}
	checkJob(t, getJob(t, s, "job-create"), first)
	// PutJob still replaces.
	if err := s.PutJob(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	checkJob(t, getJob(t, s, "job-create"), second)
}

func testJobUpdate(t *testing.T, s store.Store) {
	rec := jobRecord("job-up", api.StatusQueued, api.KindLive, base, `{"team":"a"}`)
	if err := s.PutJob(t.Context(), rec); err != nil {
		t.Fatalf("PutJob: %v", err)
	}
	rec.Job.Status = api.StatusDone
	rec.Job.CustomMetadata = json.RawMessage(`{"team":"b"}`)
	rec.Local.Deliveries = 5
	if err := s.PutJob(t.Context(), rec); err != nil {
		t.Fatalf("PutJob again: %v", err)
	}
	checkJob(t, getJob(t, s, "job-up"), rec)
	// The list filters follow the new record.
	for _, tc := range []struct {
		q    api.ListQuery
		want int
	}{
		{api.ListQuery{Status: []api.JobStatus{api.StatusQueued}}, 0},
		{api.ListQuery{Status: []api.JobStatus{api.StatusDone}}, 1},
		{api.ListQuery{CustomMetadata: json.RawMessage(`{"team":"a"}`)}, 0},
		{api.ListQuery{CustomMetadata: json.RawMessage(`{"team":"b"}`)}, 1},
	} {
		page, err := s.ListJobs(t.Context(), tc.q)
		if err != nil {
			t.Fatalf("ListJobs: %v", err)
		}
		if len(page.Items) != tc.want {
			t.Errorf("ListJobs(%s) = %d items, want %d", tc.q.Values().Encode(), len(page.Items), tc.want)
		}
	}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// listFixture is newest first: j08 … j01, with j03 before j02 at the same created_at (ties
// go by id, descending).
func listFixture() []store.JobRecord {
	return []store.JobRecord{
		jobRecord("j08", api.StatusQueued, api.KindPreRecorded, utc("2024-03-03T08:30:00Z"), `{"tags":{"env":"prod","tier":1,"x":true},"team":"c"}`),
		jobRecord("j07", api.StatusDone, api.KindPreRecorded, utc("2024-03-02T00:00:00Z"), `{"big":123456789012345678901234567890}`),
		jobRecord("j06", api.StatusDone, api.KindLive, utc("2024-03-01T23:59:59.999Z"), `{"team":"a","n":1,"list":[1,2]}`),
		jobRecord("j05", api.StatusDone, api.KindPreRecorded, utc("2024-03-01T10:00:00.001Z"), ""),
		jobRecord("j04", api.StatusProcessing, api.KindLive, utc("2024-03-01T00:00:00Z"), `{"team":"a","tags":{"env":"dev"}}`),
		jobRecord("j03", api.StatusError, api.KindPreRecorded, utc("2024-02-29T12:00:00Z"), `{"team":"a","n":1.0}`),
		jobRecord("j02", api.StatusQueued, api.KindLive, utc("2024-02-29T12:00:00Z"), `{"team":"b"}`),
		jobRecord("j01", api.StatusDone, api.KindPreRecorded, utc("2024-02-28T09:00:00Z"), `{"team":"a","tags":{"env":"prod","tier":1}}`),
	}
}

func putJobs(t *testing.T, s store.Store, recs []store.JobRecord) {
	t.Helper()
	// Put in an order unrelated to created_at, so the order of the list comes from the data.
	for _, i := range []int{3, 0, 7, 5, 1, 6, 2, 4} {
		if err := s.PutJob(t.Context(), recs[i]); err != nil {
			t.Fatalf("PutJob(%s): %v", recs[i].Job.ID, err)
		}
	}
}

func pageIDs(p store.JobPage) []string {
	out := []string{}
	for _, r := range p.Items {
		out = append(out, r.Job.ID)
	}
	return out
}

func testListJobsFilters(t *testing.T, s store.Store) {
	recs := listFixture()
	putJobs(t, s, recs)
	all := []string{"j08", "j07", "j06", "j05", "j04", "j03", "j02", "j01"}
	st := func(v ...api.JobStatus) []api.JobStatus { return v }
	meta := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name string
		q    api.ListQuery
		want []string
	}{
		{"none", api.ListQuery{}, all},
		{"status", api.ListQuery{Status: st(api.StatusDone)}, []string{"j07", "j06", "j05", "j01"}},
		{"statuses", api.ListQuery{Status: st(api.StatusDone, api.StatusError)}, []string{"j07", "j06", "j05", "j03", "j01"}},
		{"kind", api.ListQuery{Kind: []api.JobKind{api.KindLive}}, []string{"j06", "j04", "j02"}},
		{"kind+status", api.ListQuery{Kind: []api.JobKind{api.KindLive}, Status: st(api.StatusDone)}, []string{"j06"}},
		{"date", api.ListQuery{Date: "2024-03-01"}, []string{"j06", "j05", "j04"}},
		{"leap day", api.ListQuery{Date: "2024-02-29"}, []string{"j03", "j02"}},
		{"empty day", api.ListQuery{Date: "2024-03-04"}, []string{}},
		{"before (exclusive)", api.ListQuery{BeforeDate: "2024-03-01T00:00:00Z"}, []string{"j03", "j02", "j01"}},
		{"before, other zone", api.ListQuery{BeforeDate: "2024-03-01T01:00:00+01:00"}, []string{"j03", "j02", "j01"}},
		{"after (exclusive)", api.ListQuery{AfterDate: "2024-03-01T00:00:00Z"}, []string{"j08", "j07", "j06", "j05"}},
		{"between, to the millisecond", api.ListQuery{AfterDate: "2024-02-29T00:00:00Z", BeforeDate: "2024-03-01T23:59:59.999Z"}, []string{"j05", "j04", "j03", "j02"}},
		{"metadata member", api.ListQuery{CustomMetadata: meta(`{"team":"a"}`)}, []string{"j06", "j04", "j03", "j01"}},
		{"metadata nested subset", api.ListQuery{CustomMetadata: meta(`{"tags":{"env":"prod"}}`)}, []string{"j08", "j01"}},
		{"metadata nested two members", api.ListQuery{CustomMetadata: meta(`{"tags":{"env":"prod","tier":1}}`)}, []string{"j08", "j01"}},
		{"metadata number forms", api.ListQuery{CustomMetadata: meta(`{"tags":{"tier":1.0}}`)}, []string{"j08", "j01"}},
		{"metadata 1 equals 1.0", api.ListQuery{CustomMetadata: meta(`{"n":1}`)}, []string{"j06", "j03"}},
		{"metadata array exact", api.ListQuery{CustomMetadata: meta(`{"list":[1]}`)}, []string{}},
		{"metadata array", api.ListQuery{CustomMetadata: meta(`{"list":[1,2]}`)}, []string{"j06"}},
		{"metadata big number", api.ListQuery{CustomMetadata: meta(`{"big":123456789012345678901234567890}`)}, []string{"j07"}},
		{"metadata big number off by one", api.ListQuery{CustomMetadata: meta(`{"big":123456789012345678901234567891}`)}, []string{}},
		{"metadata empty object", api.ListQuery{CustomMetadata: meta(`{}`)}, all},
		{"metadata+status", api.ListQuery{CustomMetadata: meta(`{"team":"a"}`), Status: st(api.StatusDone)}, []string{"j06", "j01"}},
		{"metadata+kind+date", api.ListQuery{CustomMetadata: meta(`{"team":"a"}`), Kind: []api.JobKind{api.KindLive}, Date: "2024-03-01"}, []string{"j06", "j04"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The expectations are those of api.ListQuery.Matches, the service's own rule.
			var ref []string
			for i := range recs {
				if tc.q.Matches(&recs[i].Job) {
					ref = append(ref, recs[i].Job.ID)
				}
			}
			if !slices.Equal(ref, tc.want) && len(ref)+len(tc.want) > 0 {
				t.Fatalf("fixture disagrees with api.ListQuery.Matches: %v vs %v", ref, tc.want)
			}
			page, err := s.ListJobs(t.Context(), tc.q)
			if err != nil {
				t.Fatalf("ListJobs: %v", err)
			}
			if got := pageIDs(page); !slices.Equal(got, tc.want) {
				t.Errorf("ListJobs = %v, want %v", got, tc.want)
			}
			if page.More {
				t.Error("More set on the only page")
			}
		})
	}
	// Items are the full records.
	page, err := s.ListJobs(t.Context(), api.ListQuery{})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	for i, rec := range page.Items {
		checkJob(t, rec, recs[i])
	}
}

func testListJobsPaging(t *testing.T, s store.Store) {
	putJobs(t, s, listFixture())
	n := func(v int) *int { return &v }
	team := json.RawMessage(`{"team":"a"}`)
	for _, tc := range []struct {
		q    api.ListQuery
		want []string
		more bool
	}{
		{api.ListQuery{Limit: n(3)}, []string{"j08", "j07", "j06"}, true},
		{api.ListQuery{Offset: n(3), Limit: n(3)}, []string{"j05", "j04", "j03"}, true},
		{api.ListQuery{Offset: n(6), Limit: n(3)}, []string{"j02", "j01"}, false},
		{api.ListQuery{Offset: n(5), Limit: n(3)}, []string{"j03", "j02", "j01"}, false},
		{api.ListQuery{Offset: n(8), Limit: n(3)}, []string{}, false},
		{api.ListQuery{Offset: n(100)}, []string{}, false},
		{api.ListQuery{Limit: n(7)}, []string{"j08", "j07", "j06", "j05", "j04", "j03", "j02"}, true},
		{api.ListQuery{Limit: n(8)}, []string{"j08", "j07", "j06", "j05", "j04", "j03", "j02", "j01"}, false},
		{api.ListQuery{Limit: n(1), Status: []api.JobStatus{api.StatusDone}}, []string{"j07"}, true},
		{api.ListQuery{Offset: n(3), Limit: n(1), Status: []api.JobStatus{api.StatusDone}}, []string{"j01"}, false},
		{api.ListQuery{Limit: n(2), BeforeDate: "2024-03-01T00:00:00Z"}, []string{"j03", "j02"}, true},
		{api.ListQuery{Offset: n(1), Limit: n(1), AfterDate: "2024-03-01T00:00:00Z"}, []string{"j07"}, true},
		{api.ListQuery{Offset: n(1), Limit: n(2), Date: "2024-03-01"}, []string{"j05", "j04"}, false},
		{api.ListQuery{Limit: n(2), CustomMetadata: team}, []string{"j06", "j04"}, true},
		{api.ListQuery{Offset: n(2), Limit: n(2), CustomMetadata: team}, []string{"j03", "j01"}, false},
		{api.ListQuery{Offset: n(1), Limit: n(2), CustomMetadata: team}, []string{"j04", "j03"}, true},
	} {
		page, err := s.ListJobs(t.Context(), tc.q)
		if err != nil {
			t.Fatalf("ListJobs: %v", err)
		}
		if got := pageIDs(page); !slices.Equal(got, tc.want) || page.More != tc.more {
			t.Errorf("ListJobs(%s) = %v more=%v, want %v more=%v", tc.q.Values().Encode(), got, page.More, tc.want, tc.more)
		}
	}
	// Without a limit, a page holds api.DefaultListLimit items.
	var many []store.JobRecord
	for i := range api.DefaultListLimit + 5 {
		many = append(many, jobRecord(fmt.Sprintf("m%02d", i), api.StatusQueued, api.KindLive, base.Add(time.Duration(i)*time.Second), ""))
	}
	for _, rec := range many {
		if err := s.PutJob(t.Context(), rec); err != nil {
			t.Fatalf("PutJob: %v", err)
		}
	}
	page, err := s.ListJobs(t.Context(), api.ListQuery{Kind: []api.JobKind{api.KindLive}, Status: []api.JobStatus{api.StatusQueued}})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if len(page.Items) != api.DefaultListLimit || !page.More || page.Items[0].Job.ID != fmt.Sprintf("m%02d", len(many)-1) {
		t.Errorf("default page = %d items from %v more=%v, want %d from the newest, more", len(page.Items), pageIDs(page), page.More, api.DefaultListLimit)
	}
}

func artifacts(t *testing.T, s store.Store, jobID string) []store.Artifact {
	t.Helper()
	return must(s.Artifacts(t.Context(), jobID))(t, "Artifacts(%s)", jobID)
}

func testArtifacts(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("art1"), delivery("art2"))
	vtt := store.Artifact{JobID: "job-a", Name: "en.vtt", Format: "vtt", Language: "en", Path: "out/job-a/en.vtt", Size: 120, CreatedAt: base}
	srt := store.Artifact{JobID: "job-a", Name: "en.srt", Format: "srt", Language: "en", Path: "out/job-a/en.srt", Size: 100, CreatedAt: base}
	other := store.Artifact{JobID: "job-b", Name: "fr.srt", Format: "srt", Language: "fr", Path: "out/job-b/fr.srt", Size: 1, CreatedAt: base}
	put := func(id int64, as ...store.Artifact) {
		apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
			for _, a := range as {
				if err := tx.PutArtifact(ctx, a); err != nil {
					return err
				}
			}
			return nil
		})
	}
	put(res[0].ID, vtt, srt, other)
	// The same name again replaces the artifact (a re-render).
	srt2 := srt
	srt2.Size, srt2.Path, srt2.CreatedAt = 150, "out/job-a/en.v2.srt", base.Add(time.Hour)
	put(res[1].ID, srt2)

	got := artifacts(t, s, "job-a")
	want := []store.Artifact{srt2, vtt}
	if len(got) != len(want) {
		t.Fatalf("Artifacts = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.JobID != w.JobID || g.Name != w.Name || g.Format != w.Format || g.Language != w.Language ||
			g.Path != w.Path || g.Size != w.Size || !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("artifact %d = %+v, want %+v", i, g, w)
		}
	}
	if got := artifacts(t, s, "job-none"); len(got) != 0 {
		t.Errorf("Artifacts(unknown job) = %+v", got)
	}
}

func lookup(t *testing.T, s store.Store, hash []byte) store.Token {
	t.Helper()
	return must(s.LookupToken(t.Context(), hash))(t, "LookupToken")
}

func testTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	h := store.HashToken("token-1")
	if err := s.CreateToken(ctx, store.Token{Hash: h, Kind: api.KindPreRecorded, CreatedAt: base}); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	tok := lookup(t, s, h)
	if !bytes.Equal(tok.Hash, h) || tok.JobID != "" || tok.Kind != api.KindPreRecorded ||
		!tok.CreatedAt.Equal(base) || !tok.RevokedAt.IsZero() {
		t.Errorf("token = %+v", tok)
	}
	if err := s.CreateToken(ctx, store.Token{Hash: h, Kind: api.KindLive}); err == nil {
		t.Error("CreateToken with an existing hash succeeded")
	}
	if _, err := s.LookupToken(ctx, store.HashToken("other")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LookupToken(unknown) error = %v, want ErrNotFound", err)
	}

	if err := s.BindToken(ctx, h, "job-1"); err != nil {
		t.Fatalf("BindToken: %v", err)
	}
	if err := s.BindToken(ctx, h, "job-1"); err != nil {
		t.Errorf("BindToken to the same job: %v", err)
	}
	if err := s.BindToken(ctx, h, "job-2"); !errors.Is(err, store.ErrTokenBound) {
		t.Errorf("BindToken to another job error = %v, want ErrTokenBound", err)
	}
	if tok := lookup(t, s, h); tok.JobID != "job-1" {
		t.Errorf("token bound to %q, want job-1", tok.JobID)
	}
	if err := s.BindToken(ctx, store.HashToken("other"), "job-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("BindToken(unknown) error = %v, want ErrNotFound", err)
	}

	// A token minted for a known job (a live session's) is bound from the start.
	h2 := store.HashToken("token-2")
	if err := s.CreateToken(ctx, store.Token{Hash: h2, JobID: "live-1", Kind: api.KindLive, CreatedAt: base}); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if err := s.BindToken(ctx, h2, "job-1"); !errors.Is(err, store.ErrTokenBound) {
		t.Errorf("BindToken(pre-bound) error = %v, want ErrTokenBound", err)
	}

	before := time.Now()
	if err := s.RevokeToken(ctx, h); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	after := time.Now()
	revoked := lookup(t, s, h)
	if revoked.RevokedAt.Before(before.Add(-time.Second)) || revoked.RevokedAt.After(after.Add(time.Second)) {
		t.Errorf("revoked_at = %v, want between %v and %v", revoked.RevokedAt, before, after)
	}
	if revoked.JobID != "job-1" {
		t.Errorf("revoking changed the job to %q", revoked.JobID)
	}
	if err := s.RevokeToken(ctx, h); err != nil {
		t.Errorf("RevokeToken again: %v", err)
	}
	if again := lookup(t, s, h); !again.RevokedAt.Equal(revoked.RevokedAt) {
		t.Errorf("second revoke moved revoked_at from %v to %v", revoked.RevokedAt, again.RevokedAt)
	}
	if err := s.RevokeToken(ctx, store.HashToken("other")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeToken(unknown) error = %v, want ErrNotFound", err)
	}
	if tok := lookup(t, s, h2); !tok.RevokedAt.IsZero() {
		t.Errorf("revoking one token revoked another")
	}
}

// testTokenBindConcurrent: the first deliveries of a job can race to bind its token; exactly
// one job wins.
func testTokenBindConcurrent(t *testing.T, s store.Store) {
	h := store.HashToken("race")
	if err := s.CreateToken(t.Context(), store.Token{Hash: h, Kind: api.KindPreRecorded, CreatedAt: base}); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.BindToken(context.Background(), h, fmt.Sprint("job-", i)) })
	}
	wg.Wait()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
			if tok := lookup(t, s, h); tok.JobID != fmt.Sprint("job-", i) {
				t.Errorf("job-%d won but the token is bound to %s", i, tok.JobID)
			}
		case !errors.Is(err, store.ErrTokenBound):
			t.Errorf("BindToken: %v", err)
		}
	}
	if winners != 1 {
		t.Errorf("%d binds succeeded, want 1", winners)
	}
}

// testConcurrentMixed runs ingestion, application and every read at once (for -race and for
// lock errors between the writer and the readers).
func testConcurrentMixed(t *testing.T, s store.Store) {
	putJobs(t, s, listFixture())
	const writers, perWriter = 4, 25
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				d := delivery(fmt.Sprintf("mix-%d-%d", w, i))
				res, err := s.Ingest(context.Background(), []store.Delivery{d, d})
				if err != nil {
					t.Errorf("Ingest: %v", err)
					return
				}
				if !res[1].Duplicate || res[1].ID != res[0].ID {
					t.Errorf("in-batch duplicate = %+v, want duplicate of %d", res[1], res[0].ID)
				}
				err = s.Apply(context.Background(), res[0].ID, func(ctx context.Context, tx store.Tx) error {
					_, err := tx.AppendLiveMessage(ctx, liveMessage(fmt.Sprint("mix-", w), res[0].ID, i))
					return err
				})
				if err != nil {
					t.Errorf("Apply: %v", err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx := context.Background()
				if _, err := s.PendingInbox(ctx, 0, 50); err != nil {
					t.Errorf("PendingInbox: %v", err)
					return
				}
				if _, err := s.ListJobs(ctx, api.ListQuery{CustomMetadata: json.RawMessage(`{"team":"a"}`)}); err != nil {
					t.Errorf("ListJobs: %v", err)
					return
				}
				if _, err := s.InboxBacklog(ctx); err != nil {
					t.Errorf("InboxBacklog: %v", err)
					return
				}
				if _, err := s.LiveMessages(ctx, "mix-0", 0, 10); err != nil {
					t.Errorf("LiveMessages: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for w := range writers {
		if msgs := liveMessages(t, s, fmt.Sprint("mix-", w), 0, 0); len(msgs) != perWriter {
			t.Errorf("mix-%d has %d messages, want %d", w, len(msgs), perWriter)
		}
	}
	if n := backlog(t, s); n != 0 {
		t.Errorf("backlog = %d, want 0", n)
	}
}

func testPing(t *testing.T, s store.Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}
