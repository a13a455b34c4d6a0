package store

import (
	"context"
	"time"
)

// Sessions keeps the dashboard's sign-outs (receiver/internal/ui), so that every replica sharing the
// store refuses a session signed out on any of them, and a restart forgets none. It is a role
// of its own, not part of Store: the dashboard needs only this, and the SQLite and PostgreSQL
// stores implement both.
//
// A session is known by the SHA-256 of its id (idHash), never by the id itself: a stored hash
// cannot be turned back into a cookie.
type Sessions interface {
	// RevokeSession refuses the session of idHash from now on. expires is the session's own
	// expiry: past it the cookie is refused anyway, and the pruner deletes the row
	// (PruneSessions). Revoking a session again changes nothing.
	RevokeSession(ctx context.Context, idHash []byte, expires time.Time) error
	// RevokeAllSessions refuses every session issued at or before before. A cutoff earlier than
	// the one stored changes nothing: a revoke-all is never undone.
	RevokeAllSessions(ctx context.Context, before time.Time) error
	// SessionRevoked reports whether the session of idHash, issued at issuedAt, was revoked,
	// alone or by a revoke-all.
	SessionRevoked(ctx context.Context, idHash []byte, issuedAt time.Time) (bool, error)
}
