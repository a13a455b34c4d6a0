package receiver

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/testmetrics"
)

func TestAuthLimiterBucket(t *testing.T) {
	now := testNow
	l := newAuthLimiter(3, 10*time.Second, func() time.Time { return now })
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for i := range 3 {
		if w := l.wait(a); w != 0 {
			t.Fatalf("wait before failure %d: %s", i+1, w)
		}
		l.fail(a)
	}
	if w := l.wait(a); w != 10*time.Second {
		t.Errorf("after 3 failures: wait %s, want 10s", w)
	}
	if w := l.wait(b); w != 0 {
		t.Errorf("another address waits %s", w)
	}
	now = now.Add(4 * time.Second)
	if w := l.wait(a); w != 6*time.Second {
		t.Errorf("4 s later: wait %s, want 6s", w)
	}
	now = now.Add(6 * time.Second)
	if w := l.wait(a); w != 0 {
		t.Errorf("after a refill: wait %s", w)
	}
	l.fail(a)
	if w := l.wait(a); w != 10*time.Second {
		t.Errorf("one failure after a refill: wait %s, want 10s", w)
	}
	// A bucket that has refilled is forgotten, and wait answers without the lock again.
	now = now.Add(time.Hour)
	if w := l.wait(a); w != 0 || len(l.buckets) != 0 || l.held.Load() != 0 {
		t.Errorf("an hour later: wait %s, %d buckets, held %d; want 0, 0, 0", w, len(l.buckets), l.held.Load())
	}
	if got := retryAfterSeconds(1500 * time.Millisecond); got != "2" {
		t.Errorf("Retry-After of 1.5 s: %s", got)
	}
	if got := retryAfterSeconds(time.Millisecond); got != "1" {
		t.Errorf("Retry-After of 1 ms: %s", got)
	}
	if newAuthLimiter(-1, 0, time.Now) != nil {
		t.Errorf("a negative burst turns the limit off")
	}
}

func TestAuthLimiterBounded(t *testing.T) {
	l := newAuthLimiter(2, time.Hour, func() time.Time { return testNow })
	for i := range maxAuthBuckets + 10 {
		var b [4]byte
		b[0], b[1], b[2], b[3] = 10, byte(i>>16), byte(i>>8), byte(i)
		l.fail(netip.AddrFrom4(b))
	}
	if n := len(l.buckets); n > maxAuthBuckets {
		t.Errorf("%d buckets, bound %d", n, maxAuthBuckets)
	}
}

