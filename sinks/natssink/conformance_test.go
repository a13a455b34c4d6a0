package natssink_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/natssink"
	"github.com/scribehook/scribehook/sinks/sinktest"
)

// conformanceTopic is the one subject of the sink under the suite.
const conformanceTopic = "sinktest.events"

func TestNATSSinkConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Features{ExactBytes: true, Deduplicates: true}, func(t *testing.T, name string) sinktest.Destination {
		b := testinfra.NATS(t)
		s, err := natssink.New(sinks.Spec{Name: name, Kind: sinks.KindNATS, URL: b.URL, Topic: conformanceTopic},
			sinks.Deps{Logger: logx.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		return sinktest.Destination{
			Sink: s,
			Received: func(t *testing.T) [][]byte {
				return natsMessages(t, b.URL)
			},
			Break: func(t *testing.T) {
				if err := b.Stop(); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

// natsMessages reads every message of the stream that holds the suite's subject, if any.
func natsMessages(t *testing.T, url string) [][]byte {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.StreamNameBySubject(ctx, conformanceTopic)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil // nothing was ever published
	}
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for remaining := int(info.NumPending); remaining > 0; {
		batch, err := cons.Fetch(remaining, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			out = append(out, msg.Data())
			n++
		}
		if err := batch.Error(); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("the stream %s announced %d more messages and gave none", stream, remaining)
		}
		remaining -= n
	}
	return out
}
