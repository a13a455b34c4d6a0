package sinks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/natsconn"
	"github.com/scribehook/scribehook/internal/wmlog"
)

// DefaultTopic is the stream (Redis) or subject (NATS) of broker sinks without a topic.
const DefaultTopic = "scribehook.events"

// Metadata keys of broker messages, beside the message UUID, which is the event id.
const (
	MetadataType  = "type"
	MetadataJobID = "job_id"
)

// natsDuplicateWindow is how long JetStream remembers message ids of streams this package
// creates. A publish whose acknowledgment was lost is retried after 0 s, 5 s, 5 min and 30 min
// on the default schedule; an hour covers those retries without keeping every id of a busy
// live session for a day. Consumers that must be exact across longer gaps (a dead letter
// replayed next week) deduplicate on the message UUID, which is the event id.
const natsDuplicateWindow = time.Hour

// natsPublishTimeout bounds one JetStream publish when the caller's context has no deadline
// (Watermill's publisher takes no context).
const natsPublishTimeout = 10 * time.Second

// BrokerSink publishes events through a Watermill publisher: Redis Streams or NATS JetStream.
type BrokerSink struct {
	name  string
	topic string // with "{type}"
	kind  string
	pub   message.Publisher
	// prepare readies a topic before publishing (JetStream: the stream exists) and returns
	// the name to publish to.
	prepare func(ctx context.Context, topic string) (string, error)
	// extra metadata per message (JetStream: the deduplication id).
	extra func(ev api.Event, m message.Metadata)
	// failed hears of a failed publish (JetStream: the stream may have been deleted, so the
	// next attempt checks again instead of trusting what it saw).
	failed func(topic string)
	// async publishes in a goroutine so that the context bounds the wait: Watermill's
	// JetStream publisher does not take one.
	async bool
	log   logrus.FieldLogger
}

// NewRedisStream builds a sink that XADDs each event to the Redis stream named by its topic.
// Redis keeps every entry: a retried delivery may be added twice, with the same message UUID
// (the event id) for consumers to deduplicate on.
func NewRedisStream(spec Spec, deps Deps) (*BrokerSink, error) {
	deps = deps.withDefaults()
	topic, err := brokerSpec(spec, KindRedisStream, "redis://127.0.0.1:6379/0")
	if err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(spec.BrokerURL)
	if err != nil {
		return nil, specErr(spec, "BrokerURL", fmt.Errorf("not a Redis URL: %w", err))
	}
	log := deps.Logger.WithField("sink", spec.Name)
	client := redis.NewClient(opts)
	pub, err := redisstream.NewPublisher(redisstream.PublisherConfig{Client: client}, wmlog.New(log))
	if err != nil {
		_ = client.Close()
		return nil, specErr(spec, "BrokerURL", fmt.Errorf("redis publisher: %w", err))
	}
	return &BrokerSink{
		name: spec.Name, topic: topic, kind: KindRedisStream, pub: pub, log: log,
		prepare: func(_ context.Context, t string) (string, error) { return t, nil },
	}, nil
}

