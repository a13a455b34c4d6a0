package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// CreateToken stores a new token; a hash already stored is an error.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if len(t.Hash) == 0 {
		return errors.New("create token: empty hash")
	}
	w, err := s.begin(ctx, "create token", durable)
	if err != nil {
		return fmt.Errorf("create token: begin: %w", err)
	}
	defer w.rollback()
	if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO tokens (hash, job_id, kind, created_at, revoked_at)
		VALUES (?, ?, ?, ?, ?)`, t.Hash, t.JobID, string(t.Kind), nullTime(t.CreatedAt),
		nullTime(t.RevokedAt)); err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("create token: commit: %w", err)
	}
	return nil
}

// BindToken sets the token's job when it has none. Binding to the job it already has is a
// no-op; another job gives store.ErrTokenBound, an unknown token store.ErrNotFound. The check
// and the write share one transaction, so two first deliveries cannot both bind.
func (s *Store) BindToken(ctx context.Context, hash []byte, jobID string) error {
	if jobID == "" {
		return errors.New("bind token: empty job id")
	}
	w, err := s.begin(ctx, "bind token", durable)
	if err != nil {
		return fmt.Errorf("bind token: begin: %w", err)
	}
	defer w.rollback()
	var current string
	if err := w.conn.QueryRowContext(w.ctx, `SELECT job_id FROM tokens WHERE hash = ?`, hash).Scan(&current); err != nil {
		return fmt.Errorf("bind token: %w", sqlcore.NotFound(err))
	}
	switch current {
	case jobID:
		return nil
	case "":
	default:
		return fmt.Errorf("bind token to %s: %w", jobID, store.ErrTokenBound)
	}
	if _, err := w.conn.ExecContext(w.ctx, `UPDATE tokens SET job_id = ? WHERE hash = ?`, jobID, hash); err != nil {
		return fmt.Errorf("bind token: %w", err)
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("bind token: commit: %w", err)
	}
	return nil
}

// RevokeToken marks the token revoked; revoking it again keeps the first time. An unknown
// token gives store.ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, hash []byte) error {
	w, err := s.begin(ctx, "revoke token", durable)
	if err != nil {
		return fmt.Errorf("revoke token: begin: %w", err)
	}
	defer w.rollback()
	res, err := w.conn.ExecContext(w.ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE hash = ?`,
		formatTime(time.Now()), hash)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if err := sqlcore.OneRow(res); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("revoke token: commit: %w", err)
	}
	return nil
}
