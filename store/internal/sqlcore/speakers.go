package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// Speakers reads the names stored for a job; none is a Speakers with only its JobID.
func (r *Reader) Speakers(ctx context.Context, jobID string) (store.Speakers, error) {
	s, err := scanSpeakers(r.db.QueryRowContext(ctx, r.q[readSpeakers], r.d.text(jobID)), jobID)
	if err != nil {
		return store.Speakers{}, fmt.Errorf("speakers of %s: %w", jobID, err)
	}
	return s, nil
}

// SetSpeakers stores s and runs fn in one durable transaction (an operator's naming exists
// nowhere else), under the job's lock, if the job has a record and its stored revision is
// still expect.
func (c *Core) SetSpeakers(ctx context.Context, s store.Speakers, expect int64, fn func(ctx context.Context, tx store.Tx) error) error {
	if s.JobID == "" {
		return errors.New("set speakers: empty job id")
	}
	if err := s.Names.Validate(); err != nil {
		return fmt.Errorf("set speakers of %s: %w", s.JobID, err)
	}
	names, err := json.Marshal(s.Names)
	if err != nil {
		return fmt.Errorf("set speakers of %s: %w", s.JobID, err)
	}
	updated := s.UpdatedAt
	if updated.IsZero() {
		updated = c.now()
	}
	name := func() string { return "set speakers of " + s.JobID }
	return c.inTx(ctx, "set speakers", Durable, name, func(t Tx) error {
		tx := &applyTx{c: c, t: t}
		key := c.d.text(s.JobID)
		if c.lockJobs {
			if _, err := t.Exec(ctx, StJobLock, JobLockKey(key)); err != nil {
				return fmt.Errorf("%s: lock: %w", name(), err)
			}
		}
		var one int
		if err := t.QueryRow(ctx, StJobExists, key).Scan(&one); err != nil {
			return fmt.Errorf("%s: %w", name(), NotFound(err))
		}
		cur, err := tx.Speakers(ctx, s.JobID)
		if err != nil {
			return err
		}
		if cur.Revision != expect {
			return fmt.Errorf("%s: revision %d, not %d: %w", name(), cur.Revision, expect, store.ErrRevisionConflict)
		}
		if _, err := t.Exec(ctx, StSpeakersPut, key, string(names), s.Revision, c.d.Time(updated)); err != nil {
			return fmt.Errorf("%s: %w", name(), err)
		}
		if fn == nil {
			return nil
		}
		return fn(ctx, tx)
	})
}

// Speakers reads the job's names inside the transaction (after its lock, taken by Job).
func (a *applyTx) Speakers(ctx context.Context, jobID string) (store.Speakers, error) {
	s, err := scanSpeakers(a.t.QueryRow(ctx, StSpeakersGet, a.c.d.text(jobID)), jobID)
	if err != nil {
		return store.Speakers{}, fmt.Errorf("speakers of %s: %w", jobID, err)
	}
	return s, nil
}

func scanSpeakers(row *sql.Row, jobID string) (store.Speakers, error) {
	s := store.Speakers{JobID: jobID}
	var (
		names   []byte
		updated Time
	)
	switch err := row.Scan(&names, &s.Revision, &updated); {
	case errors.Is(err, sql.ErrNoRows):
		return s, nil
	case err != nil:
		return s, err
	}
	if err := json.Unmarshal(names, (*map[int]string)(&s.Names)); err != nil {
		return s, fmt.Errorf("decode names: %w", err)
	}
	if len(s.Names) == 0 {
		s.Names = api.SpeakerNames{}
	}
	s.UpdatedAt = updated.T
	return s, nil
}