// NewNATS builds a sink that publishes each event to JetStream on the subject named by its
// topic. Streams are provisioned on first use; the event id travels as Nats-Msg-Id, so a
// publish repeated within the stream's duplicate window (also by a restarted sink) is stored
// once.
func NewNATS(spec Spec, deps Deps) (*BrokerSink, error) {
	deps = deps.withDefaults()
	topic, err := brokerSpec(spec, KindNATS, "nats://127.0.0.1:4222")
	if err != nil {
		return nil, err
	}
	log := deps.Logger.WithField("sink", spec.Name)
	wlog := wmlog.New(log)
	// A broker that is down at start is a delivery failure to retry, not a failed start.
	nc, err := natsconn.Connect(spec.BrokerURL, "sink "+spec.Name, wlog, nats.RetryOnFailedConnect(true))
	if err != nil {
		return nil, specErr(spec, "BrokerURL", fmt.Errorf("nats: %w", err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, specErr(spec, "BrokerURL", fmt.Errorf("jetstream: %w", err))
	}
	pub, err := natsconn.Publisher(nc, wlog) // streams are provisioned by natsStreams
	if err != nil {
		nc.Close()
		return nil, specErr(spec, "BrokerURL", fmt.Errorf("jetstream publisher: %w", err))
	}
	streams := &natsStreams{js: js, stream: natsStreamName(topic), known: map[string]bool{}}
	return &BrokerSink{
		name: spec.Name, topic: topic, kind: KindNATS, pub: pub, log: log, async: true,
		prepare: func(ctx context.Context, t string) (string, error) {
			subject, err := natsSubject(t)
			if err != nil {
				return "", err
			}
			return subject, streams.ensure(ctx, subject)
		},
		extra:  func(ev api.Event, m message.Metadata) { m.Set(jetstream.MsgIDHeader, ev.ID) },
		failed: streams.forget,
	}, nil
}

// brokerSpec checks what every broker sink needs of spec: a broker URL (an error for the kind
// shows example) and a topic, which it returns (brokerTopic).
func brokerSpec(spec Spec, kind, example string) (string, error) {
	topic, err := brokerTopic(spec)
	if err != nil {
		return "", err
	}
	if spec.BrokerURL == "" {
		return "", required(spec, "BrokerURL", kind, example)
	}
	return topic, nil
}

func brokerTopic(spec Spec) (string, error) {
	topic := strings.TrimSpace(spec.Topic)
	if topic == "" {
		return DefaultTopic, nil
	}
	if strings.ContainsAny(topic, " \t\r\n") {
		return "", specErr(spec, "Topic", fmt.Errorf("%q contains white space", topic))
	}
	if spec.Kind == KindNATS {
		if _, err := natsSubject(strings.ReplaceAll(topic, "{type}", "x")); err != nil {
			return "", specErr(spec, "Topic", err)
		}
	}
	return topic, nil
}

// Name implements Sink.
func (s *BrokerSink) Name() string { return s.name }

// Close implements Sink: the publisher and its connection are closed.
func (s *BrokerSink) Close() error {
	if err := s.pub.Close(); err != nil {
		return fmt.Errorf("close %s publisher: %w", s.kind, err)
	}
	return nil
}

// Deliver publishes ev: message UUID the event id, payload the event JSON, metadata its type
// and job id.
func (s *BrokerSink) Deliver(ctx context.Context, ev api.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ev.ID == "" {
		return &Failure{Err: errors.New("event has no id to use as message UUID"), Permanent: true}
	}
	payload, err := eventJSON(ev)
	if err != nil {
		return &Failure{Err: fmt.Errorf("encode event: %w", err), Permanent: true}
	}
	topic, err := s.prepare(ctx, strings.ReplaceAll(s.topic, "{type}", ev.Type))
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			return err
		}
		return fmt.Errorf("%s: %w", s.kind, err)
	}
	msg := message.NewMessageWithContext(ctx, ev.ID, payload)
	msg.Metadata.Set(MetadataType, ev.Type)
	msg.Metadata.Set(MetadataJobID, ev.JobID)
	if s.extra != nil {
		s.extra(ev, msg.Metadata)
	}
	if err := s.publish(ctx, topic, msg); err != nil {
		if s.failed != nil {
			s.failed(topic)
		}
		return fmt.Errorf("%s publish to %s: %w", s.kind, topic, err)
	}
	s.log.WithFields(logrus.Fields{"job_id": ev.JobID, "event_id": ev.ID, "topic": topic}).Debug("event published")
	return nil
}

func (s *BrokerSink) publish(ctx context.Context, topic string, msg *message.Message) error {
	if !s.async {
		return s.pub.Publish(topic, msg)
	}
	done := make(chan error, 1)
	go func() { done <- s.pub.Publish(topic, msg) }()
	timer := time.NewTimer(natsPublishTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The publish may still land; its Nats-Msg-Id makes the retry harmless.
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("no acknowledgment within %s", natsPublishTimeout)
	}
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
		return "", &Failure{Err: fmt.Errorf("nats subject %q contains white space", s), Permanent: true}
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return "", &Failure{Err: fmt.Errorf("nats subject %q has an empty token", s), Permanent: true}
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
