// Package sinktest is the contract suite of sinks.Sink: every sink, built in or a program's
// own, runs the same subtests, so that the dispatcher (sinks.Dispatcher, and the kit's
// WithSink) can rely on what they check whatever the destination. A sink's test gives Run a
// way to build the sink and to read back what its destination received:
//
//	func TestConformance(t *testing.T) {
//		sinktest.Run(t, sinktest.Features{ExactBytes: true}, func(t *testing.T, name string) sinktest.Destination {
//			dest := startMyDestination(t) // stopped by t.Cleanup
//			return sinktest.Destination{Sink: newMySink(name, dest.URL), Received: dest.Bodies}
//		})
//	}
//
// The contract, as the dispatcher reads it:
//
//   - Name returns the name the sink was built with: the dispatcher keys the sink's queue,
//     breaker and dead letters by it.
//   - Deliver returns nil only once the destination holds the event: the event's envelope, the
//     JSON of api.Event (api.EncodeEvent's bytes, or the same value formatted otherwise), every
//     field as given. After nil the delivery is removed from the queue and never sent again.
//   - Delivery is at least once: the dispatcher sends an event again after an error, a lease
//     that ran out or a replay, always with the same api.Event.ID. Delivering an event again
//     must succeed, and the destination then holds copies that a consumer can tell apart only by
//     that ID (or one copy, for a destination that deduplicates).
//   - Deliver is called from several goroutines at once (Spec.Concurrency, 16 by default): it
//     is safe for concurrent use, and concurrent events arrive whole, none mixed into another.
//   - Deliver honours its context: the dispatcher bounds each attempt (Spec.Timeout) and a
//     sink must give up when the context ends, returning an error.
//   - Errors say what to do next: an error is retried on the schedule unless it is (or wraps)
//     a *sinks.Failure that says otherwise. A destination that is down or slow, or a context
//     that ended, gives a retryable error: Permanent (dead-letter at once) is for an event the
//     destination can never take, Disable for a destination that is gone for good.
//   - Close releases what the sink holds, after which what Deliver acknowledged is still at the
//     destination; the dispatcher calls it once, when every attempt has returned.
//   - A sink that also implements sinks.BatchSink answers DeliverBatch with one error per event,
//     as Deliver would for it alone.
//
// Run checks each of these in a subtest of its own, with a new Destination each time. What
// the suite cannot do to a destination by itself (stop it, make it hang) a Destination may
// offer with Break and Stall; without them those subtests are skipped, saying so.
package sinktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sinks"
)

// Destination is one sink under test and the means to look at, and interfere with, where it
// delivers.
type Destination struct {
	// Sink is the sink under test, built with the name Run passed. Run closes it.
	Sink sinks.Sink
	// Received returns what the destination holds now: one entry per copy of an event it
	// received, in any order, each the bytes of the event as the destination got them (a
	// request's body, a file's content, a message's payload, a line).
	Received func(t *testing.T) [][]byte
	// Break, when not nil, makes the destination fail from now on the way it fails in
	// production when it is down: a server stopped or answering 503, a disk refusing writes.
	Break func(t *testing.T)
	// Stall, when not nil, makes the destination take the sink's requests from now on and never
	// answer them, until the test ends.
	Stall func(t *testing.T)
}

// Features are what the contract leaves to a sink.
type Features struct {
	// ExactBytes: the destination receives each event as api.EncodeEvent(&ev, false) writes
	// it, byte for byte (compact JSON, no HTML escaping). Otherwise it receives the same JSON
	// value, formatted its own way (the file sink indents it).
	ExactBytes bool
	// Deduplicates: an event delivered twice is held once (the file sink writes the same file
	// again; JetStream drops a repeated message id).
	Deduplicates bool
}

// Bounds of the suite: how long an attempt may take on a sound destination, and how long past
// its context's end a sink may take to give up.
const (
	attemptTimeout = 10 * time.Second
	giveUpMargin   = 5 * time.Second
)

