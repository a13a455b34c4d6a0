package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"
	"github.com/valyala/fasthttp"
)

// Handler serves the receiver's routes with net/http, for programs without Fiber: the callback
// routes, POST|PUT /v1/callbacks/{token}, and the others opts asks for, at the handler's root.
// Under a prefix, strip it: mux.Handle("/hooks/", http.StripPrefix("/hooks", h)); paging links
// and the dashboard's redirects then carry the prefix back (Config.PublicURL, when set, is where
// the receiver is reached, prefix included, as the callback URLs are).
//
// The callback routes are net/http's own: the body is streamed, so the token is checked before
// a byte of it is read (and net/http sends no 100 Continue to a client that asked, before
// then); the body is read through http.MaxBytesReader, bounded by Config.BodyLimit (413, before
// and after content decoding), with 60 s to arrive; the commit gets 15 s, then 503 and
// Retry-After. The other routes run on a Fiber app of the receiver's own, reached through a
// small bridge that keeps their behaviour: a route that takes a credential (the read API,
// /metrics) checks it on the headers before it reads a byte of the body; bodies up to 1 MiB,
// with 15 s to arrive, whatever the parent server sets (the deadline is put on the net/http
// connection itself, and a body that fails is not drained); event streams flushed event by
// event (with 30 s to write each), the receiver's JSON answers. The server's timeouts
// (ReadHeaderTimeout above all, as net/http has none by default), TLS and connection limits are
// the program's to set on its http.Server; Serve's refusals on the headers and per-address cap
// are Serve's alone.
func (r *Receiver) Handler(opts MountOptions) http.Handler {
	h := &httpHandler{r: r}
	if opts.ReadAPI || opts.Health || opts.Metrics || opts.Dashboard {
		app := fiber.New(fiber.Config{
			DisableStartupMessage:        true,
			DisablePreParseMultipartForm: true,
			ErrorHandler:                 r.errorHandler,
			JSONEncoder:                  marshalPlain,
		})
		r.registerOthers(app, opts)
		h.rest = app.Handler()
	}
	return h
}

// httpHandler is what Handler returns.
type httpHandler struct {
	r *Receiver
	// rest serves every path that is not a callback's; nil when opts asked for none.
	rest fasthttp.RequestHandler
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.EscapedPath()
	if !strings.HasPrefix(path, "/") {
		path = "/" + path // http.StripPrefix("/hooks/", …) leaves "v1/…"
	}
	token, callback, routed := splitCallbackPath(path)
	switch {
	case !callback && h.rest == nil:
		// Never the path in the answer: it may hold a token in a spelling no route takes.
		closeUnreadHTTP(w, req)
		writeHTTPJSON(w, http.StatusNotFound, apiError{Error: "no such route", Status: http.StatusNotFound})
	case !callback:
		h.bridge(w, req, path)
	case !routed:
		closeUnreadHTTP(w, req)
		writeHTTPJSON(w, http.StatusNotFound, apiError{Error: "no such callback route", Status: http.StatusNotFound})
	case req.Method != http.MethodPost && req.Method != http.MethodPut:
		closeUnreadHTTP(w, req)
		writeHTTPJSON(w, http.StatusMethodNotAllowed, apiError{Error: http.StatusText(http.StatusMethodNotAllowed), Status: http.StatusMethodNotAllowed})
	default:
		h.callback(w, req, token, path)
	}
}

// callback serves a callback route with the core (serveCallback), under the same recovery as
// the Fiber routes (guard): net/http's own would drop the connection without an answer.
func (h *httpHandler) callback(w http.ResponseWriter, req *http.Request, token, path string) {
	hc := &httpCallback{w: w, req: req, trusted: h.r.cfg.TrustedProxies}
	defer func() {
		if e := recover(); e != nil {
			h.r.log.WithFields(logrus.Fields{
				// The route's pattern: the path holds the token.
				"path": strippedPrefix(req, path) + callbackPath + "{token}", "panic": fmt.Sprint(e), "stack": string(debug.Stack()),
			}).Error("handler panicked")
			w.Header().Set("Connection", "close")
			writeHTTPJSON(w, http.StatusInternalServerError, apiError{Error: "internal error", Status: http.StatusInternalServerError})
		}
	}()
	a := h.r.serveCallback(token, hc)
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	if a.bodyFailed {
		w.Header().Set("Connection", "close")
	}
	if !hc.read {
		closeUnreadHTTP(w, req)
	}
	writeHTTPJSON(w, a.status, a.body)
}

