package receiver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// rawAnswer is everything a server wrote on a connection until it closed it.
type rawAnswer struct {
	bytes   []byte
	elapsed time.Duration // from the last byte sent to the server's close
	closed  bool          // the server closed the connection (EOF), rather than the deadline passing
}

// rawConversation sends req on a fresh connection from the loopback address from (127.0.0.1
// when empty) and reads until the server closes the connection or wait passes.
func rawConversation(t *testing.T, h *harness, from, req string, wait time.Duration) rawAnswer {
	t.Helper()
	conn := dialFrom(t, h, from)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("write request: %v", err)
	}
	sent := time.Now()
	_ = conn.SetReadDeadline(sent.Add(wait))
	b, err := io.ReadAll(conn)
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	if err != nil && !timedOut {
		// A reset after the answer still counts as a close.
		t.Logf("read: %v", err)
	}
	return rawAnswer{bytes: b, elapsed: time.Since(sent), closed: !timedOut}
}

// dialFrom opens a connection to the harness, however it is served, from the loopback address
// from when one is given; the connection is closed when the test ends.
func dialFrom(t *testing.T, h *harness, from string) net.Conn {
	t.Helper()
	u, err := url.Parse(h.base)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	conn, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatalf("dial from %q: %v", from, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// responses parses every response in an answer; rest is what did not parse as one.
func responses(t *testing.T, a rawAnswer) (resps []*http.Response, bodies [][]byte, rest []byte) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(a.bytes))
	for {
		if _, err := br.Peek(1); err != nil {
			return resps, bodies, nil
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			rest, _ := io.ReadAll(br)
			return resps, bodies, rest
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response body: %v", err)
		}
		resps, bodies = append(resps, resp), append(bodies, b)
	}
}

// wantOneJSONError checks that an answer is exactly one response, with status and the body
// {"error":msg,"status":status}, and that the server closed the connection after it.
func wantOneJSONError(t *testing.T, a rawAnswer, status int, msg string) {
	t.Helper()
	resps, bodies, rest := responses(t, a)
	if len(resps) == 0 {
		t.Fatalf("no response (closed %v after %s): %q", a.closed, a.elapsed.Round(time.Millisecond), a.bytes)
	}
	want := fmt.Sprintf(`{"error":%q,"status":%d}`, msg, status)
	if resps[0].StatusCode != status || string(bodies[0]) != want {
		t.Errorf("answered %d %s, want %d %s", resps[0].StatusCode, bodies[0], status, want)
	}
	if ct := resps[0].Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if !resps[0].Close {
		t.Errorf("the response does not say Connection: close")
	}
	if len(resps) > 1 || len(rest) > 0 {
		t.Errorf("%d more responses after the first (%d) and %q: the rest of the connection was read as requests", len(resps)-1, resps[len(resps)-1].StatusCode, rest)
	}
	if !a.closed {
		t.Errorf("the connection was still open %s after the request", a.elapsed.Round(time.Millisecond))
	}
}

