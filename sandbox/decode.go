package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// httpError is an error the handler answers with its status, message and validation list.
type httpError struct {
	status     int
	msg        string
	validation []string
}

func (e *httpError) Error() string { return e.msg }

// readFailed is the answer to a body (what) whose reading failed with err: a 413 when it
// passed limit (http.MaxBytesReader's error, or the file store's), else a 400 saying msg.
func readFailed(err error, what string, limit int64, msg string) *httpError {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("%s exceeds %d bytes", what, limit)}
	}
	return &httpError{status: http.StatusBadRequest, msg: msg}
}

// decodeBody reads a JSON body within the size limit. Malformed JSON or invalid UTF-8 is a 400;
// a member of the wrong type is a 422 (invalid parameter) naming the field; an oversized body is
// a 413; a Content-Type other than JSON is a 415.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) *httpError {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		// A form or text body is a client bug: say so rather than read it as JSON and let it
		// pass or fail for the wrong reason. A missing type is read as JSON.
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &httpError{status: http.StatusUnsupportedMediaType,
				msg: fmt.Sprintf("Content-Type must be application/json (got %q)", ct)}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		return readFailed(err, "request body", s.cfg.MaxBodyBytes, "could not read request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return &httpError{status: http.StatusBadRequest, msg: "request body is empty: a JSON object is required"}
	}
	if !utf8.Valid(body) {
		// encoding/json would turn the bad bytes into U+FFFD and accept a changed request.
		return &httpError{status: http.StatusBadRequest, msg: "request body is not valid UTF-8"}
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return &httpError{status: http.StatusUnprocessableEntity,
				msg: fmt.Sprintf("invalid parameter %s: expected %s, got %s", typeErr.Field, typeErr.Type, typeErr.Value)}
		case errors.As(err, &syntaxErr):
			return &httpError{status: http.StatusBadRequest,
				msg: fmt.Sprintf("request body is not valid JSON (offset %d): %v", syntaxErr.Offset, err)}
		case errors.As(err, &typeErr):
			return &httpError{status: http.StatusBadRequest, msg: "request body must be a JSON object"}
		default:
			return &httpError{status: http.StatusUnprocessableEntity, msg: "invalid parameter: " + err.Error()}
		}
	}
	return nil
}
