package receiver

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// rawExchange writes head (and body) on a fresh TCP connection and reads one response. The
// client never sends more than given: a server that waits for the rest of the announced body
// before answering makes this time out.
func rawExchange(t *testing.T, h *harness, head string, body []byte) (*http.Response, []byte, net.Conn, *bufio.Reader) {
	t.Helper()
	conn := dialFrom(t, h, "")
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatalf("write head: %v", err)
	}
	if _, err := conn.Write(body); err != nil {
		t.Fatalf("write body: %v", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read response (the server waited for a body it does not need?): %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	return resp, b, conn, br
}

func errorOf(t *testing.T, b []byte) string {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return e.Error
}

// TestBodyNotReadBeforeAuthentication: the answers that need no body come before the client
// sends it, and the connection then closes (the unread body must not be parsed as a request).
// fasthttp reads ahead up to 8 KiB of a body before any handler runs (readBodyWithStreaming),
// so the client sends that much and never the rest.
func TestBodyNotReadBeforeAuthentication(t *testing.T) {
	const limit = 4096
	h := newHarness(t, withConfig(func(c *Config) { c.BodyLimit = limit }))
	for _, tc := range []struct {
		name, token string
		length      int
		status      int
		msg         string
		contentType string // application/json when empty
	}{
		{"unknown token, 8 MiB announced", "not-a-token-0123456789abcdef0123", 8 << 20, http.StatusUnauthorized, "unknown callback token", ""},
		// fasthttp parses multipart forms before any handler (spilling files to disk) unless
		// told not to: the token must come first for them too.
		{"unknown token, 8 MiB multipart form announced", "not-a-token-0123456789abcdef0123", 8 << 20, http.StatusUnauthorized, "unknown callback token", "multipart/form-data; boundary=xyz"},
		{"unknown token, small body announced", "not-a-token-0123456789abcdef0123", 100, http.StatusUnauthorized, "unknown callback token", ""},
		{"valid token, over the limit announced", testRouteToken, limit + 1, http.StatusRequestEntityTooLarge, "request body exceeds 4096 bytes", ""},
		{"valid token, 1 GiB announced", testRouteToken, 1 << 30, http.StatusRequestEntityTooLarge, "request body exceeds 4096 bytes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := cmp.Or(tc.contentType, "application/json")
			head := fmt.Sprintf("POST /v1/callbacks/%s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", tc.token, ct, tc.length)
			resp, b, _, br := rawExchange(t, h, head, bytes.Repeat([]byte("a"), min(tc.length, 8<<10)))
			if resp.StatusCode != tc.status || !strings.Contains(errorOf(t, b), tc.msg) {
				t.Errorf("answered %d %s, want %d with %q", resp.StatusCode, b, tc.status, tc.msg)
			}
			if !resp.Close {
				t.Errorf("response does not close the connection (Connection: %q)", resp.Header.Get("Connection"))
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the answer: %v, want EOF (connection closed)", err)
			}
		})
	}
	h.assertNothingStored()
}

// TestUnroutedCallbackPathClosesConnection: a request on a callback path that no route takes
// (here 404) leaves its body unread; the connection must close rather than parse what is left
// of the body (here a second request) as the next request.
func TestUnroutedCallbackPathClosesConnection(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/v1/callbacks/a/b", "/v1/callbacks/" + testRouteToken} {
		t.Run(path, func(t *testing.T) {
			method := "POST"
			if !strings.Contains(path, "/a/") {
				method = "PATCH" // a method no callback route takes
			}
			smuggled := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
			body := strings.Repeat("x", 20000) + smuggled
			head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", method, path, len(body)-len(smuggled))
			resp, b, _, br := rawExchange(t, h, head, []byte(body))
			if resp.StatusCode < 400 || !resp.Close {
				t.Errorf("answered %d %s (close %v), want an error and a closed connection", resp.StatusCode, b, resp.Close)
			}
			if next, err := http.ReadResponse(br, nil); err == nil {
				t.Errorf("a second response (%d) came on the connection: the rest of the body was read as a request", next.StatusCode)
			}
		})
	}
	h.assertNothingStored()
}