// TestAmbiguousFramingRefused: a request whose body length two parsers could read differently
// (RFC 9112 §6.3) is refused before any handler and the connection closed, so that what follows
// its headers (here a pipelined GET) is never read as a request; nothing is stored.
func TestAmbiguousFramingRefused(t *testing.T) {
	h := newHarness(t)
	path := "/v1/callbacks/" + testRouteToken
	body := `{"id":"job-1","event":"transcription.error","error":{"message":"x"}}`
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	smuggled := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	const (
		bothLengths   = "request has both Content-Length and Transfer-Encoding"
		malformed     = "malformed request"
		notChunked    = "unsupported transfer coding: only chunked is accepted"
		notChunkedSts = http.StatusNotImplemented
	)
	for _, tc := range []struct {
		name, head, body string
		status           int
		msg              string
	}{
		// CL.TE: a front end that frames by Content-Length forwards the whole thing as one
		// request; read as chunked, the GET would be a second one.
		{"CL.TE", "Content-Length: %[1]d\r\nTransfer-Encoding: chunked\r\n", chunked + smuggled, http.StatusBadRequest, bothLengths},
		{"TE.CL", "Transfer-Encoding: chunked\r\nContent-Length: %[1]d\r\n", chunked + smuggled, http.StatusBadRequest, bothLengths},
		{"TE.CL, zero length", "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n", chunked + smuggled, http.StatusBadRequest, bothLengths},
		{"identity with a length", "Transfer-Encoding: identity\r\nContent-Length: %[1]d\r\n", body + smuggled, http.StatusBadRequest, bothLengths},
		{"two equal lengths", "Content-Length: %[1]d\r\nContent-Length: %[1]d\r\n", body + smuggled, http.StatusBadRequest, malformed},
		{"two different lengths", "Content-Length: %[1]d\r\nContent-Length: 3\r\n", body + smuggled, http.StatusBadRequest, malformed},
		{"a list of lengths", "Content-Length: %[1]d, %[1]d\r\n", body + smuggled, http.StatusBadRequest, malformed},
		{"a signed length", "Content-Length: +%[1]d\r\n", body + smuggled, http.StatusBadRequest, malformed},
		{"gzip, chunked", "Transfer-Encoding: gzip, chunked\r\n", chunked + smuggled, notChunkedSts, notChunked},
		{"chunked, then identity", "Transfer-Encoding: chunked, identity\r\n", chunked + smuggled, notChunkedSts, notChunked},
		{"identity alone", "Transfer-Encoding: identity\r\n", body + smuggled, notChunkedSts, notChunked},
		{"two Transfer-Encoding lines", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", chunked + smuggled, notChunkedSts, notChunked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			framing := tc.head
			if strings.Contains(framing, "%") {
				framing = fmt.Sprintf(framing, len(tc.body)-len(smuggled))
			}
			head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing + "\r\n"
			a := rawConversation(t, h, "", head+tc.body, 5*time.Second)
			wantOneJSONError(t, a, tc.status, tc.msg)
		})
	}
	// Transfer-Encoding in HTTP/1.0 is faulty framing too (RFC 9112 §6.1).
	t.Run("Transfer-Encoding in HTTP/1.0", func(t *testing.T) {
		req := "POST " + path + " HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + smuggled
		wantOneJSONError(t, rawConversation(t, h, "", req, 5*time.Second), notChunkedSts, notChunked)
	})
	h.assertNothingStored()
	if got := h.logs.String(); strings.Contains(got, "panic") {
		t.Errorf("logs: %s", got)
	}
}

