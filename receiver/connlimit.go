package receiver

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxConnsPerIP bounds the connections one client address holds at once when
// Config.MaxConnsPerIP is 0. Connections that send nothing, or headers a byte at a time, are
// the cheap way to exhaust a server, and the timeouts alone (headerTimeout, idleTimeout) let one
// address hold as many as it opens until they pass. The service delivers over a few kept-alive
// connections; 256 leaves room for a proxy or load balancer that carries every delivery from
// one address (behind a busier one, raise it or turn it off).
const DefaultMaxConnsPerIP = 256

// addrCounter counts the connections of each client address (clientKey).
type addrCounter struct {
	max int
	mu  sync.Mutex
	n   map[netip.Addr]int
}

func newAddrCounter(max int) *addrCounter {
	return &addrCounter{max: max, n: map[netip.Addr]int{}}
}

// acquire counts a connection of key, unless key holds max already.
func (a *addrCounter) acquire(key netip.Addr) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[key] >= a.max {
		return false
	}
	a.n[key]++
	return true
}

func (a *addrCounter) release(key netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[key]--; a.n[key] <= 0 {
		delete(a.n, key)
	}
}

// clientKey is what a client's connections are counted under: its IPv4 address, or the /64 of
// its IPv6 address, since one IPv6 subscriber usually holds a whole /64. ok is false for
// addresses without an IP (unix sockets): those are not counted.
func clientKey(addr net.Addr) (key netip.Addr, ok bool) {
	tcp, isTCP := addr.(*net.TCPAddr)
	if !isTCP {
		return netip.Addr{}, false
	}
	ip := keyOf(tcp.AddrPort().Addr().Unmap())
	return ip, ip.IsValid()
}

// tooManyConns answers a connection over its address's cap, in the receiver's JSON shape.
var tooManyConns = func() string {
	body := `{"error":"too many connections from this address","status":429}`
	return "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nRetry-After: " + retryAfter + "\r\nConnection: close\r\n\r\n" + body
}()

// refuseConn answers c with tooManyConns and closes it, off the accept loop; like lingerConn it
// half-closes and drains briefly first, so that a client still writing its request reads the
// answer rather than a reset.
func refuseConn(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(lingerTimeout))
	if _, err := io.WriteString(c, tooManyConns); err == nil {
		if tc, ok := c.(*net.TCPConn); ok && tc.CloseWrite() == nil {
			_, _ = io.CopyN(io.Discard, tc, lingerMaxBytes)
		}
	}
	_ = c.Close()
}
