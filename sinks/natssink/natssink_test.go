package natssink

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/internal/brokertest"
)

// newSink is the kind's constructor as sinks.New calls it.
func newSink(spec sinks.Spec, deps sinks.Deps) (sinks.Sink, error) { return sinks.New(spec, deps) }

func TestNATSSink(t *testing.T) {
	url := testinfra.NATS(t).URL
	spec := sinks.Spec{Name: "nats", Kind: sinks.KindNATS, URL: url, Topic: "scribehook.events.{type}"}
	evs := brokertest.Events()
	// Repeated by the same sink: deduplicated. Restarted: everything again, and one new event.
	byID := brokertest.DeliverAcrossRestart(t, newSink, spec, evs, func(s sinks.Sink) {
		if err := s.Deliver(context.Background(), evs[0]); err != nil {
			t.Fatal(err)
		}
	}, evs)

	js := brokertest.JetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, "scribehook_events")
	if err != nil {
		t.Fatalf("provisioned stream: %v", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Duplicates != natsDuplicateWindow {
		t.Errorf("duplicate window %s, want %s", info.Config.Duplicates, natsDuplicateWindow)
	}
	subjects := append([]string(nil), info.Config.Subjects...)
	sort.Strings(subjects)
	wantSubjects := []string{"scribehook.events.job.created", "scribehook.events.job.succeeded", "scribehook.events.live.transcript", "scribehook.events.subtitles.ready"}
	if fmt.Sprint(subjects) != fmt.Sprint(wantSubjects) {
		t.Errorf("stream subjects %v, want %v", subjects, wantSubjects)
	}
	if info.State.Msgs != uint64(len(byID)) {
		t.Errorf("stream holds %d messages, want %d: one per event", info.State.Msgs, len(byID))
	}

	// Read them as a Watermill JetStream subscriber would, through an ordered consumer.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(len(byID)+1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for m := range batch.Messages() {
		h := m.Headers()
		uuid := h.Get(wmnats.WatermillUUIDHdr)
		if h.Get(jetstream.MsgIDHeader) != uuid {
			t.Errorf("Nats-Msg-Id %q, want the UUID %q", h.Get(jetstream.MsgIDHeader), uuid)
		}
		brokertest.CheckMessage(t, byID, uuid, m.Data(), h.Get(sinks.MetadataType), h.Get(sinks.MetadataJobID))
		if want := "scribehook.events." + byID[uuid].Type; m.Subject() != want {
			t.Errorf("subject %q, want %q", m.Subject(), want)
		}
		if seen[uuid] {
			t.Errorf("event %s stored twice", uuid)
		}
		seen[uuid] = true
	}
	if len(seen) != len(byID) {
		t.Errorf("read %d distinct events, want %d", len(seen), len(byID))
	}
}

