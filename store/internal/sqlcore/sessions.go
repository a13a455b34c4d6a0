package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/store"
)

// RevokeSession stores the revocation of the dashboard session of idHash (store.Sessions). A
// sign-out exists nowhere else: it commits durably.
func (c *Core) RevokeSession(ctx context.Context, idHash []byte, expires time.Time) error {
	if len(idHash) == 0 {
		return errors.New("revoke session: empty id hash")
	}
	return c.inTx(ctx, "revoke session", Durable|OneStatement, func() string { return "revoke session" }, func(t Tx) error {
		if _, err := t.Exec(ctx, StSessionRevoke, idHash, c.d.Time(expires)); err != nil {
			return fmt.Errorf("revoke session: %w", err)
		}
		return nil
	})
}

// RevokeAllSessions moves the cutoff of every session forward to before (store.Sessions).
func (c *Core) RevokeAllSessions(ctx context.Context, before time.Time) error {
	if before.IsZero() {
		return errors.New("revoke all sessions: zero cutoff")
	}
	return c.inTx(ctx, "revoke all sessions", Durable|OneStatement, func() string { return "revoke all sessions" }, func(t Tx) error {
		if _, err := t.Exec(ctx, StSessionsCutoff, c.d.Time(before)); err != nil {
			return fmt.Errorf("revoke all sessions: %w", err)
		}
		return nil
	})
}

// SessionRevoked reports whether the session of idHash, issued at issuedAt, is revoked, alone
// or by the cutoff (store.Sessions): one query on the read side.
func (r *Reader) SessionRevoked(ctx context.Context, idHash []byte, issuedAt time.Time) (bool, error) {
	var revoked bool
	if err := r.db.QueryRowContext(ctx, r.q[readSessionRevoked], idHash, r.d.Time(issuedAt)).Scan(&revoked); err != nil {
		return false, fmt.Errorf("session revoked: %w", err)
	}
	return revoked, nil
}

var _ store.Sessions = (*Core)(nil)
