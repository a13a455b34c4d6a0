package sinks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

// Kinds of sink. File, webhook and log are built in; the broker kinds are registered by
// importing their packages, sinks/redissink and sinks/natssink.
const (
	KindFile        = "file"
	KindWebhook     = "webhook"
	KindRedisStream = "redisstream"
	KindNATS        = "nats"
	KindLog         = "log"
)

// Deps are what sinks take from their surroundings; the zero value is the real world.
type Deps struct {
	// Logger gets the sinks' own logs, with the sink's name as field "sink" (default: logrus's
	// standard logger).
	Logger logrus.FieldLogger
	// Stdout is where log sinks write (default os.Stdout).
	Stdout io.Writer
	// Transport is the base of webhook sinks' HTTP transports, for tests that trust a test
	// certificate. It is cloned, and its proxy and dial hooks are replaced: every connection
	// goes through the address guard.
	Transport *http.Transport
	// Resolver resolves webhook host names (default net.DefaultResolver); tests point it at a
	// DNS server of their own.
	Resolver *net.Resolver
	// Now is the clock of webhook-timestamp and Retry-After dates (default time.Now).
	Now func() time.Time
}

// WithDefaults fills the zero fields with the real world's: what a kind's constructor does
// first.
func (d Deps) WithDefaults() Deps {
	if d.Logger == nil {
		d.Logger = logrus.StandardLogger()
	}
	if d.Stdout == nil {
		d.Stdout = os.Stdout
	}
	if d.Resolver == nil {
		d.Resolver = net.DefaultResolver
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// SpecError is a configuration problem of one sink, naming the Spec field at fault, so that the
// caller can point at its own configuration key.
type SpecError struct {
	Sink  string
	Field string // a field of Spec: "URL", "Allow", "Filter.Categories"…
	Err   error
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("sink %q: %s: %v", e.Sink, e.Field, e.Err)
}

func (e *SpecError) Unwrap() error { return e.Err }

func specErr(spec Spec, field string, err error) error {
	return &SpecError{Sink: spec.Name, Field: field, Err: err}
}

// required is the error of a field that a sink of kind needs and spec leaves empty; example,
// when given, shows a value.
func required(spec Spec, field, kind, example string) error {
	msg := "is required for a " + kind + " sink"
	if example != "" {
		msg += fmt.Sprintf(", e.g. %q", example)
	}
	return specErr(spec, field, errors.New(msg))
}

// New builds the sink spec describes, with the constructor of its kind (RegisterKind). It checks the configuration and connects nothing that
// could fail for a passing reason: a broker that is down at start makes deliveries fail and
// retry, not the start itself.
func New(spec Spec, deps Deps) (Sink, error) {
	if spec.Name == "" {
		return nil, specErr(spec, "Name", errors.New("is required"))
	}
	if m := bytes.TrimSpace(spec.Filter.CustomMetadata); len(m) > 0 {
		// The filter treats anything but an object as no filter at all; a typo must not
		// widen a sink to every event.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m, &obj); err != nil || obj == nil {
			return nil, specErr(spec, "Filter.CustomMetadata", errors.New("must be a JSON object"))
		}
	}
	if err := spec.Filter.Validate(); err != nil {
		return nil, specErr(spec, "Filter", err)
	}
	if spec.Kind != KindWebhook && spec.Body != nil {
		return nil, specErr(spec, "Body", fmt.Errorf("is for webhook sinks only (kind %s)", spec.Kind))
	}
	if spec.Kind != KindWebhook && len(spec.Headers) > 0 {
		return nil, specErr(spec, "Headers", fmt.Errorf("are for webhook sinks only (kind %s)", spec.Kind))
	}
	for name := range spec.Headers {
		if err := sinkexpr.CheckHeaderName(name); err != nil {
			return nil, specErr(spec, "Headers", err)
		}
	}
	k, err := lookupKind(spec)
	if err != nil {
		return nil, err
	}
	return k.New(spec, deps)
}

// eventJSON is the envelope as every sink sends it: plainjson.Marshal's bytes, compact and
// without HTML escaping (a transcript's "<" stays "<"), encoded by api.EncodeEvent.
func eventJSON(ev api.Event) ([]byte, error) { return api.EncodeEvent(&ev, false) }

// eventBody is eventJSON's bytes in pieces: the envelope before the data, the event's own data
// (not copied: a 2-hour result is megabytes, and each sink would copy it) and the closing
// brace; or, for data that is not compact JSON, eventJSON's bytes whole.
type eventBody [][]byte

// bodyOf is ev's eventBody.
func bodyOf(ev api.Event) (eventBody, error) {
	if head, ok := api.EventHead(&ev); ok {
		return eventBody{head, ev.Data, []byte("}")}, nil
	}
	b, err := eventJSON(ev)
	if err != nil {
		return nil, err
	}
	return eventBody{b}, nil
}

// Len is the body's length in bytes.
func (b eventBody) Len() int {
	n := 0
	for _, p := range b {
		n += len(p)
	}
	return n
}

// Reader reads the body from its start.
func (b eventBody) Reader() io.Reader {
	if len(b) == 1 {
		return bytes.NewReader(b[0])
	}
	rs := make([]io.Reader, len(b))
	for i, p := range b {
		rs[i] = bytes.NewReader(p)
	}
	return io.MultiReader(rs...)
}
