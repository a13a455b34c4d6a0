package receiver

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// acceptLinger returns the server side of a loopback connection, accepted through Serve's
// listener, and the client side, which sends nothing and never closes unless the test does:
// a client that keeps an idle connection in its pool without reading it.
func acceptLinger(t *testing.T) (*lingerConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	c, err := lingerListener{Listener: ln}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	lc, ok := c.(*lingerConn)
	if !ok {
		t.Fatalf("accepted %T, want *lingerConn", c)
	}
	return lc, client
}

// readResult runs c.Read in the background, as fasthttp's goroutine for the connection does.
func readResult(c net.Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 64))
		done <- err
	}()
	return done
}

func wantEOF(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("%s: read returned %v, want io.EOF", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: read still blocked 30 s after Close (its deadline was a minute away)", what)
	}
}

// The shutdown closes idle connections from another goroutine than the one reading them. The
// read must end then, not at the server's own deadline (a minute here, two for a kept-alive
// connection), nor be held by the drain (which would read the client's next request away).
func TestCloseFromAnotherGoroutineEndsTheRead(t *testing.T) {
	c, _ := acceptLinger(t)
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	done := readResult(c)
	time.Sleep(50 * time.Millisecond) // the read is blocked
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wantEOF(t, "blocked read", done)
}

// fasthttp's goroutine may set its idle deadline just after the connection was closed from
// elsewhere (it checks for the shutdown, then sets the deadline; fasthttp's shutdown closes the
// idle connections in between): that deadline must not keep the next read waiting, for as long
// as a client keeps the connection in its pool.
func TestDeadlineAfterCloseDoesNotHoldTheRead(t *testing.T) {
	c, _ := acceptLinger(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the drain has started
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("set read deadline after close: %v", err)
	}
	wantEOF(t, "read after close", readResult(c))
}

// What the client sends after the close is drained, not served: an answer could not go out.
func TestRequestAfterCloseIsNotServed(t *testing.T) {
	c, client := acceptLinger(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(client, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	wantEOF(t, "request after close", readResult(c))
	// The client sees the server's FIN.
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := client.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("client read %d bytes, %v; want EOF", n, err)
	}
}

// During a shutdown a request body still arriving gets a bound, the read waiting now included.
func TestLimitReadsBoundsTheReadInProgress(t *testing.T) {
	c, _ := acceptLinger(t)
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	done := readResult(c)
	time.Sleep(50 * time.Millisecond)
	c.limitReads(time.Now().Add(100 * time.Millisecond))
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("read returned %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("read still blocked 30 s after limitReads")
	}
	// A later deadline asked by the server stays under the limit.
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("read after the limit succeeded, want a timeout")
	}
}