// closeUnreadHTTP closes the connection after an answer that leaves the body of req unread:
// net/http would otherwise read up to 256 KiB of it before answering, to keep the connection,
// and a callback refused on its token must not wait for its body.
func closeUnreadHTTP(w http.ResponseWriter, req *http.Request) {
	if req.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

// httpCallback is a callback request carried by net/http.
type httpCallback struct {
	w   http.ResponseWriter
	req *http.Request
	// read: body was called, whatever came of it.
	read    bool
	trusted []netip.Prefix
}

func (hc *httpCallback) client() netip.Addr {
	return clientAddrKey(addrOf(hc.req.RemoteAddr), hc.req.Header.Get("X-Forwarded-For"), hc.trusted)
}

func (hc *httpCallback) header(name string) string { return hc.req.Header.Get(name) }

func (hc *httpCallback) body(limit int) (body []byte, err error) {
	hc.read = true
	announced := hc.req.ContentLength // -1: unknown (chunked)
	if announced > int64(limit) {
		return nil, errBodyTooLarge
	}
	rc := http.NewResponseController(hc.w)
	if err := rc.SetReadDeadline(time.Now().Add(readTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return nil, fmt.Errorf("set read deadline: %w", err)
	}
	// net/http sets the next request's deadline itself, but its check for a closed connection
	// reads on after the body: it must not meet ours. A body that failed keeps a deadline in
	// the past, so that net/http does not drain the rest of it (a slow sender) before closing.
	defer func() {
		until := time.Time{}
		if err != nil {
			until = time.Now()
		}
		_ = rc.SetReadDeadline(until)
	}()
	size := initialBodyBuffer
	if announced >= 0 && announced < int64(size) {
		size = int(announced) + 1 // +1: the read that sees EOF needs room, or Buffer grows
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	// MaxBytesReader also makes the server close the connection after a body past the limit.
	_, err = buf.ReadFrom(http.MaxBytesReader(hc.w, hc.req.Body, int64(limit)))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, errBodyTooLarge
	case err != nil:
		return nil, fmt.Errorf("read body: %w", err)
	}
	return buf.Bytes(), nil
}

// writeHTTPJSON is writeError and sendJSON for net/http.
func writeHTTPJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshalPlain(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error","status":500}`)
	}
	w.Header().Set("Content-Type", fiber.MIMEApplicationJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// bridge runs a request that is not a callback on the Fiber app of Handler. Fiber's own adaptor
// (adaptor.FiberApp) does not fit: it routes by RequestURI, which http.StripPrefix leaves
// whole, reads any body without a bound, buffers the whole answer (an event stream never
// ends), and gives handlers a connection whose deadlines panic.
func (h *httpHandler) bridge(w http.ResponseWriter, req *http.Request, path string) {
	if req.ContentLength > otherBodyLimit {
		closeUnreadHTTP(w, req)
		writeHTTPJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: tooLargeMsg(otherBodyLimit), Status: http.StatusRequestEntityTooLarge})
		return
	}
	rc := http.NewResponseController(w)
	conn := &bridgeConn{rc: rc, remote: addrOf(req.RemoteAddr)}
	if a, ok := req.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		conn.local = a
	}
	var fctx fasthttp.RequestCtx
	fctx.Init2(conn, fasthttpLogger{h.r.log}, false)
	fr := &fctx.Request
	fr.Header.SetMethod(req.Method)
	uri := path
	if req.URL.RawQuery != "" {
		uri += "?" + req.URL.RawQuery
	}
	fr.SetRequestURI(uri)
	fr.Header.SetHost(req.Host)
	for k, vs := range req.Header {
		for _, v := range vs {
			fr.Header.Add(k, v)
		}
	}
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0 {
		// The body goes to the route as a stream, as on Serve: a route that takes a credential
		// checks it on the headers before reading (readRoute), every route reads it bounded in
		// size (here and in readBody) and in time (readRouteBody, through bridgeConn's
		// deadlines on the net/http connection), whatever the parent server sets.
		fr.SetBodyStream(http.MaxBytesReader(w, req.Body, otherBodyLimit), int(req.ContentLength))
	}
	prefix := strippedPrefix(req, path)
	fctx.SetUserValue(mountPrefixKey{}, prefix)

	h.rest(&fctx)

	resp := &fctx.Response
	hdr := w.Header()
	for k, v := range resp.Header.All() {
		name := http.CanonicalHeaderKey(string(k))
		value := string(v)
		switch name {
		case "Content-Length", "Connection", "Transfer-Encoding", "Date":
			continue // net/http's own
		case "Location":
			// Fiber sees the path without the prefix; the client needs it back.
			if strings.HasPrefix(value, "/") && !strings.HasPrefix(value, "//") {
				value = prefix + value
			}
		}
		hdr.Add(name, value)
	}
	if resp.ConnectionClose() {
		hdr.Set("Connection", "close")
	}
	if !resp.IsBodyStream() {
		w.WriteHeader(resp.StatusCode())
		_, _ = w.Write(resp.Body())
		return
	}
	copyStream(w, rc, req.Context(), resp)
}

