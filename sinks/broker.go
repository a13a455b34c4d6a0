package sinks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/api"
)

// DefaultTopic is the stream (Redis) or subject (NATS) of broker sinks without a topic.
const DefaultTopic = "scribehook.events"

// Metadata keys of broker messages, beside the message UUID, which is the event id.
const (
	MetadataType  = "type"
	MetadataJobID = "job_id"
)

// brokerPublishTimeout bounds one asynchronous publish when the caller's context has no
// deadline (Watermill's publishers take no context).
const brokerPublishTimeout = 10 * time.Second

// BrokerSink publishes events through a Watermill publisher. The broker kinds build one each:
// sinks/redissink (Redis Streams) and sinks/natssink (NATS JetStream), which own the clients.
type BrokerSink struct {
	name  string
	topic string // with "{type}"
	kind  string
	pub   message.Publisher
	opts  BrokerOptions
	log   logrus.FieldLogger
}

// BrokerOptions are what a broker kind adds to the publishing NewBrokerSink does.
type BrokerOptions struct {
	// Prepare readies a topic before publishing (JetStream: the stream exists) and returns the
	// name to publish to; nil publishes to the topic as it is. A *Failure it returns is passed
	// on as it is.
	Prepare func(ctx context.Context, topic string) (string, error)
	// Extra sets metadata of its own on each message (JetStream: the deduplication id).
	Extra func(ev api.Event, m message.Metadata)
	// Failed hears of a failed publish (JetStream: the stream may have been deleted, so the
	// next attempt checks again instead of trusting what it saw).
	Failed func(topic string)
	// Async publishes in a goroutine so that the context bounds the wait, for a publisher that
	// does not take one (Watermill's JetStream publisher).
	Async bool
}

// NewBrokerSink is the sink of spec publishing through pub to topic (BrokerTopic's; "{type}"
// is replaced by each event's type); the sink closes pub. kind names the broker in errors.
func NewBrokerSink(spec Spec, kind, topic string, pub message.Publisher, deps Deps, opts BrokerOptions) *BrokerSink {
	deps = deps.WithDefaults()
	return &BrokerSink{
		name: spec.Name, topic: topic, kind: kind, pub: pub, opts: opts,
		log: deps.Logger.WithField("sink", spec.Name),
	}
}

// BrokerURL is the broker of a broker sink's spec: URL, or the deprecated BrokerURL. Its error
// is a SpecError on URL that shows example.
func BrokerURL(spec Spec, example string) (string, error) {
	u := spec.URL
	if u == "" {
		u = spec.BrokerURL
	}
	if u == "" {
		return "", required(spec, "URL", spec.Kind, example)
	}
	return u, nil
}

// BrokerTopic is the topic of a broker sink's spec: DefaultTopic when empty. Its error is a
// SpecError on Topic.
func BrokerTopic(spec Spec) (string, error) {
	topic := strings.TrimSpace(spec.Topic)
	if topic == "" {
		return DefaultTopic, nil
	}
	if strings.ContainsAny(topic, " \t\r\n") {
		return "", specErr(spec, "Topic", fmt.Errorf("%q contains white space", topic))
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
	topic := strings.ReplaceAll(s.topic, "{type}", ev.Type)
	if s.opts.Prepare != nil {
		topic, err = s.opts.Prepare(ctx, topic)
	}
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
	if s.opts.Extra != nil {
		s.opts.Extra(ev, msg.Metadata)
	}
	if err := s.publish(ctx, topic, msg); err != nil {
		if s.opts.Failed != nil {
			s.opts.Failed(topic)
		}
		return fmt.Errorf("%s publish to %s: %w", s.kind, topic, err)
	}
	s.log.WithFields(logrus.Fields{"job_id": ev.JobID, "event_id": ev.ID, "topic": topic}).Debug("event published")
	return nil
}

func (s *BrokerSink) publish(ctx context.Context, topic string, msg *message.Message) error {
	if !s.opts.Async {
		return s.pub.Publish(topic, msg)
	}
	done := make(chan error, 1)
	go func() { done <- s.pub.Publish(topic, msg) }()
	timer := time.NewTimer(brokerPublishTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The publish may still land; its Nats-Msg-Id makes the retry harmless.
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("no acknowledgment within %s", brokerPublishTimeout)
	}
}
