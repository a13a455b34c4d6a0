package receiver

import (
	"context"
	"net"
	"testing"
	"time"
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
