package api

import "encoding/json"

// Event types scribehook publishes to its handlers and sinks (docs/design.md, "Events that
// sinks receive"). Live messages become "live.<message type>".
const (
	EventJobCreated     = "job.created"
	EventJobSucceeded   = "job.succeeded"
	EventJobFailed      = "job.failed"
	EventSubtitlesReady = "subtitles.ready"
)

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
