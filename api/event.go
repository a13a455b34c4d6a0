package api

import (
	"encoding/json"
	"slices"
)

// Event types scribehook publishes to its handlers and sinks (docs/design.md, "Events that
// sinks receive"). Live messages become "live.<message type>".
const (
	EventJobCreated     = "job.created"
	EventJobSucceeded   = "job.succeeded"
	EventJobFailed      = "job.failed"
	EventSubtitlesReady = "subtitles.ready"
)

// Operational events: what an operator wants to hear of (docs/operations.md, Reconciliation),
// routed to sinks like any event (to a chat webhook, say).
const (
	// EventJobOverdue: a job's (or session's) deadline passed and its end was not applied
	// locally, while the service has finished it or could not be asked. Data: OverdueData.
	EventJobOverdue = "job.overdue"
	// EventJobReconciled: deliveries fetched from the service in place of lost callbacks were
	// applied. Data: ReconciledData.
	EventJobReconciled = "job.reconciled"
	// EventSinkDisabled and EventSinkEnabled: a sink was disabled (by a 410 answer or an
	// operator) or enabled again. Data: SinkStateData. The sink itself is not sent them.
	EventSinkDisabled = "sink.disabled"
	EventSinkEnabled  = "sink.enabled"
	// EventInboxFailed: a delivery failed its last attempt and waits for a replay. Data:
	// InboxFailedData.
	EventInboxFailed = "inbox.failed"
)

// EventTypes lists every event type a handler or sink can be sent: the job events,
// subtitles.ready, the operational events, and live.<type> for each live message type (the sixteen documented ones and
// the top-level error). A filter's event patterns must each match at least one of them.
func EventTypes() []string {
	out := []string{EventJobCreated, EventJobSucceeded, EventJobFailed, EventSubtitlesReady,
		EventJobOverdue, EventJobReconciled, EventSinkDisabled, EventSinkEnabled, EventInboxFailed}
	for _, t := range MessageTypes {
		out = append(out, LiveEvent(t))
	}
	return append(out, LiveEvent(MessageError))
}

// EventTypeRule says which patterns KnownEventPattern takes, for the messages that refuse one.
const EventTypeRule = "job.created, job.succeeded, job.failed, subtitles.ready, job.overdue, job.reconciled, sink.disabled, sink.enabled, inbox.failed or live.<message type>, with * as a wildcard"

// KnownEventPattern reports whether pattern matches at least one of EventTypes: a misspelt type
// ("job.succeded") matches none, and a filter holding it would wait for events that never come.
func KnownEventPattern(pattern string) bool {
	return slices.ContainsFunc(EventTypes(), func(t string) bool { return MatchEventType(pattern, t) })
}

// MatchEventType reports whether the event type typ matches pattern, in which * stands for any
// run of characters (dots included): "*", "live.*", "job.succeeded".
func MatchEventType(pattern, typ string) bool {
	// Iterative matching with one backtrack point: linear for the patterns we see.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(typ) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == typ[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Event is the one envelope every sink receives. ID is stable across retries and replays of
// the same delivery, so receivers can deduplicate on it.
type Event struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	CreatedAt      Time            `json:"created_at"`
	JobID          string          `json:"job_id"`
	Kind           JobKind         `json:"kind"`
	Category       MessageCategory `json:"category,omitempty"`
	CustomMetadata json.RawMessage `json:"custom_metadata,omitempty"`
	Data           json.RawMessage `json:"data"`
}
