package redissink

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/redis/go-redis/v9"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/internal/brokertest"
)

// newSink is the kind's constructor as sinks.New calls it.
func newSink(spec sinks.Spec, deps sinks.Deps) (sinks.Sink, error) { return sinks.New(spec, deps) }

func TestRedisStreamSink(t *testing.T) {
	url := testinfra.Redis(t).URL
	spec := sinks.Spec{Name: "redis", Kind: sinks.KindRedisStream, URL: url, Topic: "scribehook.{type}"}
	evs := brokertest.Events()
	// Restarted, the sink publishes the last two again (their acknowledgments "lost") and a
	// new one.
	byID := brokertest.DeliverAcrossRestart(t, newSink, spec, evs, nil, evs[3:])

	opts, _ := redis.ParseURL(url)
	client := redis.NewClient(opts)
	defer client.Close()
	ctx := context.Background()
	seen := map[string]int{}
	streams := map[string]int{}
	for _, typ := range []string{api.EventJobCreated, "live.transcript", api.EventJobSucceeded, api.EventSubtitlesReady} {
		entries, err := client.XRange(ctx, "scribehook."+typ, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		streams[typ] = len(entries)
		for _, e := range entries {
			msg, err := redisstream.DefaultMarshallerUnmarshaller{}.Unmarshal(e.Values)
			if err != nil {
				t.Fatalf("entry %s: %v", e.ID, err)
			}
			brokertest.CheckMessage(t, byID, msg.UUID, msg.Payload, msg.Metadata.Get(sinks.MetadataType), msg.Metadata.Get(sinks.MetadataJobID))
			if byID[msg.UUID].Type != typ {
				t.Errorf("event %s of type %s in stream of %s", msg.UUID, byID[msg.UUID].Type, typ)
			}
			seen[msg.UUID]++
		}
	}
	// Redis stores the repeats; deduplicated by UUID, every event is there exactly once.
	if len(seen) != len(byID) {
		t.Errorf("distinct UUIDs %d, want %d: %v", len(seen), len(byID), seen)
	}
	for id, n := range seen {
		want := 1
		if id == evs[3].ID || id == evs[4].ID {
			want = 2
		}
		if n != want {
			t.Errorf("event %s stored %d times, want %d", id, n, want)
		}
	}
	if streams["live.transcript"] != 4 || streams[api.EventJobCreated] != 1 {
		t.Errorf("stream lengths %v", streams)
	}
}

func TestRedisStreamSinkDown(t *testing.T) {
	s, err := New(sinks.Spec{Name: "redis", Kind: sinks.KindRedisStream, URL: "redis://127.0.0.1:" + testinfra.Port(t) + "/0"}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Deliver(ctx, brokertest.Event())
	if err == nil || sinks.AsFailure(err).Permanent {
		t.Errorf("Deliver to a closed port = %v, want a retryable error", err)
	}
}

// The kind's spec errors name the Spec field, as sinks.New's do.
func TestNewErrors(t *testing.T) {
	for _, tt := range []struct {
		spec       sinks.Spec
		field, msg string
	}{
		{sinks.Spec{Name: "x", Kind: sinks.KindRedisStream}, "URL", `is required for a redisstream sink, e.g. "redis://127.0.0.1:6379/0"`},
		{sinks.Spec{Name: "x", Kind: sinks.KindRedisStream, URL: "http://127.0.0.1:6379"}, "URL", "not a Redis URL"},
		{sinks.Spec{Name: "x", Kind: sinks.KindRedisStream, URL: "redis://127.0.0.1:6379", Topic: "a b"}, "Topic", "white space"},
	} {
		_, err := sinks.New(tt.spec, sinks.Deps{Logger: logx.Discard()})
		var se *sinks.SpecError
		if !errors.As(err, &se) || se.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("New(%+v) = %v, want a SpecError on %s saying %q", tt.spec, err, tt.field, tt.msg)
		}
	}
	// The deprecated BrokerURL is still read.
	s, err := sinks.New(sinks.Spec{Name: "x", Kind: sinks.KindRedisStream, BrokerURL: "redis://127.0.0.1:1/0"}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatalf("New with BrokerURL: %v", err)
	}
	_ = s.Close()
}
