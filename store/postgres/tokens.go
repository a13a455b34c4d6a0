package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// CreateToken stores a new token; a hash already stored is an error (the primary key's unique
// violation, wrapped).
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if len(t.Hash) == 0 {
		return errors.New("create token: empty hash")
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO tokens (hash, job_id, kind, created_at, revoked_at)
		VALUES ($1, $2, $3, $4, $5)`, t.Hash, text(t.JobID), text(string(t.Kind)), nullTime(t.CreatedAt),
		nullTime(t.RevokedAt)); err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	return nil
}

// BindToken sets the token's job when it has none. Binding to the job it already has is a
// no-op; another job gives store.ErrTokenBound, an unknown token store.ErrNotFound. The row is
// locked between the check and the write, so the first deliveries of a job racing on several
// replicas cannot both bind.
func (s *Store) BindToken(ctx context.Context, hash []byte, jobID string) error {
	if jobID == "" {
		return errors.New("bind token: empty job id")
	}
	jobID = text(jobID)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bind token: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var current string
	if err := tx.QueryRowContext(ctx, `SELECT job_id FROM tokens WHERE hash = $1 FOR UPDATE`, hash).Scan(&current); err != nil {
		return fmt.Errorf("bind token: %w", sqlcore.NotFound(err))
	}
	switch current {
	case jobID:
		return nil
	case "":
	default:
		return fmt.Errorf("bind token to %s: %w", jobID, store.ErrTokenBound)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tokens SET job_id = $1 WHERE hash = $2`, jobID, hash); err != nil {
		return fmt.Errorf("bind token: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bind token: commit: %w", err)
	}
	return nil
}

// RevokeToken marks the token revoked; revoking it again keeps the first time. An unknown
// token gives store.ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, hash []byte) error {
	res, err := s.db.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, now()) WHERE hash = $1`, hash)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}
