// Package natssink is the nats kind of sink: each event published to NATS JetStream.
// Importing it registers the kind (sinks.RegisterKind) and links the NATS client; a program
// that does not import it does not:
//
//	import _ "github.com/scribehook/scribehook/sinks/natssink"
//
// Its configuration entry reads url (nats://[user:password@]host:4222, required; a token in
// its user part is hidden when the configuration is printed) and topic (the subject, default
// scribehook.events, "{type}" replaced by the event's type).
package natssink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/natsconn"
	"github.com/scribehook/scribehook/internal/wmlog"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinkkind"
)

func init() {
	sinks.RegisterKind(sinks.Kind{
		Kind: sinkkind.Kind{
			Name: sinks.KindNATS,
			Defaults: func(e *sinkkind.Entry) {
				if e.Topic == "" {
					e.Topic = sinks.DefaultTopic
				}
			},
			Validate: func(e sinkkind.Entry) []sinkkind.Problem {
				if e.URL == "" {
					return []sinkkind.Problem{{Key: "url", Rule: "is required for a nats sink"}}
				}
				return nil
			},
			URLUserIsSecret: true, // nats://token@host
		},
		New: func(spec sinks.Spec, deps sinks.Deps) (sinks.Sink, error) {
			s, err := New(spec, deps)
			if err != nil {
				return nil, err // a nil *BrokerSink must not become a non-nil Sink
			}
			return s, nil
		},
	})
}

// natsDuplicateWindow is how long JetStream remembers message ids of streams this package
// creates. A publish whose acknowledgment was lost is retried after 0 s, 5 s, 5 min and 30 min
// on the default schedule; an hour covers those retries without keeping every id of a busy
// live session for a day. Consumers that must be exact across longer gaps (a dead letter
// replayed next week) deduplicate on the message UUID, which is the event id.
const natsDuplicateWindow = time.Hour

// New builds a sink that publishes each event to JetStream on the subject named by its topic.
// Streams are provisioned on first use; the event id travels as Nats-Msg-Id, so a publish
// repeated within the stream's duplicate window (also by a restarted sink) is stored once. A
// broker that is down at start makes deliveries fail and retry, not New.
func New(spec sinks.Spec, deps sinks.Deps) (*sinks.BrokerSink, error) {
	deps = deps.WithDefaults()
	topic, err := sinks.BrokerTopic(spec)
	if err != nil {
		return nil, err
	}
	if _, err := natsSubject(strings.ReplaceAll(topic, "{type}", "x")); err != nil {
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "Topic", Err: err}
	}
	raw, err := sinks.BrokerURL(spec, "nats://127.0.0.1:4222")
	if err != nil {
		return nil, err
	}
	urlErr := func(err error) error { return &sinks.SpecError{Sink: spec.Name, Field: "URL", Err: err} }
	wlog := wmlog.New(deps.Logger.WithField("sink", spec.Name))
	// A broker that is down at start is a delivery failure to retry, not a failed start.
	nc, err := natsconn.Connect(raw, "sink "+spec.Name, wlog, nats.RetryOnFailedConnect(true))
	if err != nil {
		return nil, urlErr(fmt.Errorf("nats: %w", err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, urlErr(fmt.Errorf("jetstream: %w", err))
	}
	pub, err := natsconn.Publisher(nc, wlog) // streams are provisioned by natsStreams
	if err != nil {
		nc.Close()
		return nil, urlErr(fmt.Errorf("jetstream publisher: %w", err))
	}
	streams := &natsStreams{js: js, stream: natsStreamName(topic), known: map[string]bool{}}
	return sinks.NewBrokerSink(spec, sinks.KindNATS, topic, pub, deps, sinks.BrokerOptions{
		Async: true,
		Prepare: func(ctx context.Context, t string) (string, error) {
			subject, err := natsSubject(t)
			if err != nil {
				return "", err
			}
			return subject, streams.ensure(ctx, subject)
		},
		Extra:  func(ev api.Event, m message.Metadata) { m.Set(jetstream.MsgIDHeader, ev.ID) },
		Failed: streams.forget,
	}), nil
}

// natsSubject checks a subject for publishing: dot-separated tokens, none empty, no white
// space and no wildcard. Event types are mapped, not refused, when they carry a wildcard
// character, since the service names its message types.
func natsSubject(s string) (string, error) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '*', '>':
			return '_'
		}
		return r
	}, s)
	if strings.ContainsAny(s, " \t\r\n") {
		return "", &sinks.Failure{Err: fmt.Errorf("nats subject %q contains white space", s), Permanent: true}
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return "", &sinks.Failure{Err: fmt.Errorf("nats subject %q has an empty token", s), Permanent: true}
		}
	}
	return s, nil
}

// natsStreamName derives the name of the stream a sink provisions from its topic: stream names
// may not contain '.', '*', '>', white space or path separators, so "scribehook.events.{type}"
// becomes "scribehook_events".
func natsStreamName(topic string) string {
	t := natsconn.StreamName(strings.ReplaceAll(topic, "{type}", ""), "scribehook")
	for strings.Contains(t, "__") {
		t = strings.ReplaceAll(t, "__", "_")
	}
	return t
}

// natsStreams makes sure every subject a sink publishes to is stored by some stream. A subject
// an existing stream already captures is used as it is (an operator's own stream wins); other
// subjects are added to the sink's own stream, created on first need.
type natsStreams struct {
	js     jetstream.JetStream
	stream string
	mu     sync.Mutex
	known  map[string]bool
}

func (n *natsStreams) ensure(ctx context.Context, subject string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.known[subject] {
		return nil
	}
	if _, err := n.js.StreamNameBySubject(ctx, subject); err == nil {
		n.known[subject] = true
		return nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("look up the stream of %s: %w", subject, err)
	}
	// Two sinks (or replicas) may race to create the stream; the loser updates it.
	for attempt := 0; ; attempt++ {
		st, err := n.js.Stream(ctx, n.stream)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			_, err = n.js.CreateStream(ctx, jetstream.StreamConfig{
				Name:        n.stream,
				Description: "scribehook events",
				Subjects:    []string{subject},
				Duplicates:  natsDuplicateWindow,
			})
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) && attempt == 0 {
				continue
			}
		case err == nil:
			cfg := st.CachedInfo().Config
			cfg.Subjects = append(cfg.Subjects, subject)
			_, err = n.js.UpdateStream(ctx, cfg)
		}
		if err != nil {
			return fmt.Errorf("provision stream %s for %s: %w", n.stream, subject, err)
		}
		n.known[subject] = true
		return nil
	}
}

func (n *natsStreams) forget(subject string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.known, subject)
}
