package sinks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
)

func TestFilterMatch(t *testing.T) {
	succeeded := api.Event{Type: api.EventJobSucceeded, Kind: api.KindPreRecorded,
		CustomMetadata: json.RawMessage(`{"team":"a","tags":{"env":"prod","tier":1},"ids":[1,2],"big":12345678901234567890}`)}
	subtitles := api.Event{Type: api.EventSubtitlesReady, Kind: api.KindPreRecorded}
	final := api.Event{Type: "live.transcript", Kind: api.KindLive, Category: api.CategoryFinalTranscripts,
		CustomMetadata: json.RawMessage(`{"team":"b"}`)}
	partial := api.Event{Type: "live.transcript", Kind: api.KindLive, Category: api.CategoryPartialTranscripts}
	speech := api.Event{Type: "live.speech_start", Kind: api.KindLive, Category: api.CategorySpeechEvents}
	liveEnded := api.Event{Type: api.EventJobSucceeded, Kind: api.KindLive}
	noMetadata := api.Event{Type: api.EventJobCreated, Kind: api.KindPreRecorded}
	badMetadata := api.Event{Type: api.EventJobCreated, Kind: api.KindPreRecorded, CustomMetadata: json.RawMessage(`[1]`)}

	tests := []struct {
		name   string
		filter Filter
		ev     api.Event
		want   bool
	}{
		{"empty filter matches everything", Filter{}, final, true},
		{"empty filter matches job events", Filter{}, succeeded, true},
		{"star", Filter{Events: []string{"*"}}, speech, true},
		{"exact type", Filter{Events: []string{"job.succeeded"}}, succeeded, true},
		{"exact type, other event", Filter{Events: []string{"job.succeeded"}}, subtitles, false},
		{"exact is not a prefix", Filter{Events: []string{"job.succeed"}}, succeeded, false},
		{"exact is not a suffix", Filter{Events: []string{"ob.succeeded"}}, succeeded, false},
		{"live glob", Filter{Events: []string{"live.*"}}, final, true},
		{"live glob, job event", Filter{Events: []string{"live.*"}}, succeeded, false},
		{"glob crosses dots", Filter{Events: []string{"*.ready"}}, subtitles, true},
		{"glob in the middle", Filter{Events: []string{"job.*ed"}}, succeeded, true},
		{"glob in the middle, no match", Filter{Events: []string{"job.*ing"}}, succeeded, false},
		{"two globs", Filter{Events: []string{"*.*"}}, speech, true},
		{"glob needs its literal part", Filter{Events: []string{"live.*"}}, api.Event{Type: "live"}, false},
		{"glob matches empty rest", Filter{Events: []string{"live.*"}}, api.Event{Type: "live."}, true},
		{"backtracking", Filter{Events: []string{"*transcript"}}, api.Event{Type: "live.post_final_transcript"}, true},
		{"backtracking, no match", Filter{Events: []string{"*transcript*x"}}, api.Event{Type: "live.transcript.transcript"}, false},
		{"case matters", Filter{Events: []string{"Job.Succeeded"}}, succeeded, false},
		{"any of several patterns", Filter{Events: []string{"job.failed", "subtitles.ready"}}, subtitles, true},
		{"none of several patterns", Filter{Events: []string{"job.failed", "subtitles.ready"}}, succeeded, false},

		{"category matches", Filter{Categories: []api.MessageCategory{api.CategoryFinalTranscripts}}, final, true},
		{"category differs", Filter{Categories: []api.MessageCategory{api.CategoryFinalTranscripts}}, partial, false},
		{"one of several categories", Filter{Categories: []api.MessageCategory{api.CategoryPartialTranscripts, api.CategorySpeechEvents}}, speech, true},
		{"categories let job events through", Filter{Categories: []api.MessageCategory{api.CategoryFinalTranscripts}}, succeeded, true},
		{"events and categories both apply", Filter{Events: []string{"live.*"}, Categories: []api.MessageCategory{api.CategoryFinalTranscripts}}, partial, false},
		{"events select, categories pass non-live", Filter{Events: []string{"live.*", "job.*"}, Categories: []api.MessageCategory{api.CategoryFinalTranscripts}}, succeeded, true},
		{"events exclude despite category", Filter{Events: []string{"job.*"}, Categories: []api.MessageCategory{api.CategoryFinalTranscripts}}, final, false},

		{"kind live", Filter{Kinds: []api.JobKind{api.KindLive}}, final, true},
		{"kind live excludes pre-recorded", Filter{Kinds: []api.JobKind{api.KindLive}}, succeeded, false},
		{"kind live keeps a live session's end", Filter{Kinds: []api.JobKind{api.KindLive}, Events: []string{"job.*"}}, liveEnded, true},
		{"both kinds", Filter{Kinds: []api.JobKind{api.KindLive, api.KindPreRecorded}}, succeeded, true},

		{"metadata member", Filter{CustomMetadata: json.RawMessage(`{"team":"a"}`)}, succeeded, true},
		{"metadata member differs", Filter{CustomMetadata: json.RawMessage(`{"team":"b"}`)}, succeeded, false},
		{"metadata member missing", Filter{CustomMetadata: json.RawMessage(`{"owner":"a"}`)}, succeeded, false},
		{"metadata nested subset", Filter{CustomMetadata: json.RawMessage(`{"tags":{"env":"prod"}}`)}, succeeded, true},
		{"metadata nested differs", Filter{CustomMetadata: json.RawMessage(`{"tags":{"env":"dev"}}`)}, succeeded, false},
		{"metadata number by value", Filter{CustomMetadata: json.RawMessage(`{"tags":{"tier":1.0}}`)}, succeeded, true},
		{"metadata big number exact", Filter{CustomMetadata: json.RawMessage(`{"big":12345678901234567890}`)}, succeeded, true},
		{"metadata big number off by one", Filter{CustomMetadata: json.RawMessage(`{"big":12345678901234567891}`)}, succeeded, false},
		{"metadata array exact", Filter{CustomMetadata: json.RawMessage(`{"ids":[1,2]}`)}, succeeded, true},
		{"metadata array is not a subset", Filter{CustomMetadata: json.RawMessage(`{"ids":[1]}`)}, succeeded, false},
		{"metadata type matters", Filter{CustomMetadata: json.RawMessage(`{"team":["a"]}`)}, succeeded, false},
		{"metadata several members", Filter{CustomMetadata: json.RawMessage(`{"team":"a","tags":{"tier":1}}`)}, succeeded, true},
		{"metadata empty object", Filter{CustomMetadata: json.RawMessage(`{}`)}, noMetadata, true},
		{"metadata filter, event without", Filter{CustomMetadata: json.RawMessage(`{"team":"a"}`)}, noMetadata, false},
		{"metadata filter, event not an object", Filter{CustomMetadata: json.RawMessage(`{"team":"a"}`)}, badMetadata, false},
		{"metadata on a live event", Filter{CustomMetadata: json.RawMessage(`{"team":"b"}`)}, final, true},

		{"all four", Filter{
			Events:         []string{"live.*"},
			Categories:     []api.MessageCategory{api.CategoryFinalTranscripts},
			Kinds:          []api.JobKind{api.KindLive},
			CustomMetadata: json.RawMessage(`{"team":"b"}`),
		}, final, true},
		{"all four, metadata fails", Filter{
			Events:         []string{"live.*"},
			Categories:     []api.MessageCategory{api.CategoryFinalTranscripts},
			Kinds:          []api.JobKind{api.KindLive},
			CustomMetadata: json.RawMessage(`{"team":"a"}`),
		}, final, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.filter.Match(&tt.ev); got != tt.want {
				t.Errorf("Match(%s) = %v, want %v", tt.ev.Type, got, tt.want)
			}
		})
	}
}

