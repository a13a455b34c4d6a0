package api

import (
	"encoding/json"
	"fmt"
)

// JobStatus is the state of a job (§3).
type JobStatus string

const (
	StatusQueued     JobStatus = "queued"
	StatusProcessing JobStatus = "processing"
	StatusDone       JobStatus = "done"
	StatusError      JobStatus = "error"
)

// Valid reports whether s is one of the four states.
func (s JobStatus) Valid() bool {
	switch s {
	case StatusQueued, StatusProcessing, StatusDone, StatusError:
		return true
	}
	return false
}

// Final reports whether the job will not change any more.
func (s JobStatus) Final() bool { return s == StatusDone || s == StatusError }

// JobKind is pre-recorded or live.
type JobKind string

const (
	KindPreRecorded JobKind = "pre-recorded"
	KindLive        JobKind = "live"
)

// Valid reports whether k is one of the two kinds.
func (k JobKind) Valid() bool { return k == KindPreRecorded || k == KindLive }

// RecordVersion is the API version every job record carries.
const RecordVersion = 2

// Job is a job record (§2.5), returned by retrieval and listing, for both kinds.
type Job struct {
	ID                  string          `json:"id"`
	RequestID           string          `json:"request_id"`
	Version             int             `json:"version"`
	Status              JobStatus       `json:"status"`
	CreatedAt           Time            `json:"created_at"`
	PostSessionMetadata json.RawMessage `json:"post_session_metadata,omitempty"`
	Kind                JobKind         `json:"kind"`
	CompletedAt         *Time           `json:"completed_at,omitempty"`
	CustomMetadata      json.RawMessage `json:"custom_metadata,omitempty"`
	ErrorCode           *int            `json:"error_code,omitempty"`
	File                *File           `json:"file"`
	// RequestParams holds a PreRecordedRequest or a LiveRequest depending on Kind; it stays raw
	// so that it round-trips exactly. Use PreRecordedParams or LiveParams to read it.
	RequestParams json.RawMessage `json:"request_params"`
	// Result is the job's result as the service sent it, kept raw so that a record stored,
	// served and put in an event carries it byte for byte; nil when there is none (null reads
	// as none). DecodeResult decodes it.
	Result json.RawMessage `json:"result,omitempty"`
	Extra  Extra           `json:"-"`
}

// UnmarshalJSON decodes a record and redacts its callback URLs (RedactRequestParams): every
// record scribehook reads, from the service or from its store, is the way a per-job token
// would come in, so this is where it stops.
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	if err := decodeKeeping(b, (*plain)(j), &j.Extra); err != nil {
		return err
	}
	if isNull(j.Result) {
		j.Result = nil
	}
	j.RequestParams = RedactRequestParams(j.RequestParams)
	return nil
}

// UnmarshalJobInPlace is json.Unmarshal(b, j) for bytes the caller owns and never changes
// again (a record read from the store): j.Result is then a slice of b rather than a copy of
// it, which for a 2-hour result is megabytes.
func UnmarshalJobInPlace(b []byte, j *Job) error {
	type plain Job
	var v struct {
		*plain
		Result inPlace `json:"result"`
	}
	v.plain = (*plain)(j)
	if err := decodeKeeping(b, &v, &j.Extra); err != nil {
		return err
	}
	j.Result = json.RawMessage(v.Result)
	if isNull(j.Result) {
		j.Result = nil
	}
	j.RequestParams = RedactRequestParams(j.RequestParams)
	return nil
}

// inPlace keeps the bytes encoding/json hands its UnmarshalJSON, a slice of the decoded
// text, capped so that an append copies.
type inPlace []byte

func (p *inPlace) UnmarshalJSON(b []byte) error {
	*p = b[:len(b):len(b)]
	return nil
}

// MarshalJSON writes the record as AppendJob does (json.Marshal, which calls it, then compacts
// and escapes what it returns).
func (j Job) MarshalJSON() ([]byte, error) { return AppendJob(nil, &j, true) }

// DecodeResult decodes the job's result; nil when it has none.
func (j *Job) DecodeResult() (*Result, error) { return DecodeResult(j.Result) }

