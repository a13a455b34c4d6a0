package api

import "encoding/json"

// List paging bounds. The interface gives no maximum for limit; scribehook and its sandbox use
// 100 (documented in docs/spec/provider-facts.md).
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ListQuery holds the query parameters of both list endpoints (§4.4, §4.5). Nil Offset and
// Limit take the defaults. Kind is not allowed on the live list.
type ListQuery struct {
	Offset         *int            `json:"offset,omitempty"`
	Limit          *int            `json:"limit,omitempty"`
	Date           string          `json:"date,omitempty"`        // YYYY-MM-DD
	BeforeDate     string          `json:"before_date,omitempty"` // ISO 8601 date-time
	AfterDate      string          `json:"after_date,omitempty"`  // ISO 8601 date-time
	Status         []JobStatus     `json:"status,omitempty"`
	Kind           []JobKind       `json:"kind,omitempty"`
	CustomMetadata json.RawMessage `json:"custom_metadata,omitempty"` // a JSON object; subset match
}