// Run runs the contract suite. open must return a new Destination for each call, built with
// name, and arrange the release of what it started (servers, folders) with t.Cleanup; Run
// closes the sink itself, before those cleanups run.
func Run(t *testing.T, f Features, open func(t *testing.T, name string) Destination) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Features, d Destination, name string)
	}{
		{"Name", testName},
		{"DeliversEveryField", testEveryField},
		{"DeliverAgain", testDeliverAgain},
		{"Concurrent", testConcurrent},
		{"ContextDone", testContextDone},
		{"DestinationDown", testDown},
		{"DestinationStalled", testStalled},
		{"DeliveredStaysAfterClose", testClose},
		{"Batch", testBatch},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("sinktest-%d", i)
			d := open(t, name)
			if d.Sink == nil || d.Received == nil {
				t.Fatal("open returned a Destination without Sink or Received")
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					if err := d.Sink.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				}
			})
			if tc.name == "DeliveredStaysAfterClose" {
				closed = true
			}
			tc.fn(t, f, d, name)
		})
	}
}

// Events returns the events the suite delivers: one of each type the pipeline publishes, with
// the data it gives them (a job record with a transcript, subtitle files, a live message), an
// optional field set or not, and text that JSON encoders like to escape (<, >, &, U+2028,
// non-ASCII). Their ids start with prefix, so that each call gives new events.
func Events(prefix string) []api.Event {
	at := time.Date(2026, 3, 1, 10, 11, 12, 345e6, time.UTC)
	job := prefix + "-job"
	session := prefix + "-session"
	ev := func(n int, typ, jobID string, kind api.JobKind, data string) api.Event {
		return api.Event{
			ID:        fmt.Sprintf("%s-%04d", prefix, n),
			Type:      typ,
			CreatedAt: api.NewTime(at.Add(time.Duration(n) * time.Millisecond)),
			JobID:     jobID,
			Kind:      kind,
			Data:      json.RawMessage(data),
		}
	}
	created := ev(1, api.EventJobCreated, job, api.KindPreRecorded, `{"id":"`+job+`","status":"queued","kind":"pre-recorded"}`)
	created.CustomMetadata = json.RawMessage(`{"team":"docs","tags":["a","b"]}`)
	succeeded := ev(2, api.EventJobSucceeded, job, api.KindPreRecorded, `{"id":"`+job+`","status":"done","kind":"pre-recorded",`+
		`"result":{"transcription":{"full_transcript":"Tom & Jerry <3> café\u2028ok","utterances":[`+
		`{"start":0.5,"end":1.75,"channel":0,"speaker":1,"text":"Tom & Jerry <3> café\u2028ok","language":"en",`+
		`"words":[{"word":"Tom","start":0.5,"end":0.75,"confidence":0.9}]}]}}}`)
	succeeded.CustomMetadata = created.CustomMetadata
	subtitles := ev(3, api.EventSubtitlesReady, job, api.KindPreRecorded, `{"job_id":"`+job+`","files":[`+
		`{"format":"srt","language":"en","name":"subtitles.en.srt","content":"1\n00:00:00,500 --> 00:00:01,750\nTom & Jerry <3>\n"},`+
		`{"format":"vtt","language":"en","name":"subtitles.en.vtt","content":"WEBVTT\n\n00:00.500 --> 00:01.750\nTom &amp; Jerry &lt;3&gt;\n"}]}`)
	failed := ev(4, api.EventJobFailed, prefix+"-job2", api.KindPreRecorded, `{"id":"`+prefix+`-job2","status":"error","error_code":422}`)
	live := ev(5, "live.transcript", session, api.KindLive, `{"type":"transcript","session_id":"`+session+`",`+
		`"created_at":"2026-03-01T10:11:12.350Z","data":{"id":"u1","is_final":true,"utterance":{"text":"<b>bold</b> & “quoted”","start":1,"end":2,"channel":0}}}`)
	live.Category = api.CategoryFinalTranscripts
	return []api.Event{created, succeeded, subtitles, failed, live}
}