// copyStream writes a streamed answer (server-sent events) as it comes, flushing each piece.
// The stream's writer learns that the client went away when its next write fails: closing the
// stream, when the request's context ends, is what makes it fail.
func copyStream(w http.ResponseWriter, rc *http.ResponseController, ctx context.Context, resp *fasthttp.Response) {
	stream := resp.BodyStream()
	closeStream := sync.OnceFunc(func() {
		if c, ok := stream.(io.Closer); ok {
			_ = c.Close()
		}
	})
	defer closeStream()
	stop := context.AfterFunc(ctx, closeStream)
	defer stop()
	w.WriteHeader(resp.StatusCode())
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := stream.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// strippedPrefix is what http.StripPrefix took off the path of req (whose path is now path):
// RequestURI keeps the path as the client sent it.
func strippedPrefix(req *http.Request, path string) string {
	u, err := url.ParseRequestURI(req.RequestURI)
	if err != nil {
		return ""
	}
	full := u.EscapedPath()
	rest := strings.TrimPrefix(path, "/")
	if !strings.HasSuffix(full, rest) {
		return ""
	}
	return strings.TrimRight(full[:len(full)-len(rest)], "/")
}

func tooLargeMsg(limit int) string {
	return fmt.Sprintf("request body exceeds %d bytes", limit)
}

// addrOf is the address net/http gives as a request's RemoteAddr, as fasthttp wants it.
func addrOf(s string) net.Addr {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return &net.TCPAddr{}
	}
	return net.TCPAddrFromAddrPort(ap)
}

// bridgeConn is the connection the Fiber handlers of the bridge see: addresses, and deadlines
// that apply to the net/http connection (the event stream moves its write deadline per event).
// Nothing reads or writes through it: the bridge carries the bytes.
type bridgeConn struct {
	rc            *http.ResponseController
	local, remote net.Addr
}

var errBridgeConn = errors.New("not a connection: the net/http bridge carries the bytes")

func (c *bridgeConn) Read([]byte) (int, error)  { return 0, errBridgeConn }
func (c *bridgeConn) Write([]byte) (int, error) { return 0, errBridgeConn }
func (c *bridgeConn) Close() error              { return nil }
func (c *bridgeConn) LocalAddr() net.Addr {
	if c.local == nil {
		return &net.TCPAddr{}
	}
	return c.local
}
func (c *bridgeConn) RemoteAddr() net.Addr { return c.remote }
func (c *bridgeConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}
func (c *bridgeConn) SetReadDeadline(t time.Time) error {
	return ignoreUnsupported(c.rc.SetReadDeadline(t))
}
func (c *bridgeConn) SetWriteDeadline(t time.Time) error {
	return ignoreUnsupported(c.rc.SetWriteDeadline(t))
}

// ignoreUnsupported: a ResponseWriter without deadlines (a test recorder, some middleware)
// leaves them to the server.
func ignoreUnsupported(err error) error {
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}

// fasthttpLogger sends what fasthttp logs about a bridged request to the receiver's log.
type fasthttpLogger struct{ log *logrus.Entry }

func (l fasthttpLogger) Printf(format string, args ...any) { l.log.Debugf(format, args...) }

// LogPathHTTP is LogPath for a program's own net/http server (the receiver under Handler): the
// request's path fit for its access log, cut after "callbacks" (…/v1/callbacks/…), so that a
// callback token never reaches the log, whatever the spelling or the escaping (a path no
// route took may hold one too). Log it instead of r.URL or r.RequestURI, which hold the
// token; it works before or after http.StripPrefix, on any request of the server.
func (r *Receiver) LogPathHTTP(req *http.Request) string {
	p := req.URL.Path
	if esc := req.URL.EscapedPath(); esc != p {
		// Escaped letters ("%63allbacks", or escaped twice) are decoded until the word shows.
		for range 3 {
			if red := redactPath(esc); red != esc {
				return red
			}
			un, err := url.PathUnescape(esc)
			if err != nil || un == esc {
				break
			}
			esc = un
		}
	}
	return redactPath(p)
}
