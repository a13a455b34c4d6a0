package sqlcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/scribehook/scribehook/store"
)

// CreateToken stores a new token; a hash already stored is an error (the primary key's unique
// violation, wrapped). A token exists nowhere else: it commits durably.
func (c *Core) CreateToken(ctx context.Context, tok store.Token) error {
	if len(tok.Hash) == 0 {
		return errors.New("create token: empty hash")
	}
	return c.inTx(ctx, "create token", Durable|OneStatement, func() string { return "create token" }, func(t Tx) error {
		if _, err := t.Exec(ctx, StTokenCreate, tok.Hash, c.d.text(tok.JobID), c.d.text(string(tok.Kind)),
			c.d.NullTime(tok.CreatedAt), c.d.NullTime(tok.RevokedAt)); err != nil {
			return fmt.Errorf("create token: %w", err)
		}
		return nil
	})
}

// BindToken sets the token's job when it has none. Binding to the job it already has is a
// no-op; another job gives store.ErrTokenBound, an unknown token store.ErrNotFound. The check
// and the write share one transaction that holds the row (Dialect.ForUpdate), so the first
// deliveries of a job racing on several replicas cannot both bind.
func (c *Core) BindToken(ctx context.Context, hash []byte, jobID string) error {
	if jobID == "" {
		return errors.New("bind token: empty job id")
	}
	jobID = c.d.text(jobID)
	return c.inTx(ctx, "bind token", Durable, func() string { return "bind token" }, func(t Tx) error {
		var current string
		if err := t.QueryRow(ctx, StTokenJob, hash).Scan(&current); err != nil {
			return fmt.Errorf("bind token: %w", NotFound(err))
		}
		switch current {
		case jobID:
			return errNothingToCommit
		case "":
		default:
			return fmt.Errorf("bind token to %s: %w", jobID, store.ErrTokenBound)
		}
		if _, err := t.Exec(ctx, StTokenBind, jobID, hash); err != nil {
			return fmt.Errorf("bind token: %w", err)
		}
		return nil
	})
}

// RevokeToken marks the token revoked; revoking it again keeps the first time. An unknown
// token gives store.ErrNotFound.
func (c *Core) RevokeToken(ctx context.Context, hash []byte) error {
	return c.inTx(ctx, "revoke token", Durable|OneStatement, func() string { return "revoke token" }, func(t Tx) error {
		res, err := t.Exec(ctx, StTokenRevoke, c.d.Time(c.now()), hash)
		if err == nil {
			err = OneRow(res)
		}
		if err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
		return nil
	})
}
