package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// locatedDelivery is a live callback whose message the receiver located in its body, as it
// locates every one it classifies: payload is placed byte for byte between an envelope's
// members, with spaces around it.
func locatedDelivery(key, session string, typ api.MessageType, cat api.MessageCategory, payload string, at time.Time) store.Delivery {
	prefix := `{"id":"` + session + `","event":"live.` + string(typ) + `", "payload" :  `
	d := delivery(key)
	d.JobID, d.PartitionKey, d.MessageType, d.Category = session, session, typ, cat
	d.Event = "live." + string(typ)
	d.Body = []byte(prefix + payload + "\n}")
	d.Message, d.MessageAt = store.Span{Off: len(prefix), Len: len(payload)}, at
	return d
}

// testReceivedMessages: a located message reads back from the inbox row with its span and
// time, is appended by reference with its row's columns, numbered after its session's last in
// the order of the ids given (not the ids' order), alongside messages appended with a payload
// of their own; a row without a located message fails the call and rolls back.
func testReceivedMessages(t *testing.T, s store.Store) {
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	payloads := []string{
		`{"type":"transcript","session_id":"s-1","created_at":"2024-03-01T10:30:15.124Z","data":{"id":"u1","is_final":true}}`,
		"{\n \"type\" : \"speech_start\" ,\"é\":\"\\u00e9\"}",
		`{"type":"transcript","data":{"utterance":{"text":"bonjour"}}}`,
		`{"type":"transcript","n":4}`,
	}
	ds := []store.Delivery{
		locatedDelivery("r0", "s-1", api.MessageTranscript, api.CategoryFinalTranscripts, payloads[0], at(1)),
		locatedDelivery("r1", "s-1", api.MessageSpeechStart, api.CategorySpeechEvents, payloads[1], at(2)),
		locatedDelivery("r2", "s-2", api.MessageTranscript, api.CategoryPartialTranscripts, payloads[2], at(3)),
		locatedDelivery("r3", "s-1", api.MessageTranscript, api.CategoryFinalTranscripts, payloads[3], time.Time{}),
	}
	unlocated := delivery("r4")
	unlocated.JobID, unlocated.PartitionKey = "s-1", "s-1"
	res := ingest(t, s, append(ds, unlocated)...)
	for i, d := range ds {
		row := inboxRow(t, s, res[i].ID)
		if row.Message != d.Message || !row.MessageAt.Equal(d.MessageAt) {
			t.Errorf("row %d: message %+v at %v, want %+v at %v", i, row.Message, row.MessageAt, d.Message, d.MessageAt)
		}
		if got, ok := row.Message.Of(row.Body); !ok || string(got) != payloads[i] {
			t.Errorf("row %d: located message %q, want %q", i, got, payloads[i])
		}
	}
	if row := inboxRow(t, s, res[4].ID); row.Message != (store.Span{}) || !row.MessageAt.IsZero() {
		t.Errorf("a row without a located message reads back %+v at %v", row.Message, row.MessageAt)
	}

	// The unlocated row fails the call, and nothing of its group stays.
	all := []int64{res[0].ID, res[1].ID, res[2].ID, res[3].ID, res[4].ID}
	err := s.ApplyGroup(t.Context(), all, func(ctx context.Context, tx store.Tx, ids []int64) error {
		return tx.AppendReceivedMessages(ctx, ids)
	})
	if err == nil {
		t.Fatal("AppendReceivedMessages of a row without a located message succeeded")
	}
	if got := liveMessages(t, s, "s-1", 0, 0); len(got) != 0 {
		t.Fatalf("a failed group left %d messages", len(got))
	}

	// Given order r1, r0 (s-1), then r2 (s-2), one message with its own payload, then r3.
	own := liveMessage("s-1", res[4].ID, 9)
	group := []int64{res[1].ID, res[0].ID, res[2].ID, res[4].ID, res[3].ID}
	err = s.ApplyGroup(t.Context(), group, func(ctx context.Context, tx store.Tx, ids []int64) error {
		if err := tx.AppendReceivedMessages(ctx, ids[:3]); err != nil {
			return err
		}
		if seq, err := tx.AppendLiveMessage(ctx, own); err != nil || seq != 3 {
			t.Errorf("AppendLiveMessage after two located messages = %d, %v, want 3", seq, err)
		}
		return tx.AppendReceivedMessages(ctx, ids[4:])
	})
	if err != nil {
		t.Fatalf("ApplyGroup: %v", err)
	}
	located := func(i int, seq int64) store.LiveMessage {
		return store.LiveMessage{SessionID: ds[i].JobID, Seq: seq, Type: ds[i].MessageType, Category: ds[i].Category,
			CreatedAt: ds[i].MessageAt, ReceivedAt: ds[i].ReceivedAt, InboxID: res[i].ID, Payload: json.RawMessage(payloads[i])}
	}
	own.Seq = 3
	want1 := []store.LiveMessage{located(1, 1), located(0, 2), own, located(3, 4)}
	got1 := liveMessages(t, s, "s-1", 0, 0)
	if len(got1) != len(want1) {
		t.Fatalf("s-1 has %d messages, want %d", len(got1), len(want1))
	}
	for i := range want1 {
		checkLiveMessage(t, got1[i], want1[i])
	}
	if got := liveMessages(t, s, "s-1", 2, 1); len(got) != 1 || got[0].Seq != 3 {
		t.Errorf("s-1 after 2, limit 1: %+v", got)
	}
	got2 := liveMessages(t, s, "s-2", 0, 0)
	if len(got2) != 1 {
		t.Fatalf("s-2 has %d messages, want 1", len(got2))
	}
	checkLiveMessage(t, got2[0], located(2, 1))

	// A later Apply numbers after the group's.
	more := ingest(t, s, locatedDelivery("r5", "s-1", api.MessageTranscript, api.CategoryFinalTranscripts, `{"n":5}`, at(5)))
	apply(t, s, more[0].ID, func(ctx context.Context, tx store.Tx) error {
		return tx.AppendReceivedMessages(ctx, []int64{more[0].ID})
	})
	if got := liveMessages(t, s, "s-1", 4, 0); len(got) != 1 || got[0].Seq != 5 || string(got[0].Payload) != `{"n":5}` {
		t.Errorf("s-1 after 4: %+v", got)
	}
}