// A subject an operator's stream already captures goes there; only the others are added to the
// sink's own stream.
func TestNATSSinkExistingStream(t *testing.T) {
	url := testinfra.NATS(t).URL
	js := brokertest.JetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ops", Subjects: []string{"custom.job.>"}}); err != nil {
		t.Fatal(err)
	}
	s, err := New(sinks.Spec{Name: "nats", Kind: sinks.KindNATS, URL: url, Topic: "custom.{type}"}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, ev := range brokertest.Events() {
		if err := s.Deliver(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	ops, _ := js.Stream(ctx, "ops")
	own, err := js.Stream(ctx, "custom")
	if err != nil {
		t.Fatalf("sink's own stream: %v", err)
	}
	opsInfo, _ := ops.Info(ctx)
	ownInfo, _ := own.Info(ctx)
	if opsInfo.State.Msgs != 2 || ownInfo.State.Msgs != 3 {
		t.Errorf("ops holds %d, custom %d; want 2 job events and 3 live ones", opsInfo.State.Msgs, ownInfo.State.Msgs)
	}
	if fmt.Sprint(ownInfo.Config.Subjects) != "[custom.live.transcript]" {
		t.Errorf("own stream subjects %v", ownInfo.Config.Subjects)
	}
}

func TestNATSSinkDown(t *testing.T) {
	s, err := New(sinks.Spec{Name: "nats", Kind: sinks.KindNATS, URL: "nats://127.0.0.1:" + testinfra.Port(t)}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatalf("New with the broker down: %v (a down broker must not fail the start)", err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Deliver(ctx, brokertest.Event())
	if err == nil || sinks.AsFailure(err).Permanent {
		t.Errorf("Deliver with the broker down = %v, want a retryable error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Deliver took %s past its context", d)
	}
}

func TestNATSNames(t *testing.T) {
	for topic, want := range map[string]string{
		"scribehook.events":           "scribehook_events",
		"scribehook.events.{type}":    "scribehook_events",
		"{type}":                      "scribehook",
		"a.{type}.v1":                 "a_v1",
		"team-a/events.{type}":        "team-a_events",
		"weird*chars>here.{type}":     "weird_chars_here",
		"UPPER.case_keep-dash.{type}": "UPPER_case_keep-dash",
	} {
		if got := natsStreamName(topic); got != want {
			t.Errorf("natsStreamName(%q) = %q, want %q", topic, got, want)
		}
	}
	for in, want := range map[string]string{
		"scribehook.events.live.transcript": "scribehook.events.live.transcript",
		"x.live.*odd>":                      "x.live._odd_",
	} {
		if got, err := natsSubject(in); err != nil || got != want {
			t.Errorf("natsSubject(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"a..b", "a.", ".a", "a b", ""} {
		_, err := natsSubject(bad)
		var f *sinks.Failure
		if !errors.As(err, &f) || !f.Permanent {
			t.Errorf("natsSubject(%q) = %v, want a permanent failure", bad, err)
		}
	}
	// An event type that makes an invalid subject fails permanently, before any connection.
	s, err := New(sinks.Spec{Name: "nats", Kind: sinks.KindNATS, URL: "nats://127.0.0.1:" + testinfra.Port(t), Topic: "x.{type}"}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := brokertest.Event()
	ev.Type = "live."
	if err := s.Deliver(context.Background(), ev); !sinks.AsFailure(err).Permanent {
		t.Errorf("Deliver of type %q = %v, want a permanent failure", ev.Type, err)
	}
}

// A stream deleted under a running sink is provisioned again: the attempt that finds it gone
// fails and is retried, and the retry recreates it.
func TestNATSSinkStreamDeleted(t *testing.T) {
	url := testinfra.NATS(t).URL
	s, err := New(sinks.Spec{Name: "nats", Kind: sinks.KindNATS, URL: url}, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs := brokertest.Events()
	if err := s.Deliver(ctx, evs[0]); err != nil {
		t.Fatal(err)
	}
	js := brokertest.JetStream(t, url)
	if err := js.DeleteStream(ctx, "scribehook_events"); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliver(ctx, evs[1]); err == nil || sinks.AsFailure(err).Permanent {
		t.Fatalf("Deliver without its stream = %v, want a retryable failure", err)
	}
	if err := s.Deliver(ctx, evs[1]); err != nil {
		t.Fatalf("retry: %v", err)
	}
	st, err := js.Stream(ctx, "scribehook_events")
	if err != nil {
		t.Fatalf("stream not recreated: %v", err)
	}
	if info, _ := st.Info(ctx); info.State.Msgs != 1 || fmt.Sprint(info.Config.Subjects) != "[scribehook.events]" {
		t.Errorf("recreated stream: %d messages, subjects %v", info.State.Msgs, info.Config.Subjects)
	}
}

// The kind's spec errors name the Spec field, as sinks.New's do.
func TestNewErrors(t *testing.T) {
	for _, tt := range []struct {
		spec       sinks.Spec
		field, msg string
	}{
		{sinks.Spec{Name: "x", Kind: sinks.KindNATS}, "URL", `is required for a nats sink, e.g. "nats://127.0.0.1:4222"`},
		{sinks.Spec{Name: "x", Kind: sinks.KindNATS, URL: "nats://127.0.0.1:4222", Topic: "a..{type}"}, "Topic", "empty token"},
	} {
		_, err := sinks.New(tt.spec, sinks.Deps{Logger: logx.Discard()})
		var se *sinks.SpecError
		if !errors.As(err, &se) || se.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("New(%+v) = %v, want a SpecError on %s saying %q", tt.spec, err, tt.field, tt.msg)
		}
	}
}