// TestRefusedBeforeBody: a callback whose token (or route) is refused is answered as soon as
// its headers are in, though its body never comes: fasthttp would otherwise wait for up to
// 8 KiB of it, until the read timeout, before any handler runs. The connection then closes.
func TestRefusedBeforeBody(t *testing.T) {
	h := newHarness(t)
	const bad = "not-a-token-0123456789abcdef0123"
	for _, tc := range []struct {
		name, req string
		status    int
		msg       string
	}{
		{"unknown token, 100000 bytes announced", "POST /v1/callbacks/" + bad + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 401, "unknown callback token"},
		{"unknown token, PUT", "PUT /v1/callbacks/" + bad + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 401, "unknown callback token"},
		{"unknown token, trailing slash", "POST /v1/callbacks/" + bad + "/ HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 401, "unknown callback token"},
		{"unknown token, absolute URI", "POST http://x/V1/Callbacks/" + bad + "?a=b HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 401, "unknown callback token"},
		{"unknown token, 7 bytes announced", "POST /v1/callbacks/" + bad + " HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n", 401, "unknown callback token"},
		{"unknown token, chunked", "POST /v1/callbacks/" + bad + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 401, "unknown callback token"},
		// No 100 Continue: the client must not start sending.
		{"unknown token, Expect: 100-continue", "POST /v1/callbacks/" + bad + " HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n", 401, "unknown callback token"},
		{"a path no route takes", "POST /v1/callbacks/" + bad + "/more HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 404, "no such callback route"},
		{"a method no route takes", "PATCH /v1/callbacks/" + testRouteToken + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 405, "Method Not Allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rawConversation(t, h, "", tc.req, 5*time.Second)
			t.Logf("answered and closed %s after the headers", a.elapsed.Round(time.Microsecond))
			if a.elapsed > 2*time.Second {
				t.Errorf("answered after %s, want well before the %s read timeout", a.elapsed.Round(time.Millisecond), readTimeout)
			}
			wantOneJSONError(t, a, tc.status, tc.msg)
			if bytes.Contains(a.bytes, []byte("100 Continue")) {
				t.Errorf("the answer invites the body: %q", a.bytes)
			}
		})
	}
	h.assertNothingStored()
}

// TestAcceptedAfterPreBodyCheck: the check before the body refuses nothing the routes accept:
// valid tokens under the path spellings Fiber routes, with and without Expect: 100-continue.
func TestAcceptedAfterPreBodyCheck(t *testing.T) {
	h := newHarness(t)
	for i, tc := range []struct{ name, target, extra string }{
		{"plain", "/v1/callbacks/" + testRouteToken, ""},
		{"trailing slashes", "/v1/callbacks/" + testRouteToken + "//", ""},
		{"upper-case prefix and a query", "/V1/CALLBACKS/" + testRouteToken + "?x=1", ""},
		{"absolute URI", "http://x/v1/callbacks/" + testRouteToken, ""},
		{"Expect: 100-continue", "/v1/callbacks/" + testRouteToken, "Expect: 100-continue\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"id":"job-pre-%d","event":"transcription.error","error":{"message":"x"}}`, i)
			conn := dialFrom(t, h, "")
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n", tc.target, tc.extra, len(body))
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			if tc.extra != "" {
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != http.StatusContinue {
					t.Fatalf("want 100 Continue first: %v %v", resp, err)
				}
			}
			if _, err := io.WriteString(conn, body); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Close {
				t.Errorf("answered %d %s (close %v), want 200 on a kept connection", resp.StatusCode, b, resp.Close)
			}
		})
	}
	if n := len(h.inbox()); n != 5 {
		t.Errorf("stored %d deliveries, want 5", n)
	}
}

// TestMalformedRequestsNotEchoed: the answer to a request fasthttp cannot parse is the
// receiver's own JSON error and never quotes the request, whose line carries a callback token.
func TestMalformedRequestsNotEchoed(t *testing.T) {
	const secret = "echo-secret-token-5f0c9a1e7b3d48c2"
	h := newHarness(t)
	h.secrets = append(h.secrets, secret)
	line := "POST /v1/callbacks/" + secret + " HTTP/1.1\r\n"
	for _, tc := range []struct {
		name, req string
		status    int
		msg       string
	}{
		{"header line without a colon", line + "Host: x\r\nNo colon " + secret + "\r\n\r\n", 400, "malformed request"},
		{"space before the colon", line + "Host: x\r\nX-A : b\r\n\r\n", 400, "malformed request"},
		{"control byte in a header value", line + "Host: x\r\nX-A: a\x01" + secret + "\r\n\r\n", 400, "malformed request"},
		{"two Host headers", line + "Host: x\r\nHost: y\r\n\r\n", 400, "malformed request"},
		{"length not a number", line + "Host: x\r\nContent-Length: " + secret + "\r\n\r\n", 400, "malformed request"},
		{"two spaces in the request line", "POST  /v1/callbacks/" + secret + " HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed request"},
		{"no protocol", "POST /v1/callbacks/" + secret + "\r\nHost: x\r\n\r\n", 400, "malformed request"},
		{"control byte in the target", "POST /v1/callbacks/" + secret + "\x7f HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed request"},
		{"headers larger than the buffer", line + "Host: x\r\nX-A: " + strings.Repeat(secret, 400) + "\r\n\r\n", 431, "Request Header Fields Too Large"},
		{"token larger than the buffer", "POST /v1/callbacks/" + strings.Repeat(secret, 400) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431, "Request Header Fields Too Large"},
		{"unknown path under the callbacks", "GET /v1/callbacks/" + secret + "/x HTTP/1.1\r\nHost: x\r\n\r\n", 404, "no such callback route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rawConversation(t, h, "", tc.req, 5*time.Second)
			wantOneJSONError(t, a, tc.status, tc.msg)
			if bytes.Contains(a.bytes, []byte(secret)) || bytes.Contains(a.bytes, []byte(secret[:12])) {
				t.Errorf("the answer quotes the request: %q", a.bytes)
			}
		})
	}
	h.assertNothingStored()
}
