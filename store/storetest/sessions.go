package storetest

import (
	"crypto/sha256"
	"maps"
	"testing"
	"time"

	"github.com/scribehook/scribehook/store"
)

// SessionStore is a store that keeps the dashboard's sign-outs too.
type SessionStore interface {
	store.Store
	store.Sessions
}

// Sessions runs the checks of store.Sessions. open must return a new, empty store, closed when
// the test ends, and reopen, which closes that store and opens its database again, as a
// restarted process would.
func Sessions(t *testing.T, open func(t *testing.T) (s SessionStore, reopen func(t *testing.T) SessionStore)) {
	t.Run("RevokeOne", func(t *testing.T) { s, _ := open(t); testRevokeSession(t, s) })
	t.Run("RevokeAll", func(t *testing.T) { s, _ := open(t); testRevokeAllSessions(t, s) })
	t.Run("SurvivesReopening", func(t *testing.T) { testSessionsReopen(t, open) })
	t.Run("Prune", func(t *testing.T) { s, _ := open(t); testPruneSessions(t, s) })
}

// sessionHash is what the dashboard stores of a session id.
func sessionHash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// revoked asks s whether the session id issued at issued is revoked.
func revoked(t *testing.T, s store.Sessions, id string, issued time.Time) bool {
	t.Helper()
	return must(s.SessionRevoked(t.Context(), sessionHash(id), issued))(t, "SessionRevoked(%s, %v)", id, issued)
}

// The cutoff of the revoke-all tests: whole seconds, as a cookie's issue time is.
var cutoff = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func testRevokeSession(t *testing.T, s store.Sessions) {
	ctx := t.Context()
	issued := cutoff
	if revoked(t, s, "a", issued) || revoked(t, s, "b", issued) {
		t.Fatal("a session is revoked in a new store")
	}
	if err := s.RevokeSession(ctx, sessionHash("a"), issued.Add(12*time.Hour)); err != nil {
		t.Fatalf("RevokeSession: %v", err)
	}
	if !revoked(t, s, "a", issued) {
		t.Error("a: not revoked after RevokeSession")
	}
	if revoked(t, s, "b", issued) {
		t.Error("b: revoked with a")
	}
	// Only the hash decides, whatever the time the session was issued.
	if !revoked(t, s, "a", issued.Add(time.Hour)) {
		t.Error("a, issued later: not revoked")
	}
	// Signing out twice (two tabs) is no error, and changes nothing.
	if err := s.RevokeSession(ctx, sessionHash("a"), issued.Add(time.Hour)); err != nil {
		t.Errorf("RevokeSession again: %v", err)
	}
	if !revoked(t, s, "a", issued) || revoked(t, s, "b", issued) {
		t.Error("a second revocation of a changed what is revoked")
	}
	if err := s.RevokeSession(ctx, nil, issued); err == nil {
		t.Error("RevokeSession of an empty hash: no error")
	}
}

func testRevokeAllSessions(t *testing.T, s store.Sessions) {
	ctx := t.Context()
	if err := s.RevokeAllSessions(ctx, cutoff); err != nil {
		t.Fatalf("RevokeAllSessions: %v", err)
	}
	for _, c := range []struct {
		issued time.Time
		want   bool
	}{
		{cutoff.Add(-time.Hour), true},
		{cutoff.Add(-time.Second), true},
		{cutoff, true}, // at the cutoff
		{cutoff.Add(time.Second), false},
		{cutoff.Add(time.Hour), false},
	} {
		if got := revoked(t, s, "any", c.issued); got != c.want {
			t.Errorf("issued at %v, revoke-all at %v: revoked %v, want %v", c.issued, cutoff, got, c.want)
		}
	}
	// An earlier cutoff (a replica whose clock is behind) does not let anything through again.
	if err := s.RevokeAllSessions(ctx, cutoff.Add(-time.Hour)); err != nil {
		t.Fatalf("RevokeAllSessions earlier: %v", err)
	}
	if !revoked(t, s, "any", cutoff) || revoked(t, s, "any", cutoff.Add(time.Second)) {
		t.Error("an earlier revoke-all moved the cutoff back")
	}
	// A later one moves it forward.
	if err := s.RevokeAllSessions(ctx, cutoff.Add(time.Hour)); err != nil {
		t.Fatalf("RevokeAllSessions later: %v", err)
	}
	if !revoked(t, s, "any", cutoff.Add(time.Second)) || revoked(t, s, "any", cutoff.Add(time.Hour+time.Second)) {
		t.Error("a later revoke-all did not move the cutoff to it")
	}
}

func testSessionsReopen(t *testing.T, open func(t *testing.T) (SessionStore, func(t *testing.T) SessionStore)) {
	s, reopen := open(t)
	ctx := t.Context()
	if err := s.RevokeSession(ctx, sessionHash("a"), cutoff.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAllSessions(ctx, cutoff.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	s = reopen(t)
	for _, c := range []struct {
		id     string
		issued time.Time
		want   bool
	}{
		{"a", cutoff, true},
		{"b", cutoff, false},
		{"b", cutoff.Add(-time.Hour - time.Second), true},
		{"b", cutoff.Add(-time.Hour + time.Second), false},
	} {
		if got := revoked(t, s, c.id, c.issued); got != c.want {
			t.Errorf("after reopening: %s issued at %v: revoked %v, want %v", c.id, c.issued, got, c.want)
		}
	}
}

// Revocations go once their sessions have expired (and the policy's grace passed); the others
// stay, and the revoke-all's cutoff with them.
func testPruneSessions(t *testing.T, s SessionStore) {
	ctx := t.Context()
	wall := time.Now().Truncate(time.Second)
	for id, exp := range map[string]time.Time{
		"expired-long-ago": wall.Add(-48 * time.Hour),
		"expired-1":        wall.Add(-2 * time.Hour),
		"expired-in-grace": wall.Add(-30 * time.Minute),
		"alive":            wall.Add(time.Hour),
	} {
		if err := s.RevokeSession(ctx, sessionHash(id), exp); err != nil {
			t.Fatalf("RevokeSession(%s): %v", id, err)
		}
	}
	if err := s.RevokeAllSessions(ctx, cutoff); err != nil {
		t.Fatal(err)
	}
	policy := store.RetentionPolicy{Sessions: time.Hour, BatchSize: 1}
	for _, st := range []struct {
		name   string
		policy store.RetentionPolicy
		dryRun bool
		want   map[store.PruneKind]int64
	}{
		{"kept for ever", store.RetentionPolicy{}, false, map[store.PruneKind]int64{}},
		{"dry run counts", policy, true, map[store.PruneKind]int64{store.PruneSessions: 2}},
		{"run deletes", policy, false, map[store.PruneKind]int64{store.PruneSessions: 2}},
		{"a second run finds nothing", policy, false, map[store.PruneKind]int64{}},
	} {
		rep, err := s.Prune(ctx, st.policy, wall, st.dryRun)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !maps.Equal(rep.Rows, st.want) {
			t.Errorf("%s: pruned %v, want %v", st.name, rep.Rows, st.want)
		}
	}
	for id, want := range map[string]bool{"expired-long-ago": false, "expired-1": false, "expired-in-grace": true, "alive": true} {
		if got := revoked(t, s, id, cutoff.Add(time.Second)); got != want {
			t.Errorf("%s after pruning: revoked %v, want %v", id, got, want)
		}
	}
	if !revoked(t, s, "new", cutoff) {
		t.Error("the revoke-all's cutoff went with the pruning")
	}
}
