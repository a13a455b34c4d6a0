package audio

// ErrorKind classifies decoding errors so that callers can map them to a status without
// parsing messages: errors.Is(err, audio.ErrUnsupported). It is a string constant rather
// than a package variable so the package keeps no global state.
type ErrorKind string

func (k ErrorKind) Error() string { return string(k) }

// Kinds of decoding errors. The message of the returned error is more specific; these only
// classify it.
const (
	// ErrNotWAV: the bytes are not a RIFF/WAVE file.
	ErrNotWAV ErrorKind = "not a RIFF/WAVE file"
	// ErrMalformed: a WAV file whose structure is broken (missing or inconsistent chunks).
	ErrMalformed ErrorKind = "malformed audio"
	// ErrUnsupported: a well-formed file or stream in a format, rate or layout not supported.
	ErrUnsupported ErrorKind = "unsupported audio format"
	// ErrTooLarge: the audio exceeds the configured limits.
	ErrTooLarge ErrorKind = "audio exceeds the limits"
	// ErrFormatMismatch: a WAV header at the start of a live stream disagrees with the
	// session's declared format.
	ErrFormatMismatch ErrorKind = "audio does not match the declared format"
)

// audioError carries a specific message, its kind, and optionally an underlying cause.
type audioError struct {
	kind  ErrorKind
	msg   string
	cause error
}

func (e *audioError) Error() string { return e.msg }

func (e *audioError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

func newError(kind ErrorKind, msg string) error { return &audioError{kind: kind, msg: msg} }

func wrapError(kind ErrorKind, msg string, cause error) error {
	return &audioError{kind: kind, msg: msg, cause: cause}
}
