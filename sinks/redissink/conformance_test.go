package redissink_test

import (
	"context"
	"testing"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/redis/go-redis/v9"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/redissink"
	"github.com/scribehook/scribehook/sinks/sinktest"
)

// conformanceTopic is the one stream or subject of the broker sinks under the suite.
const conformanceTopic = "sinktest.events"

func TestRedisStreamSinkConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Features{ExactBytes: true}, func(t *testing.T, name string) sinktest.Destination {
		b := testinfra.Redis(t)
		s, err := redissink.New(sinks.Spec{Name: name, Kind: sinks.KindRedisStream, URL: b.URL, Topic: conformanceTopic},
			sinks.Deps{Logger: logx.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		return sinktest.Destination{
			Sink: s,
			Received: func(t *testing.T) [][]byte {
				opts, err := redis.ParseURL(b.URL)
				if err != nil {
					t.Fatal(err)
				}
				client := redis.NewClient(opts)
				defer client.Close()
				entries, err := client.XRange(context.Background(), conformanceTopic, "-", "+").Result()
				if err != nil {
					t.Fatal(err)
				}
				var out [][]byte
				for _, e := range entries {
					msg, err := redisstream.DefaultMarshallerUnmarshaller{}.Unmarshal(e.Values)
					if err != nil {
						t.Fatalf("entry %s: %v", e.ID, err)
					}
					out = append(out, msg.Payload)
				}
				return out
			},
			Break: func(t *testing.T) {
				if err := b.Stop(); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