// Every one of the nine categories selects its own live events and no other category's.
func TestFilterNineCategories(t *testing.T) {
	for _, want := range api.Categories {
		f := Filter{Categories: []api.MessageCategory{want}}
		if err := f.Validate(); err != nil {
			t.Fatalf("Validate(%s): %v", want, err)
		}
		for _, c := range api.Categories {
			ev := api.Event{Type: "live.x", Kind: api.KindLive, Category: c}
			if got := f.Match(&ev); got != (c == want) {
				t.Errorf("filter %s on %s: %v", want, c, got)
			}
		}
	}
}

func TestFilterValidate(t *testing.T) {
	tests := []struct {
		filter Filter
		want   string // "" for valid
	}{
		{Filter{}, ""},
		{Filter{Events: []string{"*", "live.*"}, Categories: api.Categories[:], Kinds: []api.JobKind{api.KindLive, api.KindPreRecorded}}, ""},
		{Filter{Categories: []api.MessageCategory{"finals"}}, `categories: "finals" is not one of the nine`},
		{Filter{Kinds: []api.JobKind{"batch"}}, `kinds: "batch" is not pre-recorded or live`},
		{Filter{Events: []string{"job.*", ""}}, "events: an empty pattern matches nothing"},
		// A misspelt type used to be taken, and the sink or handler never got an event.
		{Filter{Events: []string{"job.succeded"}}, `events[0]: "job.succeded" is not an event type nor a glob matching one (` + eventTypeRuleText + `)`},
		{Filter{Events: []string{"job.*", "live.transcripts"}}, `events[1]: "live.transcripts" is not an event type nor a glob matching one (` + eventTypeRuleText + `)`},
		{Filter{Events: []string{"jobs.*"}}, `events[0]: "jobs.*" is not an event type nor a glob matching one (` + eventTypeRuleText + `)`},
		{Filter{Events: []string{"job.failed", "subtitles.ready", "job.created", "live.error", "live.post_*", "*.ready", "job.*ed"}}, ""},
	}
	for _, tt := range tests {
		err := tt.filter.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Validate(%+v) = %v", tt.filter, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("Validate(%+v) = %v, want %q", tt.filter, err, tt.want)
		}
	}
}

