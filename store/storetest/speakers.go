package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// The cases of store.SpeakerNaming: names stored with a revision that only moves from the one
// the caller read, in a transaction that also holds the re-render's artifacts and events.

func naming(t *testing.T, s store.Store) store.SpeakerNaming {
	t.Helper()
	n, ok := s.(store.SpeakerNaming)
	if !ok {
		t.Fatalf("%T does not implement store.SpeakerNaming", s)
	}
	return n
}

func speakersOf(t *testing.T, s store.Store, id string) store.Speakers {
	t.Helper()
	return must(naming(t, s).Speakers(t.Context(), id))(t, "Speakers(%s)", id)
}

func setSpeakers(t *testing.T, s store.Store, sp store.Speakers, expect int64, fn func(ctx context.Context, tx store.Tx) error) {
	t.Helper()
	if err := naming(t, s).SetSpeakers(t.Context(), sp, expect, fn); err != nil {
		t.Fatalf("SetSpeakers(%s): %v", sp.JobID, err)
	}
}

func checkSpeakers(t *testing.T, got store.Speakers, names api.SpeakerNames, revision int64) {
	t.Helper()
	if !got.Names.Equal(names) || got.Revision != revision {
		t.Errorf("speakers of %s = %v at revision %d, want %v at %d", got.JobID, got.Names, got.Revision, names, revision)
	}
}

// testSpeakers: none stored reads as none; an unknown job is ErrNotFound; names replace the
// earlier ones, keep their time, and move only from the revision read (ErrRevisionConflict
// otherwise, changing nothing); invalid names are refused.
func testSpeakers(t *testing.T, s store.Store) {
	n := naming(t, s)
	if got := speakersOf(t, s, "job-1"); got.JobID != "job-1" || got.Names != nil || got.Revision != 0 || !got.UpdatedAt.IsZero() {
		t.Errorf("speakers of an unnamed job = %+v", got)
	}
	if err := n.SetSpeakers(t.Context(), store.Speakers{JobID: "job-1", Names: api.SpeakerNames{0: "A"}}, 0, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetSpeakers of an unknown job: %v, want ErrNotFound", err)
	}
	if err := s.PutJob(t.Context(), jobRecord("job-1", api.StatusDone, api.KindPreRecorded, base, "")); err != nil {
		t.Fatal(err)
	}
	first := api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone", 12: "Zoë « Z » 李"}
	setSpeakers(t, s, store.Speakers{JobID: "job-1", Names: first, Revision: 2, UpdatedAt: base}, 0, nil)
	got := speakersOf(t, s, "job-1")
	checkSpeakers(t, got, first, 2)
	if !got.UpdatedAt.Equal(base) {
		t.Errorf("UpdatedAt = %v, want %v", got.UpdatedAt, base)
	}
	err := n.SetSpeakers(t.Context(), store.Speakers{JobID: "job-1", Names: api.SpeakerNames{0: "X"}, Revision: 3}, 0, nil)
	if !errors.Is(err, store.ErrRevisionConflict) {
		t.Fatalf("SetSpeakers from a stale revision: %v, want ErrRevisionConflict", err)
	}
	checkSpeakers(t, speakersOf(t, s, "job-1"), first, 2)
	setSpeakers(t, s, store.Speakers{JobID: "job-1", Names: api.SpeakerNames{1: "Bob"}, Revision: 3}, 2, nil)
	checkSpeakers(t, speakersOf(t, s, "job-1"), api.SpeakerNames{1: "Bob"}, 3)
	// No names left is a state of its own: the names were cleared.
	setSpeakers(t, s, store.Speakers{JobID: "job-1", Names: api.SpeakerNames{}, Revision: 4}, 3, nil)
	checkSpeakers(t, speakersOf(t, s, "job-1"), api.SpeakerNames{}, 4)
	if err := n.SetSpeakers(t.Context(), store.Speakers{JobID: "job-1", Names: api.SpeakerNames{0: ""}, Revision: 5}, 4, nil); !errors.Is(err, api.ErrValidation) {
		t.Errorf("SetSpeakers with an empty name: %v, want a validation error", err)
	}
}