// deliver delivers ev within attemptTimeout and fails the test on an error.
func deliver(t *testing.T, s sinks.Sink, ev api.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	if err := s.Deliver(ctx, ev); err != nil {
		t.Fatalf("Deliver(%s %s): %v", ev.Type, ev.ID, err)
	}
}

// received decodes what the destination holds, by event id. A copy that is not an event's
// JSON fails the test.
func received(t *testing.T, d Destination) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, b := range d.Received(t) {
		var head struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &head); err != nil || head.ID == "" {
			t.Fatalf("the destination holds something that is not an event's JSON (%v):\n%.300s", err, b)
		}
		out[head.ID] = append(out[head.ID], b)
	}
	return out
}

// checkCopy compares one copy the destination holds with the event it is of.
func checkCopy(t *testing.T, f Features, ev api.Event, got []byte) {
	t.Helper()
	want, err := api.EncodeEvent(&ev, false)
	if err != nil {
		t.Fatal(err)
	}
	if f.ExactBytes {
		if !bytes.Equal(got, want) {
			t.Errorf("event %s (%s) arrived as\n%s\nwant the envelope's bytes\n%s", ev.ID, ev.Type, got, want)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("event %s: %v", ev.ID, err)
		return
	}
	_ = json.Unmarshal(want, &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("event %s (%s) arrived as\n%s\nwant the same JSON value as\n%s", ev.ID, ev.Type, got, want)
	}
}

// checkRetryable fails the test unless err is an error the dispatcher retries.
func checkRetryable(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: Deliver returned nil", what)
		return
	}
	var f *sinks.Failure
	if errors.As(err, &f) {
		if f.Err == nil {
			t.Errorf("%s: a *sinks.Failure without Err", what)
			return
		}
		if f.Permanent || f.Disable {
			t.Errorf("%s: %v is Permanent %v, Disable %v; want an error the dispatcher retries", what, err, f.Permanent, f.Disable)
		}
	}
	_ = err.Error() // must not panic
}

func testName(t *testing.T, _ Features, d Destination, name string) {
	if got := d.Sink.Name(); got != name {
		t.Errorf("Name() = %q, want %q, the name the sink was built with", got, name)
	}
}

func testEveryField(t *testing.T, f Features, d Destination, _ string) {
	evs := Events("every")
	for _, ev := range evs {
		deliver(t, d.Sink, ev)
	}
	got := received(t, d)
	for _, ev := range evs {
		copies := got[ev.ID]
		if len(copies) != 1 {
			t.Errorf("event %s (%s) is held %d times, want once", ev.ID, ev.Type, len(copies))
			continue
		}
		checkCopy(t, f, ev, copies[0])
	}
	if len(got) != len(evs) {
		t.Errorf("the destination holds %d events, want %d", len(got), len(evs))
	}
}

func testDeliverAgain(t *testing.T, f Features, d Destination, _ string) {
	evs := Events("again")
	for _, ev := range evs {
		deliver(t, d.Sink, ev)
	}
	for _, ev := range evs { // as after a lost acknowledgment, or a replay
		deliver(t, d.Sink, ev)
	}
	got := received(t, d)
	for _, ev := range evs {
		copies := got[ev.ID]
		switch {
		case f.Deduplicates && len(copies) != 1:
			t.Errorf("event %s delivered twice is held %d times, want once (Features.Deduplicates)", ev.ID, len(copies))
		case len(copies) < 1 || len(copies) > 2:
			t.Errorf("event %s delivered twice is held %d times, want once or twice", ev.ID, len(copies))
		}
		for _, c := range copies {
			checkCopy(t, f, ev, c)
		}
	}
}