func TestClientAddrKey(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	for _, tc := range []struct {
		name    string
		peer    net.Addr
		xff     string
		trusted []netip.Prefix
		want    string
	}{
		{"no proxy trusted", tcp("10.0.0.5:1234"), "198.51.100.7", nil, "10.0.0.5"},
		{"untrusted peer's header ignored", tcp("203.0.113.9:1"), "198.51.100.7", trusted, "203.0.113.9"},
		{"trusted proxy names the client", tcp("10.0.0.5:1"), "198.51.100.7", trusted, "198.51.100.7"},
		{"chain of trusted proxies", tcp("10.0.0.5:1"), "198.51.100.7, 10.1.1.1, 10.2.2.2", trusted, "198.51.100.7"},
		{"a client cannot forge the left", tcp("10.0.0.5:1"), "1.1.1.1, 198.51.100.7", trusted, "198.51.100.7"},
		{"garbage stops at the proxy", tcp("10.0.0.5:1"), "198.51.100.7, not-an-ip", trusted, "10.0.0.5"},
		{"no header", tcp("10.0.0.5:1"), "", trusted, "10.0.0.5"},
		{"IPv6 client counted by its /64", tcp("[fd00::1]:1"), "2001:db8:1:2:3:4:5:6", trusted, "2001:db8:1:2::"},
		{"IPv6 peer by its /64", tcp("[2001:db8:1:2::9]:1"), "", trusted, "2001:db8:1:2::"},
		{"IPv4-mapped", tcp("[::ffff:10.0.0.5]:1"), "198.51.100.7", trusted, "198.51.100.7"},
	} {
		if got := clientAddrKey(tc.peer, tc.xff, tc.trusted); got.String() != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestFailedAuthenticationsLimited: wrong bearer tokens, wrong sign-ins and unknown callback
// tokens take from their address's bucket; an address whose bucket is empty is answered 429
// with Retry-After even with the right credential, and counted; another address is not
// touched. In every set-up.
func TestFailedAuthenticationsLimited(t *testing.T) {
	limit := withConfig(func(c *Config) { c.AuthFailureBurst, c.AuthFailureRefill = 3, time.Minute })
	for _, setup := range []setupKind{setupStandalone, setupFiberStreaming, setupNetHTTP} {
		t.Run(string(setup), func(t *testing.T) {
			t.Run("read API", func(t *testing.T) {
				h := newHarness(t, withSetup(setup), limit)
				wrong := map[string]string{"Authorization": "Bearer not-the-read-token-0123456789"}
				for i := range 3 {
					if r := h.do(http.MethodGet, "/v1/jobs", nil, wrong); r.status != http.StatusUnauthorized {
						t.Fatalf("wrong token %d: %d %s", i+1, r.status, r.body)
					}
				}
				r := h.read("/v1/jobs")
				wantAnswer(t, r, http.StatusTooManyRequests, `{"error":"too many failed authentications from this address; retry later","status":429}`)
				if got := r.header.Get("Retry-After"); got != "60" {
					t.Errorf("Retry-After %q, want 60", got)
				}
				// Another address is not limited.
				if got := readFrom(t, h, "127.0.0.2", "/v1/jobs", testReadToken); got != http.StatusOK {
					t.Errorf("from another address: %d", got)
				}
				if v := testmetrics.Value(t, h.reg, "scribehook_auth_failures_total", "surface", "read"); v != 3 {
					t.Errorf("failures counted %v, want 3", v)
				}
				if v := testmetrics.Value(t, h.reg, "scribehook_auth_limited_total", "surface", "read"); v != 1 {
					t.Errorf("limited counted %v, want 1", v)
				}
			})
			t.Run("sign-in", func(t *testing.T) {
				h := newHarness(t, withSetup(setup), limit)
				for i := range 3 {
					resp := h.form("/ui/login", url.Values{"token": {"wrong-token-0123456789abcdef"}}, nil)
					if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "error=invalid") {
						t.Fatalf("wrong sign-in %d: %d %s", i+1, resp.StatusCode, resp.Header.Get("Location"))
					}
				}
				resp := h.form("/ui/login", url.Values{"token": {testReadToken}}, nil)
				if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" {
					t.Errorf("right sign-in after 3 wrong ones: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
				}
			})
			t.Run("callbacks", func(t *testing.T) {
				h := newHarness(t, withSetup(setup), limit)
				for i := range 3 {
					bad := "guessed-token-" + strings.Repeat(string(rune('a'+i)), 20)
					h.secrets = append(h.secrets, bad)
					if r := h.post(bad, errorBody(t, "11111111-0000-4000-8000-0000000000d1"), nil); r.status != http.StatusUnauthorized {
						t.Fatalf("unknown token %d: %d %s", i+1, r.status, r.body)
					}
				}
				r := h.post(testRouteToken, errorBody(t, "11111111-0000-4000-8000-0000000000d2"), nil)
				if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "60" {
					t.Errorf("right token after 3 unknown ones: %d %s, Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
				}
				if n := len(h.inbox()); n != 0 {
					t.Errorf("%d rows stored from a limited address", n)
				}
				if v := testmetrics.Value(t, h.reg, "scribehook_auth_failures_total", "surface", "callback"); v != 3 {
					t.Errorf("callback failures counted %v, want 3", v)
				}
			})
		})
	}
}

// TestFailedAuthenticationsBehindTrustedProxy: behind a proxy of the operator's, each client
// named by X-Forwarded-For has its own bucket; the proxy's own address is never limited for
// them.
func TestFailedAuthenticationsBehindTrustedProxy(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) {
		c.AuthFailureBurst, c.AuthFailureRefill = 2, time.Minute
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}))
	from := func(client, token string) int {
		return h.do(http.MethodGet, "/v1/jobs", nil, map[string]string{"Authorization": "Bearer " + token, "X-Forwarded-For": client}).status
	}
	for range 2 {
		from("198.51.100.7", "wrong-token-0123456789abcdef")
	}
	if got := from("198.51.100.7", testReadToken); got != http.StatusTooManyRequests {
		t.Errorf("the guessing client: %d, want 429", got)
	}
	if got := from("198.51.100.8", testReadToken); got != http.StatusOK {
		t.Errorf("another client behind the proxy: %d, want 200", got)
	}
}

// readFrom is a GET with a bearer token from the loopback address from.
func readFrom(t *testing.T, h *harness, from, path, token string) int {
	t.Helper()
	a := rawConversation(t, h, from, "GET "+h.path(path)+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "+token+"\r\n\r\n", 5*time.Second)
	resps, _, _ := responses(t, a)
	if len(resps) != 1 {
		t.Fatalf("%d responses: %q", len(resps), a.bytes)
	}
	return resps[0].StatusCode
}
