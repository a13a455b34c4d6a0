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

	// Close may come from another goroutine than the server's one for this connection (the
	// shutdown sweep, fasthttp's closing of idle connections) while that goroutine is blocked
	// reading or about to set a deadline. mu orders Close against the deadlines: once closed,
	// the server's own deadlines are ignored, so none can outlast the drain's; reading is held
	// during the server's reads, so the drain starts once a read woken by Close has returned.
	mu       sync.Mutex
	closed   bool
	deadline time.Time // the read deadline the server asked for
	limit    time.Time // no read waits past it once set (limitReads); zero: none
	reading  sync.Mutex
}

// Read is the server's read: after Close it ends at once, as if the client had closed (io.EOF,
// which fasthttp takes quietly), and what a read in progress got is dropped, since no answer
// can go out any more.
func (c *lingerConn) Read(b []byte) (int, error) {
	c.reading.Lock()
	defer c.reading.Unlock()
	if c.isClosed() {
		return 0, io.EOF
	}
	n, err := c.TCPConn.Read(b)
	if c.isClosed() {
		return 0, io.EOF
	}
	return n, err
}

func (c *lingerConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *lingerConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil // reads end at once already
	}
	c.deadline = t
	return c.TCPConn.SetReadDeadline(c.bounded(t))
}

func (c *lingerConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.TCPConn.SetWriteDeadline(t)
}

// limitReads makes every read, the one waiting now included, give up by t: the shutdown's
// bound on a request body still arriving.
func (c *lingerConn) limitReads(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.limit = t
	_ = c.TCPConn.SetReadDeadline(c.bounded(c.deadline))
}

// bounded is deadline t under the limit, if any (a zero t waits for ever).
func (c *lingerConn) bounded(t time.Time) time.Time {
	if !c.limit.IsZero() && (t.IsZero() || t.After(c.limit)) {
		return c.limit
	}
	return t
}

// Close sends FIN, then reads and discards until the client closes too, lingerTimeout passes
// or lingerMaxBytes were read, and only then releases the socket, off the caller's goroutine.
// A read of the server's blocked on the connection returns at once.
func (c *lingerConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		// Wakes a read in progress; the server can no longer move this deadline.
		_ = c.TCPConn.SetReadDeadline(time.Unix(1, 0))
		c.mu.Unlock()
		if c.release != nil {
			c.release()
		}
		if err := c.TCPConn.CloseWrite(); err != nil {
			c.err = c.TCPConn.Close()
			return
		}
		go func() {
			// The server's read woken above returns before the drain's deadline is set, or it
			// would wait for that deadline instead.
			c.reading.Lock()
			c.reading.Unlock() //nolint:staticcheck // a barrier: later reads fail without the socket
			_ = c.TCPConn.SetReadDeadline(time.Now().Add(lingerTimeout))
			_, _ = io.CopyN(io.Discard, c.TCPConn, lingerMaxBytes)
			_ = c.TCPConn.Close()
		}()
	})
	return c.err
}
