package receiver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestHeaderTimeout: a client that sends its headers a byte at a time holds the connection for
// the header timeout, not for the body's read timeout.
func TestHeaderTimeout(t *testing.T) {
	h := newHarness(t, withReceiver(func(r *Receiver) { r.headerTimeout = 300 * time.Millisecond }))
	conn := dialFrom(t, h, "")
	start := time.Now()
	if _, err := io.WriteString(conn, "POST /v1/callbacks/"+testRouteToken+" HTTP/1.1\r\nHost: x\r\nX-Slow: a"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(conn)
	elapsed := time.Since(start)
	t.Logf("closed after %s: %q %v", elapsed.Round(time.Millisecond), b, err)
	if elapsed > 3*time.Second {
		t.Errorf("a connection with unfinished headers held %s, want about the header timeout", elapsed.Round(time.Millisecond))
	}
	wantOneJSONError(t, rawAnswer{bytes: b, elapsed: elapsed, closed: err == nil}, http.StatusRequestTimeout, "Request Timeout")
}

// TestConnectionsPerAddressCapped: one client address holds at most MaxConnsPerIP connections,
// whatever they do (here nothing); the next is answered 429 and closed, while other addresses
// are served, and a slot freed is usable again.
func TestConnectionsPerAddressCapped(t *testing.T) {
	const limit = 4
	h := newHarness(t, withConfig(func(c *Config) { c.MaxConnsPerIP = limit }))
	held := make([]net.Conn, limit)
	for i := range held {
		held[i] = dialFrom(t, h, "127.0.0.1")
	}
	// The refused connection gets its answer whatever it sends: here a full request.
	over := rawConversation(t, h, "127.0.0.1", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
	wantOneJSONError(t, over, http.StatusTooManyRequests, "too many connections from this address")

	healthy := func(from string) {
		t.Helper()
		a := rawConversation(t, h, from, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5*time.Second)
		resps, bodies, _ := responses(t, a)
		if len(resps) != 1 || resps[0].StatusCode != http.StatusOK || string(bodies[0]) != `{"status":"ok"}` {
			t.Errorf("from %s: %q, want 200 {\"status\":\"ok\"}", from, a.bytes)
		}
	}
	healthy("127.0.0.2")

	// The held connections are still open and usable: the cap refused the newcomer, not them.
	for i, c := range held {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatalf("held connection %d: %v", i, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("held connection %d: %v %v", i, resp, err)
		}
	}
	_ = held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := rawConversation(t, h, "127.0.0.1", "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5*time.Second)
		if resps, _, _ := responses(t, a); len(resps) == 1 && resps[0].StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a freed slot was not usable again: %q", a.bytes)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClientKey: IPv4 clients are counted per address, IPv6 ones per /64 (what one subscriber
// usually holds).
func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7:1234", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:1234", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::"},
		{"[2001:db8:1:2:bbbb::9]:443", "2001:db8:1:2::"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := clientKey(a)
		if !ok || got.String() != tc.want {
			t.Errorf("clientKey(%s) = %v %v, want %s", tc.addr, got, ok, tc.want)
		}
	}
	if _, ok := clientKey(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}); ok {
		t.Errorf("a unix socket has a client key")
	}
}
