package sinks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
)

// The broker tests run the real servers, installed from Debian's redis-server and nats-server
// packages (make deps), through internal/testinfra; without them they skip and say so.

// brokerEvents are five events of three types and two jobs.
func brokerEvents() []api.Event {
	var out []api.Event
	for i, typ := range []string{api.EventJobCreated, "live.transcript", "live.transcript", api.EventJobSucceeded, "live.transcript"} {
		ev := testEvent()
		ev.ID = fmt.Sprintf("00000000-0000-5000-8000-%012d", i+1)
		ev.Type = typ
		ev.JobID = "job-" + strconv.Itoa(i%2)
		out = append(out, ev)
	}
	return out
}

// deliverConcurrently delivers evs from four goroutines, as a sink's workers would.
func deliverConcurrently(t *testing.T, s Sink, evs []api.Event) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(evs))
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := i; j < len(evs); j += 4 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				errs <- s.Deliver(ctx, evs[j])
				cancel()
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Deliver: %v", err)
		}
	}
}

// checkMessage compares one broker message with the event its UUID names.
func checkMessage(t *testing.T, byID map[string]api.Event, uuid string, payload []byte, typ, jobID string) {
	t.Helper()
	ev, ok := byID[uuid]
	if !ok {
		t.Errorf("message UUID %q is no event id", uuid)
		return
	}
	want, _ := eventJSON(ev)
	if !bytes.Equal(payload, want) {
		t.Errorf("payload of %s\n%s\nwant\n%s", uuid, payload, want)
	}
	var back api.Event
	if err := json.Unmarshal(payload, &back); err != nil || back.ID != uuid {
		t.Errorf("payload id %q, want the UUID %q (%v)", back.ID, uuid, err)
	}
	if typ != ev.Type || jobID != ev.JobID {
		t.Errorf("metadata type %q job_id %q, want %q %q", typ, jobID, ev.Type, ev.JobID)
	}
}

// deliverAcrossRestart delivers evs through a sink of spec, calls then (when not nil) with it,
// closes it, and opens it again, as a restarted process would, which delivers again plus one new
// event of another type and job. It returns every event it delivered by ID, the new one
// included; the restarted sink stays open until the test ends.
func deliverAcrossRestart(t *testing.T, spec Spec, evs []api.Event, then func(Sink), again []api.Event) map[string]api.Event {
	t.Helper()
	byID := map[string]api.Event{}
	for _, ev := range evs {
		byID[ev.ID] = ev
	}
	s, err := New(spec, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	deliverConcurrently(t, s, evs)
	if then != nil {
		then(s)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	extra := testEvent()
	extra.ID, extra.Type, extra.JobID = "00000000-0000-5000-8000-000000000099", api.EventSubtitlesReady, "job-9"
	byID[extra.ID] = extra
	s, err = New(spec, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	deliverConcurrently(t, s, append(again, extra))
	return byID
}

// jetStream is a JetStream client of the server at url, to read what a sink stored; its
// connection closes when the test ends.
func jetStream(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestRedisStreamSink(t *testing.T) {
	url := testinfra.Redis(t).URL
	spec := Spec{Name: "redis", Kind: KindRedisStream, BrokerURL: url, Topic: "scribehook.{type}"}
	evs := brokerEvents()
	// Restarted, the sink publishes the last two again (their acknowledgments "lost") and a
	// new one.
	byID := deliverAcrossRestart(t, spec, evs, nil, evs[3:])

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
			checkMessage(t, byID, msg.UUID, msg.Payload, msg.Metadata.Get(MetadataType), msg.Metadata.Get(MetadataJobID))
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
	s, err := New(Spec{Name: "redis", Kind: KindRedisStream, BrokerURL: "redis://127.0.0.1:" + testinfra.Port(t) + "/0"}, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Deliver(ctx, testEvent())
	if err == nil || AsFailure(err).Permanent {
		t.Errorf("Deliver to a closed port = %v, want a retryable error", err)
	}
}

func TestNATSSink(t *testing.T) {
	url := testinfra.NATS(t).URL
	spec := Spec{Name: "nats", Kind: KindNATS, BrokerURL: url, Topic: "scribehook.events.{type}"}
	evs := brokerEvents()
	// Repeated by the same sink: deduplicated. Restarted: everything again, and one new event.
	byID := deliverAcrossRestart(t, spec, evs, func(s Sink) {
		if err := s.Deliver(context.Background(), evs[0]); err != nil {
			t.Fatal(err)
		}
	}, evs)

	js := jetStream(t, url)
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
		checkMessage(t, byID, uuid, m.Data(), h.Get(MetadataType), h.Get(MetadataJobID))
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
	js := jetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ops", Subjects: []string{"custom.job.>"}}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Spec{Name: "nats", Kind: KindNATS, BrokerURL: url, Topic: "custom.{type}"}, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, ev := range brokerEvents() {
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
	s, err := New(Spec{Name: "nats", Kind: KindNATS, BrokerURL: "nats://127.0.0.1:" + testinfra.Port(t)}, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatalf("New with the broker down: %v (a down broker must not fail the start)", err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Deliver(ctx, testEvent())
	if err == nil || AsFailure(err).Permanent {
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
		var f *Failure
		if !errors.As(err, &f) || !f.Permanent {
			t.Errorf("natsSubject(%q) = %v, want a permanent failure", bad, err)
		}
	}
	// An event type that makes an invalid subject fails permanently, before any connection.
	s, err := New(Spec{Name: "nats", Kind: KindNATS, BrokerURL: "nats://127.0.0.1:" + testinfra.Port(t), Topic: "x.{type}"}, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := testEvent()
	ev.Type = "live."
	if err := s.Deliver(context.Background(), ev); !AsFailure(err).Permanent {
		t.Errorf("Deliver of type %q = %v, want a permanent failure", ev.Type, err)
	}
}

// A stream deleted under a running sink is provisioned again: the attempt that finds it gone
// fails and is retried, and the retry recreates it.
func TestNATSSinkStreamDeleted(t *testing.T) {
	url := testinfra.NATS(t).URL
	s, err := New(Spec{Name: "nats", Kind: KindNATS, BrokerURL: url}, Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs := brokerEvents()
	if err := s.Deliver(ctx, evs[0]); err != nil {
		t.Fatal(err)
	}
	js := jetStream(t, url)
	if err := js.DeleteStream(ctx, "scribehook_events"); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliver(ctx, evs[1]); err == nil || AsFailure(err).Permanent {
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