// testSpeakersOutbox: fn's artifacts and events commit with the names, and fn's error rolls
// all of them back.
func testSpeakersOutbox(t *testing.T, s store.Store) {
	if err := s.PutJob(t.Context(), jobRecord("job-1", api.StatusDone, api.KindPreRecorded, base, "")); err != nil {
		t.Fatal(err)
	}
	art := store.Artifact{JobID: "job-1", Name: "subtitles.en.srt", Format: "srt", Language: "en", Path: "a/job-1/subtitles.en.srt", Size: 9, CreatedAt: base}
	ready := queued("hook", "ready-2", "job-1", 0)
	boom := errors.New("boom")
	err := naming(t, s).SetSpeakers(t.Context(), store.Speakers{JobID: "job-1", Names: api.SpeakerNames{0: "A"}, Revision: 2}, 0,
		func(ctx context.Context, tx store.Tx) error {
			if err := tx.PutArtifact(ctx, art); err != nil {
				return err
			}
			if err := tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{ready}); err != nil {
				return err
			}
			return boom
		})
	if !errors.Is(err, boom) {
		t.Fatalf("SetSpeakers: %v, want fn's error", err)
	}
	checkSpeakers(t, speakersOf(t, s, "job-1"), nil, 0)
	if got := artifacts(t, s, "job-1"); len(got) != 0 {
		t.Errorf("artifacts after a rollback: %v", got)
	}
	setSpeakers(t, s, store.Speakers{JobID: "job-1", Names: api.SpeakerNames{0: "A"}, Revision: 2}, 0,
		func(ctx context.Context, tx store.Tx) error {
			// fn reads what the transaction wrote.
			if sp, err := tx.Speakers(ctx, "job-1"); err != nil || sp.Names[0] != "A" || sp.Revision != 2 {
				t.Errorf("tx.Speakers = %+v, %v", sp, err)
			}
			if err := tx.PutArtifact(ctx, art); err != nil {
				return err
			}
			return tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{ready})
		})
	if got := artifacts(t, s, "job-1"); len(got) != 1 || got[0].Path != art.Path {
		t.Errorf("artifacts = %v", got)
	}
	if got := claim(t, s, "hook", false, base.Add(1), 0); len(got) != 1 {
		t.Errorf("claimed %v, want ready-2", EventIDs(got))
	} else {
		checkSinkDelivery(t, got[0], ready)
	}
}

// testSpeakersInApply: an Apply reads the job's names after its lock, and sees none for a job
// without them.
func testSpeakersInApply(t *testing.T, s store.Store) {
	res := ingest(t, s, delivery("sp1"), delivery("sp2"))
	if err := s.PutJob(t.Context(), jobRecord("job-1", api.StatusDone, api.KindPreRecorded, base, "")); err != nil {
		t.Fatal(err)
	}
	apply(t, s, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		sp, err := tx.Speakers(ctx, "job-1")
		if err != nil || sp.Names != nil || sp.Revision != 0 {
			t.Errorf("tx.Speakers before any = %+v, %v", sp, err)
		}
		return err
	})
	setSpeakers(t, s, store.Speakers{JobID: "job-1", Names: api.SpeakerNames{3: "C"}}, 0, nil)
	apply(t, s, res[1].ID, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.Job(ctx, "job-1"); err != nil {
			return err
		}
		sp, err := tx.Speakers(ctx, "job-1")
		if err != nil || !sp.Names.Equal(api.SpeakerNames{3: "C"}) {
			t.Errorf("tx.Speakers = %+v, %v", sp, err)
		}
		return err
	})
}

// testSpeakersConcurrent: namings from the same revision race; exactly one commits, the others
// get ErrRevisionConflict (run it with -race).
func testSpeakersConcurrent(t *testing.T, s store.Store) {
	if err := s.PutJob(t.Context(), jobRecord("job-1", api.StatusDone, api.KindPreRecorded, base, "")); err != nil {
		t.Fatal(err)
	}
	const racers = 8
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			errs[i] = naming(t, s).SetSpeakers(t.Context(),
				store.Speakers{JobID: "job-1", Names: api.SpeakerNames{0: string(rune('A' + i))}, Revision: 2}, 0, nil)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Errorf("racers %d and %d both committed", won, i)
		case !errors.Is(err, store.ErrRevisionConflict):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no racer committed")
	}
	checkSpeakers(t, speakersOf(t, s, "job-1"), api.SpeakerNames{0: string(rune('A' + won))}, 2)
}