// testPruneKeepsReferencedInbox: a done inbox row whose message is stored by reference stays
// while the message does, whatever the inbox's retention; once its session's job is pruned
// with the messages, the next run deletes it, and a dry run counts the same.
func testPruneKeepsReferencedInbox(t *testing.T, s store.Store) {
	wall := time.Now()
	payload := `{"type":"transcript","data":{"is_final":true}}`
	res := ingest(t, s,
		locatedDelivery("p0", "s-p", api.MessageTranscript, api.CategoryFinalTranscripts, payload, base),
		locatedDelivery("p1", "s-p", api.MessageTranscript, api.CategoryFinalTranscripts, payload+" ", base))
	other := ingest(t, s, delivery("plain"))
	apply(t, s, other[0].ID, func(context.Context, store.Tx) error { return nil })
	err := s.ApplyGroup(t.Context(), []int64{res[0].ID, res[1].ID}, func(ctx context.Context, tx store.Tx, ids []int64) error {
		if err := tx.AppendReceivedMessages(ctx, ids); err != nil {
			return err
		}
		rec := jobRecord("s-p", api.StatusDone, api.KindLive, base, "")
		rec.Job.CompletedAt = api.PtrTime(base)
		rec.Local.Final = api.EventLiveEndSession
		return tx.PutJob(ctx, rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	inboxOnly := store.RetentionPolicy{Inbox: time.Hour}
	later := wall.Add(48 * time.Hour)
	for _, dry := range []bool{true, false} {
		rep := must(s.Prune(t.Context(), inboxOnly, later, dry))(t, "Prune")
		if rep.Rows[store.PruneInbox] != 1 {
			t.Errorf("dry run %v: inbox rows pruned %v, want 1 (the row without a message)", dry, rep.Rows)
		}
	}
	for _, id := range []int64{res[0].ID, res[1].ID} {
		if _, err := s.InboxRow(t.Context(), id); err != nil {
			t.Errorf("inbox row %d holding a message was pruned: %v", id, err)
		}
	}
	if got := liveMessages(t, s, "s-p", 0, 0); len(got) != 2 || string(got[1].Payload) != payload+" " {
		t.Fatalf("messages after pruning the inbox: %+v", got)
	}
	withJobs := store.RetentionPolicy{Inbox: time.Hour, Jobs: time.Hour}
	rep := must(s.Prune(t.Context(), withJobs, later, false))(t, "Prune")
	if rep.Rows[store.PruneJobs] != 1 || rep.Rows[store.PruneSessionRest] != 2 || rep.Rows[store.PruneInbox] != 0 {
		t.Errorf("the job's run pruned %v, want the job and its 2 messages", rep.Rows)
	}
	for _, dry := range []bool{true, false} {
		rep = must(s.Prune(t.Context(), withJobs, later, dry))(t, "Prune")
		if rep.Rows[store.PruneInbox] != 2 {
			t.Errorf("dry run %v after the job went: pruned %v, want its 2 inbox rows", dry, rep.Rows)
		}
	}
	if rows := must(s.InboxRows(t.Context(), []int64{res[0].ID, res[1].ID}))(t, "InboxRows"); len(rows) != 0 {
		t.Errorf("%d inbox rows left after their messages went", len(rows))
	}
}

// receivedTests are the subtests of messages stored by reference, for Run.
var receivedTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"ReceivedMessages", testReceivedMessages},
	{"PruneKeepsReferencedInbox", testPruneKeepsReferencedInbox},
	{"EventDataFromInbox", testEventDataFromInbox},
}

// testEventDataFromInbox: an event queued with its data in an inbox row (DataFrom) comes back
// with that row's message as its data, byte for byte, for every sink it goes to and as a dead
// letter; the row stays while the event does, and goes once the deliveries and the event are
// pruned.
func testEventDataFromInbox(t *testing.T, s store.Store) {
	// Spaced and with < and &: a copy in the event (compacted, escaped) would not read back so.
	payload := "{\"type\":\"transcript\", \"data\":{\"utterance\":{\"text\":\"a < b & c\"}}}"
	res := ingest(t, s, locatedDelivery("ev-in", "s-e", api.MessageTranscript, api.CategoryFinalTranscripts, payload, base))
	row := inboxRow(t, s, res[0].ID)
	data, _ := row.Message.Of(row.Body)
	ev := api.Event{ID: "ev-ref", Type: "live.transcript", CreatedAt: api.NewTime(base), JobID: "s-e", Kind: api.KindLive,
		Category: api.CategoryFinalTranscripts, CustomMetadata: json.RawMessage(`{"team":"x"}`), Data: data}
	apply(t, s, res[0].ID, func(ctx context.Context, tx store.Tx) error {
		if err := tx.AppendReceivedMessages(ctx, []int64{res[0].ID}); err != nil {
			return err
		}
		rec := jobRecord("s-e", api.StatusDone, api.KindLive, base, "")
		rec.Job.CompletedAt = api.PtrTime(base)
		rec.Local.Final = api.EventLiveEndSession
		if err := tx.PutJob(ctx, rec); err != nil {
			return err
		}
		return tx.EnqueueSinkDeliveries(ctx, []store.SinkDelivery{
			{Sink: "a", Event: ev, OrderKey: "s-e", CreatedAt: base, DataFrom: res[0].ID},
			{Sink: "b", Event: ev, OrderKey: "s-e", CreatedAt: base, DataFrom: res[0].ID},
		})
	})
	check := func(what string, d store.SinkDelivery) {
		t.Helper()
		if d.EventID != "ev-ref" || d.Event.ID != ev.ID || d.Event.Type != ev.Type || d.Event.JobID != ev.JobID ||
			d.Event.Category != ev.Category || string(d.Event.CustomMetadata) != `{"team":"x"}` || string(d.Event.Data) != payload {
			t.Errorf("%s: %+v with data %q, want the message %q", what, d.Event, d.Event.Data, payload)
		}
	}
	for _, sink := range []string{"a", "b"} {
		got := claim(t, s, sink, true, base.Add(time.Minute), 0)
		if len(got) != 1 {
			t.Fatalf("sink %s claimed %d", sink, len(got))
		}
		check("claimed by "+sink, got[0])
		if sink == "a" {
			if err := s.CompleteSinkDelivery(t.Context(), got[0].ID); err != nil {
				t.Fatal(err)
			}
		} else if err := s.KillSinkDelivery(t.Context(), got[0].ID, "410", base.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	dead := must(s.DeadLetters(t.Context(), "b", time.Time{}, 0))(t, "DeadLetters")
	if len(dead) != 1 {
		t.Fatalf("dead letters: %d", len(dead))
	}
	check("dead letter", dead[0])

	// The row stays while the message or the event's dead letter does, and goes once they went.
	later := time.Now().Add(48 * time.Hour)
	policy := store.RetentionPolicy{Inbox: time.Hour, SinkDelivered: time.Hour}
	for _, dry := range []bool{true, false} {
		rep := must(s.Prune(t.Context(), policy, later, dry))(t, "Prune")
		if rep.Rows[store.PruneInbox] != 0 || rep.Rows[store.PruneSinkDelivered] != 1 {
			t.Errorf("dry run %v: pruned %v, want sink a's delivery and not the inbox row", dry, rep.Rows)
		}
	}
	_ = inboxRow(t, s, res[0].ID)
	// The message itself still holds the row; once the session's record went with its message,
	// and the dead letter with its event, the next run takes the row.
	policy.DeadLetters, policy.Jobs = time.Hour, time.Hour
	rep := must(s.Prune(t.Context(), policy, later, false))(t, "Prune")
	if rep.Rows[store.PruneInbox] != 0 || rep.Rows[store.PruneJobs] != 1 || rep.Rows[store.PruneDeadLetters] != 1 || rep.Rows[store.PruneEvents] != 1 {
		t.Errorf("pruned %v, want the job with its message, the dead letter and its event", rep.Rows)
	}
	if rep := must(s.Prune(t.Context(), policy, later, false))(t, "Prune"); rep.Rows[store.PruneInbox] != 1 {
		t.Errorf("after the message and the event went: pruned %v, want the inbox row", rep.Rows)
	}
}