func TestFailure(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		f    *Failure
		want string
	}{
		{&Failure{Err: base}, "boom"},
		{&Failure{Err: base, Permanent: true}, "permanent failure: boom"},
		{&Failure{Err: base, Disable: true}, "sink disabled: boom"},
	}
	for _, tt := range tests {
		if tt.f.Error() != tt.want {
			t.Errorf("Error() = %q, want %q", tt.f.Error(), tt.want)
		}
		if !errors.Is(tt.f, base) {
			t.Errorf("%q does not unwrap to its cause", tt.f)
		}
	}
	wrapped := fmt.Errorf("deliver: %w", &Failure{Err: base, RetryAfter: time.Minute})
	if f := AsFailure(wrapped); f.RetryAfter != time.Minute {
		t.Errorf("AsFailure lost RetryAfter: %+v", f)
	}
	if f := AsFailure(base); f.Err != base || f.Permanent || f.Disable || f.RetryAfter != 0 {
		t.Errorf("AsFailure(plain) = %+v, want a plain retryable failure", f)
	}
}

// eventTypeRuleText is the rule Validate states for an unknown event type.
const eventTypeRuleText = "job.created, job.succeeded, job.failed, subtitles.ready, job.overdue, job.reconciled, sink.disabled, sink.enabled, inbox.failed or live.<message type>, with * as a wildcard"

// Every type EventTypes lists is a type the sinks can be sent, and one Validate takes.
func TestEventTypes(t *testing.T) {
	types := EventTypes()
	for _, want := range []string{api.EventJobCreated, api.EventJobSucceeded, api.EventJobFailed, api.EventSubtitlesReady,
		api.LiveEvent(api.MessageTranscript), api.LiveEvent(api.MessageError)} {
		if !slices.Contains(types, want) {
			t.Errorf("EventTypes() lacks %s", want)
		}
	}
	if err := (Filter{Events: types}).Validate(); err != nil {
		t.Error(err)
	}
}
