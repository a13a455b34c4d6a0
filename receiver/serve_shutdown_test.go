package receiver

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// TestShutdownRightAfterServe: a Shutdown that comes before Serve's server has taken its
// listener (fasthttp only knows a listener once its Serve runs) must still end Serve, and a
// Serve after Shutdown must refuse, its listener closed, rather than serve for ever.
func TestShutdownRightAfterServe(t *testing.T) {
	for i := range 20 {
		h := newHarness(t, withSetup(setupNetHTTP)) // serves through net/http; Serve is ours here
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- h.rcv.Serve(ln) }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := h.rcv.Shutdown(ctx); err != nil {
			t.Fatalf("round %d: shutdown: %v", i, err)
		}
		cancel()
		select {
		case err := <-served:
			// nil if Serve got in first, the refusal if Shutdown did: either way it ended.
			if err != nil && err.Error() != "receiver: serve after shutdown" {
				t.Fatalf("round %d: Serve ended with %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Serve still running 10 s after Shutdown returned", i)
		}
		late, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.rcv.Serve(late); err == nil || err.Error() != "receiver: serve after shutdown" {
			t.Fatalf("round %d: Serve after Shutdown: %v", i, err)
		}
		if _, err := late.Accept(); err == nil {
			t.Fatalf("round %d: the refused listener is still open", i)
		}
	}
}

// TestShutdownBeforeFasthttpTakesTheListener holds Serve where the race of
// TestShutdownRightAfterServe is lost (Serve past its own check, fasthttp not yet holding the
// listener: Fiber's OnListen hooks run there) and shuts down meanwhile: Serve must still end,
// with nil, once let go, because Shutdown closed the listener itself; a later Shutdown, which
// fasthttp answers by closing that listener again, succeeds.
func TestShutdownBeforeFasthttpTakesTheListener(t *testing.T) {
	h := newHarness(t, withSetup(setupNetHTTP))
	listening, proceed := make(chan struct{}), make(chan struct{})
	let := sync.OnceFunc(func() { close(proceed) })
	t.Cleanup(let) // a failing test must not leave Serve held
	h.rcv.App().Hooks().OnListen(func(fiber.ListenData) error {
		close(listening)
		<-proceed
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.rcv.Serve(ln) }()
	<-listening
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.rcv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	let()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve ended with %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve still running 10 s after Shutdown returned")
	}
	// fasthttp took the listener Shutdown had closed: closing it again is no failure.
	if err := h.rcv.Shutdown(ctx); err != nil {
		t.Fatalf("a second shutdown: %v", err)
	}
}