// PreRecordedParams decodes request_params of a pre-recorded job; nil when null.
func (j *Job) PreRecordedParams() (*PreRecordedRequest, error) {
	return decodeParams[PreRecordedRequest](j.RequestParams)
}

// LiveParams decodes request_params of a live job; nil when null.
func (j *Job) LiveParams() (*LiveRequest, error) {
	return decodeParams[LiveRequest](j.RequestParams)
}

// decodeParams decodes raw request_params as the request of one kind; nil when null.
func decodeParams[T any](raw json.RawMessage) (*T, error) {
	if isNull(raw) {
		return nil, nil
	}
	p := new(T)
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("decode request_params: %w", err)
	}
	return p, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// File describes the audio of a job; null when the job failed before reading it.
type File struct {
	ID               string  `json:"id"`
	Filename         string  `json:"filename"`
	Source           string  `json:"source"`
	AudioDuration    float64 `json:"audio_duration"`
	NumberOfChannels int     `json:"number_of_channels"`
	Extra            Extra   `json:"-"`
}

func (f *File) UnmarshalJSON(b []byte) error {
	type plain File
	return decodeKeeping(b, (*plain)(f), &f.Extra)
}

func (f File) MarshalJSON() ([]byte, error) {
	type plain File
	return encodeKeeping(plain(f), f.Extra)
}

// CreateJobResponse answers the creation of a pre-recorded job.
type CreateJobResponse struct {
	ID        string `json:"id"`
	ResultURL string `json:"result_url"`
}

// CreateLiveResponse answers the creation of a live session; URL is the WebSocket address with
// its temporary token.
type CreateLiveResponse struct {
	ID        string `json:"id"`
	CreatedAt Time   `json:"created_at"`
	URL       string `json:"url"`
}

// Page is the envelope of both list endpoints.
type Page struct {
	First   string  `json:"first"`
	Current string  `json:"current"`
	Next    *string `json:"next"`
	Items   []Job   `json:"items"`
}

// Callback events of pre-recorded jobs and account webhooks.
const (
	EventTranscriptionCreated = "transcription.created"
	EventTranscriptionSuccess = "transcription.success"
	EventTranscriptionError   = "transcription.error"
	EventLiveStartSession     = "live.start_session"
	EventLiveStartRecording   = "live.start_recording"
	EventLiveEndRecording     = "live.end_recording"
	EventLiveEndSession       = "live.end_session"
)

// LiveEvent is the event name of a live callback carrying a message of type t.
func LiveEvent(t MessageType) string { return "live." + string(t) }

// JobCallback is the body of a pre-recorded job's callback: Payload on success, Error on error.
// The sandbox writes it; scribehook reads a callback through a view of its own (the payload
// kept raw), so it keeps no unknown members.
type JobCallback struct {
	ID             string          `json:"id"`
	Event          string          `json:"event"`
	Payload        *Result         `json:"payload,omitempty"`
	Error          *CallbackError  `json:"error,omitempty"`
	CustomMetadata json.RawMessage `json:"custom_metadata,omitempty"`
}

// CallbackError is the error of a failed job's callback.
type CallbackError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// LiveCallback is the body of a live callback: one message, wrapped.
type LiveCallback struct {
	ID      string      `json:"id"`
	Event   string      `json:"event"`
	Payload LiveMessage `json:"payload"`
	Extra   Extra       `json:"-"`
}

func (c *LiveCallback) UnmarshalJSON(b []byte) error {
	type plain LiveCallback
	return decodeKeeping(b, (*plain)(c), &c.Extra)
}

func (c LiveCallback) MarshalJSON() ([]byte, error) {
	type plain LiveCallback
	return encodeKeeping(plain(c), c.Extra)
}

// AccountWebhook is the thin body of an account-level webhook: the receiver fetches the job.
type AccountWebhook struct {
	Event   string `json:"event"`
	Payload struct {
		ID string `json:"id"`
	} `json:"payload"`
}

// ErrorResponse is the error envelope of the REST API.
type ErrorResponse struct {
	Timestamp        Time     `json:"timestamp"`
	Path             string   `json:"path"`
	RequestID        string   `json:"request_id"`
	StatusCode       int      `json:"statusCode"`
	Message          string   `json:"message"`
	ValidationErrors []string `json:"validation_errors,omitempty"`
}
