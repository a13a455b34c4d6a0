package storetest

import (
	"testing"
	"time"

	"github.com/scribehook/scribehook/store"
)

// testSinkState: a state set is read back; setting it again replaces it; a zero Since is
// stamped; states list by name.
func testSinkState(t *testing.T, s store.Store) {
	ctx := t.Context()
	if got, err := s.SinkStates(ctx); err != nil || len(got) != 0 {
		t.Fatalf("states of a new store: %+v, %v", got, err)
	}
	at := time.Date(2026, 11, 24, 10, 0, 0, 123456000, time.UTC)
	for _, st := range []store.SinkState{
		{Name: "zeta", Disabled: true, Reason: "HTTP 410 Gone: endpoint removed", Since: at},
		{Name: "alpha", Disabled: true, Reason: "maintenance", Since: at},
		{Name: "alpha", Disabled: false, Since: at.Add(time.Hour)},
	} {
		if err := s.SetSinkState(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	before := time.Now().Add(-time.Second)
	if err := s.SetSinkState(ctx, store.SinkState{Name: "mid", Disabled: true, Reason: "by hand"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSinkState(ctx, store.SinkState{Disabled: true}); err == nil {
		t.Error("a state without a sink name was stored")
	}
	got, err := s.SinkStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.SinkState{
		{Name: "alpha", Since: at.Add(time.Hour)},
		{Name: "mid", Disabled: true, Reason: "by hand"},
		{Name: "zeta", Disabled: true, Reason: "HTTP 410 Gone: endpoint removed", Since: at},
	}
	if len(got) != len(want) {
		t.Fatalf("states %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if w.Name == "mid" {
			if g.Since.Before(before) || g.Since.After(time.Now().Add(time.Second)) {
				t.Errorf("state of mid stamped %v, want about now", g.Since)
			}
			w.Since = g.Since
		}
		if g.Name != w.Name || g.Disabled != w.Disabled || g.Reason != w.Reason || !g.Since.Equal(w.Since) {
			t.Errorf("state %d = %+v, want %+v", i, g, w)
		}
	}
}
