package handlers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/handlers"
)

func pinged(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A subscriber of a session is pinged when a message of its session is stored, not for other
// sessions, and no more once it cancelled.
func TestSessionFeedPingsOnStoredMessages(t *testing.T) {
	t.Parallel()
	s, r := startOn(t, handlers.Config{Partitions: 1})
	feed := r.p.LocalFeed()
	ch, cancel := feed.Subscribe("feed-a")
	other, cancelOther := feed.Subscribe("feed-b")
	defer cancelOther()

	ids := ingest(t, s, r.p, newLive("feed-a", 0, api.MessageStartSession, nil).Delivery)
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatal("no ping for a stored message")
	}
	// The ping comes after the commit: the reader finds the message.
	if ms := liveMessages(t, s, "feed-a"); len(ms) != 1 || ms[0].InboxID != ids[0] {
		t.Fatalf("after the ping: %+v", ms)
	}
	if pinged(other) {
		t.Error("a subscriber of another session was pinged")
	}

	// Another session's message, then one of feed-a behind it in the one partition: when the
	// second is stored, the first was too, and only feed-a's subscriber was pinged.
	ingest(t, s, r.p, newLive("feed-b", 0, api.MessageStartSession, nil).Delivery)
	ingest(t, s, r.p, newLive("feed-a", 1, api.MessageTranscript, nil).Delivery)
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatal("no ping for the second message")
	}
	if !pinged(other) {
		t.Error("feed-b's subscriber was not pinged")
	}

	cancel()
	cancel() // idempotent
	applyAll(t, s, r.p, newLive("feed-a", 2, api.MessageSpeechStart, nil).Delivery)
	if pinged(ch) {
		t.Error("pinged after cancel")
	}
}

// The local feed on its own: pings never block, coalesce, reach every subscriber of the session,
// and cancel unsubscribes only its own channel.
func TestLocalFeedUnit(t *testing.T) {
	t.Parallel()
	f := handlers.NewLocalFeed()
	handlers.Publish(f, "nobody") // no subscribers: nothing happens
	a1, c1 := f.Subscribe("a")
	a2, c2 := f.Subscribe("a")
	b, cb := f.Subscribe("b")
	defer cb()
	for range 10 {
		handlers.Publish(f, "a") // never blocks, though nobody reads
	}
	if !pinged(a1) || !pinged(a2) {
		t.Fatal("a subscriber missed a ping")
	}
	if pinged(a1) || pinged(a2) {
		t.Error("pings did not coalesce")
	}
	if pinged(b) {
		t.Error("b pinged for a")
	}
	c1()
	handlers.Publish(f, "a")
	if pinged(a1) {
		t.Error("pinged after cancel")
	}
	if !pinged(a2) {
		t.Error("the other subscriber of a lost its pings")
	}
	c2()
	c1()
	handlers.Publish(f, "a")
	if pinged(a2) {
		t.Error("pinged after cancel")
	}

	// Concurrent use is safe (run with -race).
	var wg sync.WaitGroup
	ctx, stop := context.WithCancel(context.Background())
	for i := range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, c := f.Subscribe(fmt.Sprint("s", i%2))
				c()
			}
		})
	}
	for range 1000 {
		handlers.Publish(f, "s0")
		handlers.Publish(f, "s1")
	}
	stop()
	wg.Wait()
}
