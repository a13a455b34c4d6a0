package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/internal/teststore"
	"github.com/scribehook/scribehook/sinks"
)

// A live message's own event goes to its sinks with the message as the service sent it, byte
// for byte, spaces included: the event refers to the message in its inbox row (a copy would be
// the event's compacted JSON), alone or in a group, and a row of an earlier version (its
// message not located) still delivers its message.
func TestLiveEventDataIsTheReceivedMessage(t *testing.T) {
	t.Parallel()
	s := teststore.SQLite(t)
	payloads := []string{
		`{ "type" : "transcript", "session_id":"ref-s", "created_at":"2026-11-20T10:00:00.000Z", "data" : { "id":"u1", "is_final" : true, "utterance": {"text":"a < b"} } }`,
		`{"type":"speech_start",   "session_id":"ref-s","created_at":"2026-11-20T10:00:01.000Z","data":{"time":1.5}}`,
		`{"type":"speech_end",   "session_id":"ref-s","created_at":"2026-11-20T10:00:02.000Z","data":{"time":2.5}}`,
	}
	var ids []int64
	for i, p := range payloads {
		l := rawLive("ref-s", i, []byte(p))
		if i == 2 {
			l = unlocated(l)
		}
		ids = append(ids, ingest(t, s, nil, l.Delivery)...)
	}
	start(t, handlers.Config{Store: s, Partitions: 1, Sinks: []sinks.Spec{{Name: "hook", Filter: sinks.Filter{Events: []string{"live.*"}}}}})
	waitBacklogEmpty(t, s)
	got, err := s.ClaimSinkDeliveries(context.Background(), "hook", true, time.Now().Add(time.Hour), time.Minute, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %d, %v", len(got), err)
	}
	// Ordered: one at a time per session; take them all.
	for n := 1; n < len(payloads); n++ {
		more, err := s.CompleteAndClaimSinkDeliveries(context.Background(), []int64{got[len(got)-1].ID}, "hook", true,
			time.Now().Add(time.Hour), time.Minute, 0)
		if err != nil || len(more) != 1 {
			t.Fatalf("claim %d: %d, %v", n, len(more), err)
		}
		got = append(got, more...)
	}
	for i, d := range got {
		want := payloads[i]
		if i == 2 {
			// Stored by an earlier version's path: the event's own (compacted) copy.
			want = string(compact(t, payloads[i]))
		}
		if string(d.Event.Data) != want || d.Event.Kind != api.KindLive || d.Event.JobID != "ref-s" {
			t.Errorf("delivery %d (inbox row %d): %s data %q, want %q", i, ids[i], d.Event.Type, d.Event.Data, want)
		}
	}
}

func compact(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
