package receiver

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReadRoutesCheckCredentialBeforeBody: a route of the read API with a body (a dead letter's
// replay) is refused on its headers when the credential is missing or wrong: the answer comes
// while most of the body has not been sent, and the connection closes. In every set-up. (A
// fasthttp server, Serve's or a parent Fiber app's, waits for the first 8 KiB of a streamed
// body before any handler runs: that much is sent.)
func TestReadRoutesCheckCredentialBeforeBody(t *testing.T) {
	for _, setup := range []setupKind{setupStandalone, setupFiberStreaming, setupNetHTTP} {
		for _, auth := range []string{"", "Authorization: Bearer wrong-token-0123456789abcdef\r\n"} {
			t.Run(string(setup)+fmt.Sprintf("/auth=%t", auth != ""), func(t *testing.T) {
				h := newHarness(t, withSetup(setup))
				conn := dialFrom(t, h, "")
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{%s", h.path("/v1/deadletters/1/replay"), auth, strings.Repeat(" ", 9<<10))
				br := bufio.NewReader(conn)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("no answer before the body: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				want := `{"error":"missing bearer token","status":401}`
				if auth != "" {
					want = `{"error":"invalid bearer token","status":401}`
				}
				if resp.StatusCode != http.StatusUnauthorized || string(b) != want {
					t.Errorf("%d %s, want 401 %s", resp.StatusCode, b, want)
				}
				if !resp.Close {
					t.Errorf("the connection stays open with the body unread")
				}
			})
		}
	}
}

// TestReadRoutesBoundBodyTime: an authenticated body sent a byte at a time is cut once
// otherBodyTimeout has passed, and the connection closed, whatever the parent server sets:
// net/http has no body timeout of its own, and drains an unread body before closing. (Under a
// parent Fiber app a body smaller than fasthttp's 8 KiB read-ahead is the parent's to bound,
// with its ReadTimeout: Mount's documentation says so.)
func TestReadRoutesBoundBodyTime(t *testing.T) {
	for _, setup := range []setupKind{setupStandalone, setupNetHTTP} {
		t.Run(string(setup), func(t *testing.T) {
			h := newHarness(t, withSetup(setup), withReceiver(func(r *Receiver) { r.otherBodyTimeout = 500 * time.Millisecond }))
			conn := dialFrom(t, h, "")
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n", h.path("/v1/deadletters/1/replay"), testReadToken)
			sent := make(chan int, 1)
			go func() {
				n := 0
				for ; n < 60; n++ {
					if _, err := conn.Write([]byte(" ")); err != nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				sent <- n
			}()
			b, _ := io.ReadAll(conn) // until the server closes
			_ = conn.Close()
			n := <-sent
			if n >= 60 {
				t.Fatalf("the whole slow body was taken (%d bytes over %s): %q", n, 60*200*time.Millisecond, b)
			}
			if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 4") {
				t.Errorf("answered %q", b)
			}
		})
	}
}
