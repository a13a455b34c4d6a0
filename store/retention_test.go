package store_test

import (
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// TestPolicyKeep pins which duration of a policy each kind of row is pruned by; every
// duration differs, so a kind read from the wrong field shows.
func TestPolicyKeep(t *testing.T) {
	p := store.RetentionPolicy{
		Inbox: 1 * time.Hour, Jobs: 2 * time.Hour, SinkDelivered: 3 * time.Hour,
		DeadLetters: 4 * time.Hour, Quarantine: 5 * time.Hour, Tokens: 6 * time.Hour, Sessions: 9 * time.Hour,
		Live: map[api.MessageCategory]time.Duration{
			api.CategoryPartialTranscripts: 7 * time.Hour,
			api.CategoryErrors:             8 * time.Hour,
		},
	}
	want := map[store.PruneKind]time.Duration{
		store.PruneInbox:                               1 * time.Hour,
		store.PruneInboxFailed:                         4 * time.Hour,
		store.PruneJobs:                                2 * time.Hour,
		store.PruneArtifacts:                           2 * time.Hour,
		store.PruneSessionRest:                         2 * time.Hour,
		store.PruneSinkDelivered:                       3 * time.Hour,
		store.PruneDeadLetters:                         4 * time.Hour,
		store.PruneEvents:                              3 * time.Hour, // the shorter of the two above
		store.PruneQuarantine:                          5 * time.Hour,
		store.PruneTokens:                              6 * time.Hour,
		store.PruneSessions:                            9 * time.Hour,
		store.LiveKind(api.CategoryPartialTranscripts): 7 * time.Hour,
		store.LiveKind(api.CategoryErrors):             8 * time.Hour,
	}
	for _, k := range store.PruneKinds() {
		if got := p.Keep(k); got != want[k] {
			t.Errorf("Keep(%s) = %v, want %v", k, got, want[k])
		}
	}
	// Events go with their last delivery: as soon as either kind of delivery that is pruned
	// at all allows.
	for _, c := range []struct{ delivered, dead, want time.Duration }{
		{3 * time.Hour, 4 * time.Hour, 3 * time.Hour}, {4 * time.Hour, 3 * time.Hour, 3 * time.Hour},
		{0, 4 * time.Hour, 4 * time.Hour}, {3 * time.Hour, 0, 3 * time.Hour}, {0, 0, 0},
	} {
		p := store.RetentionPolicy{SinkDelivered: c.delivered, DeadLetters: c.dead}
		if got := p.Keep(store.PruneEvents); got != c.want {
			t.Errorf("Keep(events) with delivered %v, dead %v = %v, want %v", c.delivered, c.dead, got, c.want)
		}
	}
	if got := p.Keep("no_such_kind"); got != 0 {
		t.Errorf("Keep of an unknown kind = %v, want 0 (for ever)", got)
	}
}