// TestChunkedBodyOverLimit: a body without a length is read only up to the limit.
func TestChunkedBodyOverLimit(t *testing.T) {
	const limit = 4096
	h := newHarness(t, withConfig(func(c *Config) { c.BodyLimit = limit }))
	chunk := bytes.Repeat([]byte("a"), limit+1)
	head := "POST /v1/callbacks/" + testRouteToken + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
	body := append(fmt.Appendf(nil, "%x\r\n", len(chunk)), chunk...)
	body = append(body, "\r\n"...) // no last chunk: the server must not wait for it
	resp, b, _, _ := rawExchange(t, h, head, body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || errorOf(t, b) != "request body exceeds 4096 bytes" || !resp.Close {
		t.Errorf("answered %d %s (close %v), want 413 and a closed connection", resp.StatusCode, b, resp.Close)
	}
	h.assertNothingStored()
}

// TestKeepAliveAfterStreamedBodies: bodies read to their end leave the connection usable, and
// each request on it is stored with exactly its own bytes.
func TestKeepAliveAfterStreamedBodies(t *testing.T) {
	h := newHarness(t)
	tok := testRouteToken
	conn := dialFrom(t, h, "")
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	var sent [][]byte
	for i, size := range []int{10, 9000, 100_000, 3} {
		msg := strings.Repeat("x", size)
		body := fmt.Appendf(nil, `{"id":"job-%d","event":"transcription.error","error":{"message":%q}}`, i, msg)
		sent = append(sent, body)
		var head string
		if i%2 == 0 {
			head = fmt.Sprintf("POST /v1/callbacks/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tok, len(body))
			body = append([]byte(head), body...)
		} else {
			head = fmt.Sprintf("POST /v1/callbacks/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", tok)
			half := len(body) / 2
			chunked := fmt.Appendf([]byte(head), "%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", half, body[:half], len(body)-half, body[half:])
			body = chunked
		}
		if _, err := conn.Write(body); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("response %d: %d %s (close %v)", i, resp.StatusCode, b, resp.Close)
		}
	}
	rows := h.inbox()
	if len(rows) != len(sent) {
		t.Fatalf("stored %d rows, want %d", len(rows), len(sent))
	}
	for i, r := range rows {
		if !bytes.Equal(r.Body, sent[i]) {
			t.Errorf("row %d body has %d bytes, want the %d sent", i, len(r.Body), len(sent[i]))
		}
	}
}

// TestOtherRoutesBodyLimit: routes that are not callbacks take small bodies only.
func TestOtherRoutesBodyLimit(t *testing.T) {
	h := newHarness(t)
	head := fmt.Sprintf("POST /v1/deadletters/1/replay HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testReadToken, otherBodyLimit+1)
	resp, b, _, _ := rawExchange(t, h, head, bytes.Repeat([]byte("a"), 8<<10))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || errorOf(t, b) != fmt.Sprintf("request body exceeds %d bytes", otherBodyLimit) || !resp.Close {
		t.Errorf("answered %d %s (close %v), want 413 and a closed connection", resp.StatusCode, b, resp.Close)
	}
}

// readGrowing reads everything, in reads of any size, and a body of the announced length ends
// in a buffer of that length (+1), not in the next doubling.
func TestReadGrowing(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 70000) // 1,120,000 bytes
	for _, tc := range []struct {
		name      string
		r         io.Reader
		announced int
		wantCap   int
	}{
		{"announced", bytes.NewReader(body), len(body), len(body) + 1},
		{"announced, small reads", iotest.HalfReader(bytes.NewReader(body)), len(body), len(body) + 1},
		{"announced, one byte at a time", iotest.OneByteReader(bytes.NewReader(body[:70000])), 70000, 70001},
		{"unknown", bytes.NewReader(body), -1, 0},
		{"announced short of the body", bytes.NewReader(body), 1000, 0},
	} {
		got, err := readGrowing(tc.r, make([]byte, 0, 64<<10), tc.announced)
		want := body
		if tc.name == "announced, one byte at a time" {
			want = body[:70000]
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want %d", tc.name, len(got), err, len(want))
		}
		if tc.wantCap > 0 && cap(got) != tc.wantCap {
			t.Errorf("%s: buffer of %d bytes, want %d", tc.name, cap(got), tc.wantCap)
		}
	}
	if _, err := readGrowing(iotest.ErrReader(errors.New("boom")), nil, -1); err == nil || err.Error() != "boom" {
		t.Errorf("read error: %v", err)
	}
}
