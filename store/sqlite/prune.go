package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/store"
)

// vacuumStep is how many free pages one incremental vacuum gives back while it holds the
// writer: 1024 pages of 4 KiB move in a few milliseconds, and ingest waits no longer.
const vacuumStep = 1024

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// Prune deletes what p has kept long enough (sqlcore's Prune), then gives the pages it freed
// back to the file system: a database created by this version has auto_vacuum=INCREMENTAL, so
// its file shrinks by incremental vacuum steps, each a short hold of the writer, and a
// passive checkpoint that truncates the file once no reader needs the old pages. A database
// created before keeps its size and reuses the free pages for new rows; Vacuum converts it.
func (s *Store) Prune(ctx context.Context, p store.RetentionPolicy, now time.Time, dryRun bool) (store.PruneReport, error) {
	rep, err := s.core.Prune(ctx, p, now, dryRun)
	if err != nil || dryRun || rep.Total() == 0 {
		return rep, err
	}
	rep.ReclaimedBytes, err = s.reclaim(ctx)
	if err != nil {
		return rep, fmt.Errorf("prune: reclaim space: %w", err)
	}
	return rep, nil
}

// IncrementalVacuum reports whether the database gives freed pages back (auto_vacuum is
// INCREMENTAL): false for a database created before retention, until Vacuum converts it.
func (s *Store) IncrementalVacuum(ctx context.Context) (bool, error) {
	var mode int
	err := s.withWriter(ctx, func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode)
	})
	return mode == autoVacuumIncremental, err
}

// Vacuum rewrites the whole database with auto_vacuum=INCREMENTAL (VACUUM), which a database
// created before retention needs once for Prune to give space back. It holds the write lock
// for as long as the copy takes and needs free disk of about twice the database (VACUUM's
// temporary copy in SQLITE_TMPDIR, and the WAL the pages are written back through): run it
// with serve stopped.
func (s *Store) Vacuum(ctx context.Context) error {
	return s.withWriter(ctx, func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
		if _, err := c.ExecContext(ctx, `VACUUM`); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
		return nil
	})
}

// reclaim runs incremental vacuum steps until no page is free, then a passive checkpoint, and
// reports the bytes given back.
func (s *Store) reclaim(ctx context.Context) (int64, error) {
	incremental, err := s.IncrementalVacuum(ctx)
	if err != nil || !incremental {
		return 0, err
	}
	var pageSize, freed int64
	for {
		var before, after int64
		err := s.withWriter(ctx, func(c *sql.Conn) error {
			if err := c.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
				return err
			}
			if err := c.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&before); err != nil || before == 0 {
				return err
			}
			// The pragma frees one page per step of its statement: Exec would step once.
			rows, err := c.QueryContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, vacuumStep))
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				return err
			}
			return c.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&after)
		})
		if err != nil {
			return freed, err
		}
		freed += (before - after) * pageSize
		if before == 0 || after >= before {
			break
		}
	}
	err = s.withWriter(ctx, func(c *sql.Conn) error {
		var busy, log, done int64
		return c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done)
	})
	s.log.WithFields(logrus.Fields{"reclaimed_bytes": freed}).Debug("sqlite: incremental vacuum")
	return freed, err
}
