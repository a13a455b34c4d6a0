package scribehook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scribehook/scribehook/store"
)

// RevokeDashboardSessions signs out every dashboard session issued until now, in every
// browser and on every replica sharing st, without a browser of its own (`scribehook sessions
// revoke-all`; the read API's POST /v1/sessions/revoke does the same). It returns the cutoff
// stored: a session issued at or before it is refused, and signing in again works from the
// next second on. It fails for a store that keeps no sessions (the SQLite and PostgreSQL
// stores do); changing the read token signs every browser out too.
func RevokeDashboardSessions(ctx context.Context, st store.Store, now time.Time) (time.Time, error) {
	s, ok := st.(store.Sessions)
	if !ok {
		return time.Time{}, errors.New("revoke dashboard sessions: the store keeps no sessions: change the read token to sign every browser out")
	}
	if err := s.RevokeAllSessions(ctx, now); err != nil {
		return time.Time{}, fmt.Errorf("revoke dashboard sessions: %w", err)
	}
	return now, nil
}