func testConcurrent(t *testing.T, f Features, d Destination, _ string) {
	const workers = 8
	var evs []api.Event
	for w := range workers {
		evs = append(evs, Events(fmt.Sprintf("concurrent%d", w))...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(evs))
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(evs); i += workers {
				ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
				if err := d.Sink.Deliver(ctx, evs[i]); err != nil {
					errs <- fmt.Errorf("Deliver(%s): %w", evs[i].ID, err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := received(t, d)
	for _, ev := range evs {
		if len(got[ev.ID]) != 1 {
			t.Errorf("event %s is held %d times, want once", ev.ID, len(got[ev.ID]))
			continue
		}
		checkCopy(t, f, ev, got[ev.ID][0])
	}
}

func testContextDone(t *testing.T, f Features, d Destination, _ string) {
	ev := Events("cancelled")[1]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err := d.Sink.Deliver(ctx, ev)
	if took := time.Since(start); took > giveUpMargin {
		t.Errorf("Deliver with a context already done took %s", took.Round(time.Millisecond))
	}
	if err == nil {
		// Allowed only if it did deliver: nil removes the delivery from the queue.
		got := received(t, d)
		if len(got[ev.ID]) == 0 {
			t.Fatal("Deliver with a context already done returned nil, and the destination does not hold the event")
		}
		checkCopy(t, f, ev, got[ev.ID][0])
		return
	}
	checkRetryable(t, "a context already done", err)
	if !errors.Is(err, context.Canceled) {
		t.Logf("note: the error (%v) does not wrap context.Canceled", err)
	}
}

func testDown(t *testing.T, _ Features, d Destination, _ string) {
	if d.Break == nil {
		t.Skip("the Destination has no Break: a destination that is down is not tested")
	}
	d.Break(t)
	const timeout = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := d.Sink.Deliver(ctx, Events("down")[4])
	if took := time.Since(start); took > timeout+giveUpMargin {
		t.Errorf("Deliver to a destination that is down took %s with a context of %s", took.Round(time.Millisecond), timeout)
	}
	checkRetryable(t, "a destination that is down", err)
}

func testStalled(t *testing.T, _ Features, d Destination, _ string) {
	if d.Stall == nil {
		t.Skip("the Destination has no Stall: a destination that never answers is not tested")
	}
	d.Stall(t)
	const timeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := d.Sink.Deliver(ctx, Events("stalled")[4])
	if took := time.Since(start); took > timeout+giveUpMargin {
		t.Errorf("Deliver to a destination that never answers returned after %s, its context ended after %s",
			took.Round(time.Millisecond), timeout)
	}
	checkRetryable(t, "a destination that never answers", err)
}

func testClose(t *testing.T, f Features, d Destination, _ string) {
	evs := Events("close")
	for _, ev := range evs {
		deliver(t, d.Sink, ev)
	}
	if err := d.Sink.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got := received(t, d)
	for _, ev := range evs {
		if len(got[ev.ID]) != 1 {
			t.Errorf("event %s, delivered before Close, is held %d times after it, want once", ev.ID, len(got[ev.ID]))
			continue
		}
		checkCopy(t, f, ev, got[ev.ID][0])
	}
}

func testBatch(t *testing.T, f Features, d Destination, _ string) {
	bs, ok := d.Sink.(sinks.BatchSink)
	if !ok {
		t.Skip("the sink is no sinks.BatchSink")
	}
	evs := Events("batch")
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	errs := bs.DeliverBatch(ctx, evs)
	if len(errs) != len(evs) {
		t.Fatalf("DeliverBatch of %d events answered %d errors", len(evs), len(errs))
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("DeliverBatch: event %s: %v", evs[i].ID, err)
		}
	}
	got := received(t, d)
	for _, ev := range evs {
		if len(got[ev.ID]) != 1 {
			t.Errorf("event %s of the batch is held %d times, want once", ev.ID, len(got[ev.ID]))
			continue
		}
		checkCopy(t, f, ev, got[ev.ID][0])
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	more := Events("batchcancelled")
	errs = bs.DeliverBatch(done, more)
	if len(errs) != len(more) {
		t.Fatalf("DeliverBatch of %d events with a context done answered %d errors", len(more), len(errs))
	}
	for i, err := range errs {
		if err != nil {
			checkRetryable(t, "a batch with a context done", err)
		} else if len(received(t, d)[more[i].ID]) == 0 {
			t.Errorf("DeliverBatch with a context done: nil for event %s, which the destination does not hold", more[i].ID)
		}
	}
}
