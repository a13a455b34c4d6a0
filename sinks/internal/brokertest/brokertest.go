// Package brokertest holds what the tests of the broker kinds of sink share: events to
// publish, concurrent and restarted deliveries, and the check of a message against its event.
// The tests run the real servers, installed from Debian's redis-server and nats-server packages
// (make deps), through internal/testinfra; without them they skip and say so.
package brokertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/sinks"
)

// Event is a live transcript event with custom metadata and text to escape.
func Event() api.Event {
	return api.Event{
		ID:             "0b9c7f3e-5a61-5c55-9d0e-5a3e1f0c2b11",
		Type:           "live.transcript",
		CreatedAt:      api.NewTime(time.Date(2026, 11, 20, 10, 11, 12, 345e6, time.UTC)),
		JobID:          "45463597-20b7-4af7-b3b3-f5fb778203ab",
		Kind:           api.KindLive,
		Category:       api.CategoryFinalTranscripts,
		CustomMetadata: json.RawMessage(`{"team":"a"}`),
		Data:           json.RawMessage(`{"utterance":{"text":"Tom & Jerry <3"}}`),
	}
}

// Events are five events of three types and two jobs.
func Events() []api.Event {
	var out []api.Event
	for i, typ := range []string{api.EventJobCreated, "live.transcript", "live.transcript", api.EventJobSucceeded, "live.transcript"} {
		ev := Event()
		ev.ID = fmt.Sprintf("00000000-0000-5000-8000-%012d", i+1)
		ev.Type = typ
		ev.JobID = "job-" + strconv.Itoa(i%2)
		out = append(out, ev)
	}
	return out
}

// DeliverConcurrently delivers evs from four goroutines, as a sink's workers would.
func DeliverConcurrently(t *testing.T, s sinks.Sink, evs []api.Event) {
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

// CheckMessage compares one broker message with the event its UUID names.
func CheckMessage(t *testing.T, byID map[string]api.Event, uuid string, payload []byte, typ, jobID string) {
	t.Helper()
	ev, ok := byID[uuid]
	if !ok {
		t.Errorf("message UUID %q is no event id", uuid)
		return
	}
	want, _ := api.EncodeEvent(&ev, false) // as every sink sends it
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

// DeliverAcrossRestart delivers evs through a sink of spec, calls then (when not nil) with it,
// closes it, and opens it again, as a restarted process would, which delivers again plus one new
// event of another type and job. It returns every event it delivered by ID, the new one
// included; the restarted sink stays open until the test ends.
func DeliverAcrossRestart(t *testing.T, newSink func(sinks.Spec, sinks.Deps) (sinks.Sink, error), spec sinks.Spec, evs []api.Event, then func(sinks.Sink), again []api.Event) map[string]api.Event {
	t.Helper()
	byID := map[string]api.Event{}
	for _, ev := range evs {
		byID[ev.ID] = ev
	}
	s, err := newSink(spec, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	DeliverConcurrently(t, s, evs)
	if then != nil {
		then(s)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	extra := Event()
	extra.ID, extra.Type, extra.JobID = "00000000-0000-5000-8000-000000000099", api.EventSubtitlesReady, "job-9"
	byID[extra.ID] = extra
	s, err = newSink(spec, sinks.Deps{Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	DeliverConcurrently(t, s, append(again, extra))
	return byID
}

// JetStream is a JetStream client of the server at url, to read what a sink stored; its
// connection closes when the test ends.
func JetStream(t *testing.T, url string) jetstream.JetStream {
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
