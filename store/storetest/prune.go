package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The Prune subtest. Times the caller gives (received_at, completed_at, failed_at) are at base,
// years ago; the store stamps processed_at and delivered_at itself, with the wall clock, so
// the runs prune at the wall clock plus an offset.

// pruneFixture stores one row of every state each kind can be in, and returns the ids of the
// inbox rows: done (twice), pending, failed.
func pruneFixture(t *testing.T, s store.Store, wall time.Time) (done1, done2, pending, failed int64) {
	quarantined := delivery("q1")
	quarantined.Quarantine = "not JSON"
	res := ingest(t, s, delivery("p-done1"), delivery("p-done2"), delivery("p-pending"), delivery("p-failed"), quarantined)
	done1, done2, pending, failed = res[0].ID, res[1].ID, res[2].ID, res[3].ID

	final := func(id string, kind api.JobKind, event string) store.JobRecord {
		rec := jobRecord(id, api.StatusDone, kind, base, "")
		rec.Local.Final = event
		return rec
	}
	late := final("sess-late", api.KindLive, "live.end_session")
	late.Job.CompletedAt = api.PtrTime(wall.Add(71 * time.Hour)) // ended an hour before the runs below
	messages := map[string][]api.MessageCategory{
		"sess-ended": {api.CategoryPartialTranscripts, api.CategoryPartialTranscripts, api.CategoryFinalTranscripts,
			api.CategoryAcknowledgments, api.CategoryLifecycleEvents},
		"sess-open": {api.CategoryPartialTranscripts, api.CategoryPartialTranscripts},
		// Its last message is a partial: kept while the record is, so that no number is reused.
		"sess-late": {api.CategoryFinalTranscripts, api.CategoryPartialTranscripts},
	}
	apply(t, s, done1, func(ctx context.Context, tx store.Tx) error {
		for _, rec := range []store.JobRecord{
			final("job-old", api.KindPreRecorded, "transcription.success"),
			final("sess-ended", api.KindLive, "live.end_session"),
			late,
			jobRecord("sess-open", api.StatusProcessing, api.KindLive, base, ""),
			// Done by its status, but not final: a record closes on its final delivery only.
			jobRecord("job-unclosed", api.StatusDone, api.KindPreRecorded, base, ""),
		} {
			if err := tx.PutJob(ctx, rec); err != nil {
				return err
			}
		}
		for _, session := range slices.Sorted(maps.Keys(messages)) {
			for n, c := range messages[session] {
				m := liveMessage(session, done1, n)
				m.Category = c
				if _, err := tx.AppendLiveMessage(ctx, m); err != nil {
					return err
				}
			}
		}
		for _, a := range []store.Artifact{
			{JobID: "job-old", Name: "en.srt", Format: "srt", Language: "en", Path: "a/job-old/en.srt", CreatedAt: base},
			{JobID: "job-old", Name: "en.vtt", Format: "vtt", Language: "en", Path: "a/job-old/en.vtt", CreatedAt: base},
			{JobID: "job-unclosed", Name: "en.srt", Format: "srt", Language: "en", Path: "a/job-unclosed/en.srt", CreatedAt: base},
		} {
			if err := tx.PutArtifact(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})
	apply(t, s, done2, nil)
	markFailed(t, s, failed, "gave up", true)
	// The names of a pruned job's speakers go with it; an unclosed job keeps its own.
	for _, id := range []string{"job-old", "job-unclosed"} {
		setSpeakers(t, s, store.Speakers{JobID: id, Names: api.SpeakerNames{0: "Ann"}, Revision: 2}, 0, nil)
	}

	// Sink deliveries: delivered, waiting for a retry, dead, leased. e-delivered goes to s2
	// too, where it stays queued; e-both is delivered to s and s3.
	enqueue(t, s, queued("s", "e-delivered", "", 0), queued("s", "e-retry", "", 0), queued("s", "e-dead", "", 0),
		queued("s", "e-leased", "", 0), queued("s2", "e-delivered", "", 0), queued("s", "e-both", "", 0),
		queued("s3", "e-both", "", 0))
	byID := map[string]int64{}
	for _, d := range claim(t, s, "s", false, base.Add(time.Second), 0) {
		byID[d.EventID] = d.ID
	}
	ctx := t.Context()
	for _, id := range []int64{byID["e-delivered"], byID["e-both"], claim(t, s, "s3", false, base.Add(time.Second), 0)[0].ID} {
		if err := s.CompleteSinkDelivery(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RetrySinkDelivery(ctx, byID["e-retry"], base.Add(time.Hour), "503"); err != nil {
		t.Fatal(err)
	}
	if err := s.KillSinkDelivery(ctx, byID["e-dead"], "410", base); err != nil {
		t.Fatal(err)
	}
	return done1, done2, pending, failed
}

func testPrune(t *testing.T, s store.Store) {
	wall := time.Now()
	done1, done2, waiting, failed := pruneFixture(t, s, wall)
	full := store.RetentionPolicy{
		Inbox: 24 * time.Hour, DeadLetters: 24 * time.Hour, Quarantine: 24 * time.Hour, SinkDelivered: 24 * time.Hour,
		Jobs: 24 * time.Hour, BatchSize: 2,
		Live: map[api.MessageCategory]time.Duration{
			api.CategoryPartialTranscripts: time.Hour, api.CategoryAcknowledgments: time.Hour,
			api.CategoryFinalTranscripts: 24 * time.Hour,
		},
	}
	everything := map[store.PruneKind]int64{
		store.PruneInbox: 2, store.PruneInboxFailed: 1,
		store.LiveKind(api.CategoryPartialTranscripts): 2, store.LiveKind(api.CategoryAcknowledgments): 1,
		store.LiveKind(api.CategoryFinalTranscripts): 2,
		store.PruneJobs: 2, store.PruneArtifacts: 2, store.PruneSessionRest: 1,
		// e-dead's event, and e-both's once both its deliveries are gone; e-delivered's stays
		// for s2.
		store.PruneSinkDelivered: 3, store.PruneDeadLetters: 1, store.PruneEvents: 2, store.PruneQuarantine: 1,
	}
	var removed []string
	full.RemoveArtifacts = func(_ context.Context, arts []store.Artifact) error {
		for _, a := range arts {
			removed = append(removed, a.Path)
		}
		return nil
	}
	steps := []struct {
		name   string
		policy store.RetentionPolicy
		now    time.Time
		dryRun bool
		want   map[store.PruneKind]int64
	}{
		// Rows the store stamped an hour ago are younger than a day.
		{"young rows stay", store.RetentionPolicy{Inbox: 24 * time.Hour, SinkDelivered: 24 * time.Hour}, wall.Add(time.Hour), false, nil},
		{"nothing kept for ever goes", store.RetentionPolicy{}, wall.Add(1000 * time.Hour), false, nil},
		{"dry run counts", full, wall.Add(72 * time.Hour), true, everything},
		{"run deletes what the dry run counted", full, wall.Add(72 * time.Hour), false, everything},
		{"a second run finds nothing", full, wall.Add(72 * time.Hour), false, nil},
	}
	for _, st := range steps {
		rep, err := s.Prune(t.Context(), st.policy, st.now, st.dryRun)
		if err != nil {
			t.Fatalf("%s: Prune: %v", st.name, err)
		}
		if !maps.Equal(rep.Rows, st.want) {
			t.Fatalf("%s: rows = %v, want %v", st.name, rep.Rows, st.want)
		}
		if rep.DryRun != st.dryRun {
			t.Errorf("%s: DryRun = %v", st.name, rep.DryRun)
		}
	}
	if want := []string{"a/job-old/en.srt", "a/job-old/en.vtt"}; !slices.Equal(removed, want) {
		t.Errorf("artifacts removed = %v, want %v (once, by the run, not the dry run)", removed, want)
	}

	// What is at work, or not final, is all there.
	if got := ids(pending(t, s, 0, 0)); !slices.Equal(got, []int64{waiting}) {
		t.Errorf("pending rows = %v, want [%d]", got, waiting)
	}
	for _, id := range []int64{done1, done2, failed} {
		if _, err := s.InboxRow(t.Context(), id); err == nil {
			t.Errorf("inbox row %d is still there", id)
		}
	}
	for _, id := range []string{"sess-open", "sess-late", "job-unclosed"} {
		getJob(t, s, id)
	}
	for _, id := range []string{"job-old", "sess-ended"} {
		if _, err := s.GetJob(t.Context(), id); err == nil {
			t.Errorf("job %s is still there", id)
		}
	}
	for session, want := range map[string][]api.MessageCategory{
		"sess-open":  {api.CategoryPartialTranscripts, api.CategoryPartialTranscripts},
		"sess-late":  {api.CategoryPartialTranscripts},
		"sess-ended": nil,
	} {
		var got []api.MessageCategory
		for _, m := range liveMessages(t, s, session, 0, 0) {
			got = append(got, m.Category)
		}
		if !slices.Equal(got, want) {
			t.Errorf("messages of %s = %v, want %v", session, got, want)
		}
	}
	if got := speakersOf(t, s, "job-old"); got.Names != nil || got.Revision != 0 {
		t.Errorf("speakers of the pruned job-old = %+v, want none", got)
	}
	if got := speakersOf(t, s, "job-unclosed"); got.Names[0] != "Ann" {
		t.Errorf("speakers of job-unclosed = %+v, want kept", got)
	}
	if got := artifacts(t, s, "job-unclosed"); len(got) != 1 {
		t.Errorf("artifacts of job-unclosed = %v", got)
	}
	if n, err := s.SinkDepth(t.Context(), "s"); err != nil || n != 2 {
		t.Errorf("SinkDepth = %d, %v; want 2 (retrying and leased)", n, err)
	}
	// The event a queued delivery still refers to is all there.
	if got := claim(t, s, "s2", false, base.Add(time.Second), 0); len(got) != 1 {
		t.Errorf("claim of s2 = %v, want e-delivered", EventIDs(got))
	} else {
		checkSinkDelivery(t, got[0], queued("s2", "e-delivered", "", 0))
	}
	if q, err := s.Quarantined(t.Context(), 0); err != nil || len(q) != 0 {
		t.Errorf("Quarantined = %v, %v", q, err)
	}
}

// The messages of many ended sessions go over many small batches, whose picks continue where
// the one before stopped: messages received at the same instant in several sessions are
// neither skipped nor picked twice, and each session keeps its last message.
func testPruneLiveKeepsLast(t *testing.T, s store.Store) {
	const sessions, perSession = 30, 3
	id := ingest(t, s, delivery("live-many"))[0].ID
	apply(t, s, id, func(ctx context.Context, tx store.Tx) error {
		for i := range sessions {
			session := fmt.Sprintf("sess-%02d", i)
			rec := jobRecord(session, api.StatusDone, api.KindLive, base, "")
			rec.Local.Final = "live.end_session"
			if err := tx.PutJob(ctx, rec); err != nil {
				return err
			}
			for n := range perSession {
				m := liveMessage(session, id, n) // the n-th of every session is received at one instant
				m.Category = api.CategoryLifecycleEvents
				if _, err := tx.AppendLiveMessage(ctx, m); err != nil {
					return err
				}
			}
		}
		return nil
	})
	policy := store.RetentionPolicy{BatchSize: 4, Live: map[api.MessageCategory]time.Duration{api.CategoryLifecycleEvents: time.Hour}}
	want := map[store.PruneKind]int64{store.LiveKind(api.CategoryLifecycleEvents): sessions * (perSession - 1)}
	for _, dry := range []bool{true, false, false} {
		rep, err := s.Prune(t.Context(), policy, time.Now(), dry)
		if err != nil {
			t.Fatalf("Prune(dry run %v): %v", dry, err)
		}
		if !maps.Equal(rep.Rows, want) {
			t.Fatalf("Prune(dry run %v) = %v, want %v", dry, rep.Rows, want)
		}
		if !dry {
			want = nil // the second run finds nothing
		}
	}
	for i := range sessions {
		session := fmt.Sprintf("sess-%02d", i)
		var seqs []int64
		for _, m := range liveMessages(t, s, session, 0, 0) {
			seqs = append(seqs, m.Seq)
		}
		if !slices.Equal(seqs, []int64{perSession}) {
			t.Errorf("messages of %s = %v, want its last, [%d]", session, seqs, perSession)
		}
	}
}

// Callback tokens go token_ttl after they were minted, revoked or not; younger ones stay.
func testPruneTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	wall := time.Now()
	tokens := []struct {
		name    string
		created time.Time
		revoke  bool
		stays   bool
	}{
		{"expired", base, false, false},
		{"expired-revoked", base.Add(time.Second), true, false},
		{"expired-bound", base.Add(2 * time.Second), false, false},
		{"young", wall.Add(-time.Hour), false, true},
		{"young-revoked", wall.Add(-time.Hour), true, true},
	}
	for _, tk := range tokens {
		h := store.HashToken(tk.name)
		if err := s.CreateToken(ctx, store.Token{Hash: h, Kind: api.KindPreRecorded, CreatedAt: tk.created}); err != nil {
			t.Fatalf("CreateToken(%s): %v", tk.name, err)
		}
		if tk.revoke {
			if err := s.RevokeToken(ctx, h); err != nil {
				t.Fatalf("RevokeToken(%s): %v", tk.name, err)
			}
		}
	}
	if err := s.BindToken(ctx, store.HashToken("expired-bound"), "job-1"); err != nil {
		t.Fatal(err)
	}
	policy := store.RetentionPolicy{Tokens: 7 * 24 * time.Hour, BatchSize: 2}
	steps := []struct {
		name   string
		policy store.RetentionPolicy
		dryRun bool
		want   map[store.PruneKind]int64
	}{
		{"kept for ever", store.RetentionPolicy{}, false, nil},
		{"dry run counts", policy, true, map[store.PruneKind]int64{store.PruneTokens: 3}},
		{"run deletes", policy, false, map[store.PruneKind]int64{store.PruneTokens: 3}},
		{"a second run finds nothing", policy, false, nil},
	}
	for _, st := range steps {
		rep, err := s.Prune(ctx, st.policy, wall, st.dryRun)
		if err != nil {
			t.Fatalf("%s: Prune: %v", st.name, err)
		}
		if !maps.Equal(rep.Rows, st.want) {
			t.Fatalf("%s: rows = %v, want %v", st.name, rep.Rows, st.want)
		}
	}
	for _, tk := range tokens {
		_, err := s.LookupToken(ctx, store.HashToken(tk.name))
		if gone := errors.Is(err, store.ErrNotFound); gone == tk.stays || (err != nil && !gone) {
			t.Errorf("token %s: LookupToken error %v, want it to stay: %v", tk.name, err, tk.stays)
		}
	}
}
