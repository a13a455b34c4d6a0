package submitter

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// APIError is a response of the service with an unexpected status, decoded from the error
// envelope {timestamp, path, request_id, statusCode, message, validation_errors?} when the body
// is one. Body holds the raw body in every case (up to a bound), so nothing is lost when the
// service answers with something else (a proxy's HTML page, plain text).
type APIError struct {
	StatusCode       int
	Message          string
	RequestID        string
	Path             string
	ValidationErrors []string
	Body             []byte
}

// Error prints the status, the message and the request id on one line, then each validation
// error on its own indented line, e.g.
//
//	service: 400 Bad Request: invalid parameters (request G-1a2b3c4d)
//	  - audio_url must be an absolute URL
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("service: ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	if text := http.StatusText(e.StatusCode); text != "" {
		b.WriteString(" " + text)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	for _, v := range e.ValidationErrors {
		b.WriteString("\n  - " + v)
	}
	return b.String()
}

// IsStatus reports whether err is, or wraps, an APIError with the given status code.
func IsStatus(err error, code int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == code
}

// maxSnippet bounds how much of a non-JSON body goes into Message.
const maxSnippet = 200

// newAPIError builds the error of a response; path is the request path, used when the body
// does not name one.
func newAPIError(status int, path string, body []byte) *APIError {
	e := &APIError{StatusCode: status, Path: path, Body: body}
	var env struct {
		Path             string          `json:"path"`
		RequestID        string          `json:"request_id"`
		StatusCode       int             `json:"statusCode"`
		Message          json.RawMessage `json:"message"`
		ValidationErrors []string        `json:"validation_errors"`
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &env) == nil {
		e.Message = messageText(env.Message)
		e.RequestID = env.RequestID
		e.ValidationErrors = env.ValidationErrors
		if env.Path != "" {
			e.Path = env.Path
		}
		return e
	}
	e.Message = snippet(trimmed)
	return e
}

// messageText accepts message as a string or, as some frameworks send, an array of strings.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, "; ")
	}
	return string(bytes.TrimSpace(raw))
}

// snippet makes a short single-line message of a non-JSON body.
func snippet(body []byte) string {
	if !utf8.Valid(body) {
		return ""
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > maxSnippet {
		cut := maxSnippet
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
