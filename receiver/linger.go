package receiver

import (
	"io"
	"net"
	"sync"
	"time"
)

// Bounds of the drain after a connection closes.
const (
	lingerTimeout  = time.Second
	lingerMaxBytes = 64 << 20
)

// lingerListener makes closing an accepted connection a half-close followed by a short drain
// of what the client still sends. fasthttp answers a body over BodyLimit with 413 and closes
// at once, the body unread; a plain close of a socket with unread data sends a TCP reset, and a
// client still writing its body loses the 413 to "connection reset by peer". net/http lingers
// the same way for the same reason. With perAddr set, it also refuses connections past the cap
// of their client address (connlimit.go); a connection counts until it is closed.
type lingerListener struct {
	net.Listener
	perAddr *addrCounter
}

func (l lingerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		lc := &lingerConn{TCPConn: tc}
		if key, counted := clientKey(tc.RemoteAddr()); counted && l.perAddr != nil {
			if !l.perAddr.acquire(key) {
				go refuseConn(tc)
				continue
			}
			lc.release = func() { l.perAddr.release(key) }
		}
		return lc, nil
	}
}

type lingerConn struct {
	*net.TCPConn
	release func() // frees the connection's place under its address's cap; nil when none
	once    sync.Once
	err     error
}

// Close sends FIN, then reads and discards until the client closes too, lingerTimeout passes
// or lingerMaxBytes were read, and only then releases the socket, off the caller's goroutine.
func (c *lingerConn) Close() error {
	c.once.Do(func() {
		if c.release != nil {
			c.release()
		}
		if err := c.TCPConn.CloseWrite(); err != nil {
			c.err = c.TCPConn.Close()
			return
		}
		go func() {
			_ = c.TCPConn.SetReadDeadline(time.Now().Add(lingerTimeout))
			_, _ = io.CopyN(io.Discard, c.TCPConn, lingerMaxBytes)
			_ = c.TCPConn.Close()
		}()
	})
	return c.err
}
