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
	"github.com/scribehook/scribehook/internal/plainjson"
)

// Kinds of sink.
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

func (d Deps) withDefaults() Deps {
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

// New builds the sink spec describes. It checks the configuration and connects nothing that
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
	switch spec.Kind {
	case KindFile:
		return NewFile(spec, deps)
	case KindWebhook:
		return NewWebhook(spec, deps)
	case KindRedisStream:
		return NewRedisStream(spec, deps)
	case KindNATS:
		return NewNATS(spec, deps)
	case KindLog:
		return NewLog(spec, deps), nil
	case "":
		return nil, specErr(spec, "Kind", errors.New("is required: file, webhook, redisstream, nats or log"))
	}
	return nil, specErr(spec, "Kind", fmt.Errorf("%q is not file, webhook, redisstream, nats or log", spec.Kind))
}

// eventJSON is the envelope as every sink sends it: plainjson.Marshal's bytes, compact and
// without HTML escaping (a transcript's "<" stays "<"). The encoder would grow its buffer by
// doubling while it compacts the data, then copy the result out: for a 2-hour result over
// twice the data. Here the envelope is encoded without its data (its last member,
// "data":null) and the data compacted once, as the encoder compacts it, into a buffer of the
// final size; no data, or data that does not compact, takes plainjson.Marshal itself.
func eventJSON(ev api.Event) ([]byte, error) {
	const tail = `null}`
	data := ev.Data
	if len(data) == 0 {
		return plainjson.Marshal(ev)
	}
	ev.Data = nil
	head, err := plainjson.Marshal(ev)
	ev.Data = data
	if err != nil || !bytes.HasSuffix(head, []byte(`"data":`+tail)) {
		return plainjson.Marshal(ev)
	}
	head = head[:len(head)-len(tail)]
	buf := bytes.NewBuffer(make([]byte, 0, len(head)+len(data)+1))
	buf.Write(head)
	if err := json.Compact(buf, data); err != nil {
		return plainjson.Marshal(ev)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
