package api

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMatchEventType(t *testing.T) {
	for _, tt := range []struct {
		pattern, typ string
		want         bool
	}{
		{"*", "job.created", true},
		{"live.*", "live.transcript", true},
		{"live.*", "job.created", false},
		{"*.ready", "subtitles.ready", true},
		{"job.succeeded", "job.succeeded", true},
		{"job.succeded", "job.succeeded", false},
		{"job.**", "job.failed", true},
	} {
		if got := MatchEventType(tt.pattern, tt.typ); got != tt.want {
			t.Errorf("MatchEventType(%q, %q) = %v", tt.pattern, tt.typ, got)
		}
	}
}

// Every type matches itself, a misspelt one matches none, and the rule names each kind of type.
func TestKnownEventPattern(t *testing.T) {
	for _, typ := range EventTypes() {
		if !KnownEventPattern(typ) {
			t.Errorf("%s is not known", typ)
		}
	}
	if !slices.Contains(EventTypes(), LiveEvent(MessageError)) || !slices.Contains(EventTypes(), EventSubtitlesReady) {
		t.Errorf("EventTypes = %v", EventTypes())
	}
	for _, p := range []string{"job.succeded", "jobs.*", "live.transcripts", ""} {
		if KnownEventPattern(p) {
			t.Errorf("%q is known", p)
		}
	}
	for _, word := range []string{EventJobCreated, EventSubtitlesReady, "live.<message type>", "*"} {
		if !strings.Contains(EventTypeRule, word) {
			t.Errorf("the rule does not name %s", word)
		}
	}
}

// A long pattern with many stars against a long type stays fast: the matcher backtracks to one
// point only.
func TestMatchEventTypeLinear(t *testing.T) {
	pattern := ""
	s := ""
	for range 2000 {
		pattern += "*a"
		s += "a"
	}
	start := time.Now()
	if MatchEventType(pattern+"b", s) {
		t.Fatal("matched without the b")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s", d)
	}
}
