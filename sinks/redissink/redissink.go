// Package redissink is the redisstream kind of sink: each event XADDed to a Redis stream.
// Importing it registers the kind (sinks.RegisterKind) and links the Redis client; a program
// that does not import it does not:
//
//	import _ "github.com/scribehook/scribehook/sinks/redissink"
//
// Its configuration entry reads url (redis://[:password@]host:6379/0, required) and topic (the
// stream, default scribehook.events, "{type}" replaced by the event's type).
package redissink

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/redis/go-redis/v9"

	"github.com/scribehook/scribehook/internal/wmlog"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinkkind"
)

func init() {
	sinks.RegisterKind(sinks.Kind{
		Kind: sinkkind.Kind{
			Name:     sinks.KindRedisStream,
			Defaults: defaultTopic,
			Validate: func(e sinkkind.Entry) []sinkkind.Problem {
				if e.URL == "" {
					return []sinkkind.Problem{{Key: "url", Rule: "is required for a redisstream sink"}}
				}
				return nil
			},
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

// defaultTopic gives an entry without a topic sinks.DefaultTopic.
func defaultTopic(e *sinkkind.Entry) {
	if e.Topic == "" {
		e.Topic = sinks.DefaultTopic
	}
}

// New builds a sink that XADDs each event to the Redis stream named by its topic. Redis keeps
// every entry: a retried delivery may be added twice, with the same message UUID (the event id)
// for consumers to deduplicate on. Nothing is dialled before the first delivery.
func New(spec sinks.Spec, deps sinks.Deps) (*sinks.BrokerSink, error) {
	deps = deps.WithDefaults()
	topic, err := sinks.BrokerTopic(spec)
	if err != nil {
		return nil, err
	}
	raw, err := sinks.BrokerURL(spec, "redis://127.0.0.1:6379/0")
	if err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "URL", Err: fmt.Errorf("not a Redis URL: %w", err)}
	}
	client := redis.NewClient(opts)
	pub, err := redisstream.NewPublisher(redisstream.PublisherConfig{Client: client}, wmlog.New(deps.Logger.WithField("sink", spec.Name)))
	if err != nil {
		_ = client.Close()
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "URL", Err: fmt.Errorf("redis publisher: %w", err)}
	}
	return sinks.NewBrokerSink(spec, sinks.KindRedisStream, topic, pub, deps, sinks.BrokerOptions{
		Prepare: func(_ context.Context, t string) (string, error) { return t, nil },
	}), nil
}
