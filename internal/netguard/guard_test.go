package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The decision table: every address here is only checked, never dialled.
func TestCheckAddrDecisions(t *testing.T) {
	tests := []struct {
		addr    string
		checked string // the address the range was found for; "" when allowed
		rng     string
	}{
		{"127.0.0.1", "127.0.0.1", "127.0.0.0/8"},
		{"127.255.255.254", "127.255.255.254", "127.0.0.0/8"},
		{"::1", "::1", "::1/128"},
		{"::ffff:127.0.0.1", "127.0.0.1", "127.0.0.0/8"},
		{"::ffff:7f00:2", "127.0.0.2", "127.0.0.0/8"},
		{"64:ff9b::7f00:1", "127.0.0.1", "127.0.0.0/8"},
		{"2002:7f00:1::", "127.0.0.1", "127.0.0.0/8"},
		{"::127.0.0.1", "::7f00:1", "::/96"},
		{"0.0.0.0", "0.0.0.0", "0.0.0.0/8"},
		{"0.1.2.3", "0.1.2.3", "0.0.0.0/8"},
		{"::", "::", "::/128"},
		{"::ffff:0.0.0.0", "0.0.0.0", "0.0.0.0/8"},
		{"10.0.0.1", "10.0.0.1", "10.0.0.0/8"},
		{"172.16.0.1", "172.16.0.1", "172.16.0.0/12"},
		{"172.31.255.255", "172.31.255.255", "172.16.0.0/12"},
		{"192.168.1.1", "192.168.1.1", "192.168.0.0/16"},
		{"::ffff:192.168.1.1", "192.168.1.1", "192.168.0.0/16"},
		{"fd12:3456::1", "fd12:3456::1", "fc00::/7"},
		{"169.254.1.1", "169.254.1.1", "169.254.0.0/16"},
		{"fe80::1", "fe80::1", "fe80::/10"},
		{"fe80::1%eth0", "fe80::1", "fe80::/10"},
		{"100.64.0.1", "100.64.0.1", "100.64.0.0/10"},
		{"100.127.255.255", "100.127.255.255", "100.64.0.0/10"},
		{"169.254.169.254", "169.254.169.254", "169.254.169.254/32"},
		{"::ffff:169.254.169.254", "169.254.169.254", "169.254.169.254/32"},
		{"100.100.100.200", "100.100.100.200", "100.100.100.200/32"},
		{"fd00:ec2::254", "fd00:ec2::254", "fd00:ec2::254/128"},
		{"168.63.129.16", "168.63.129.16", "168.63.129.16/32"},
		{"::ffff:168.63.129.16", "168.63.129.16", "168.63.129.16/32"},
		// IPv4-translated (SIIT, ::ffff:0:a.b.c.d): the IPv4 address is what is reached.
		{"::ffff:0:a9fe:a9fe", "169.254.169.254", "169.254.169.254/32"},
		{"::ffff:0:7f00:1", "127.0.0.1", "127.0.0.0/8"},
		{"224.0.0.1", "224.0.0.1", "224.0.0.0/4"},
		{"255.255.255.255", "255.255.255.255", "240.0.0.0/4"},
		// Public: passed.
		{"8.8.8.8", "", ""},
		{"100.63.255.255", "", ""},
		{"100.128.0.0", "", ""},
		{"172.32.0.1", "", ""},
		{"::ffff:8.8.8.8", "", ""},
		{"::ffff:0:808:808", "", ""},
		{"168.63.129.17", "", ""},
		{"2606:4700::1111", "", ""},
	}
	g := FromPrefixes(nil)
	for _, tt := range tests {
		err := g.CheckAddr(netip.MustParseAddr(tt.addr))
		if tt.checked == "" {
			if err != nil {
				t.Errorf("CheckAddr(%s) = %v, want allowed", tt.addr, err)
			}
			continue
		}
		var be *BlockedAddressError
		if !errors.As(err, &be) {
			t.Errorf("CheckAddr(%s) = %v, want a BlockedAddressError", tt.addr, err)
			continue
		}
		if be.Checked.String() != tt.checked || be.Range.String() != tt.rng {
			t.Errorf("CheckAddr(%s) blocked %s in %s, want %s in %s", tt.addr, be.Checked, be.Range, tt.checked, tt.rng)
		}
		if !strings.Contains(err.Error(), tt.rng) || !strings.Contains(err.Error(), "allow") {
			t.Errorf("CheckAddr(%s) error %q names neither range nor allow-list", tt.addr, err)
		}
	}
}

func TestFromPrefixesAllows(t *testing.T) {
	g := FromPrefixes([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("10.1.0.0/16"), {}})
	assertBlocked(t, g, map[string]bool{
		"127.0.0.2":          false,
		"::ffff:127.0.0.2":   false,
		"127.0.0.1":          true,
		"::1":                true,
		"10.1.200.3":         false,
		"10.2.0.1":           true,
		"169.254.169.254":    true,
		"0.0.0.0":            true,
		"::ffff:169.254.0.1": true,
	})
	u, _ := url.Parse("http://localhost/")
	if g.HostAllowed(u.Hostname()) {
		t.Error("a prefix-only guard allows a host name")
	}
}

func TestParsePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.0/8":    "127.0.0.0/8",
		"127.0.0.9/8":    "127.0.0.0/8",
		" 10.1.2.3 ":     "10.1.2.3/32",
		"::1":            "::1/128",
		"fe80::1%eth0":   "fe80::1/128",
		"fd00::/8":       "fd00::/8",
		"10.0.0.0/33":    "error",
		"localhost":      "error",
		"":               "error",
		"127.0.0.1:8080": "error",
	} {
		p, err := ParsePrefix(in)
		got := p.String()
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("ParsePrefix(%q) = %s (%v), want %s", in, got, err, want)
		}
	}
}

func TestCheckURLAndRedirect(t *testing.T) {
	g := FromPrefixes([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	for raw, ok := range map[string]bool{
		"http://127.0.0.1:9/a.wav":          true,
		"https://example.com/a.wav":         true,
		"http://127.0.0.2/a.wav":            false,
		"http://2130706434/a.wav":           false, // 127.0.0.2
		"http://[::ffff:127.0.0.2]/a.wav":   false,
		"http://[::ffff:127.0.0.1]/a.wav":   true,
		"http://0.0.0.0/a.wav":              false,
		"http://[::]/a.wav":                 false,
		"http://169.254.169.254/latest":     false,
		"file:///etc/passwd":                false,
		"ftp://example.com/a.wav":           false,
		"http:///a.wav":                     false,
		"http://256.0.0.1/a.wav":            false,
		"http://metadata.google.internal/x": true, // a name: checked at dial time
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.CheckURL(u); (err == nil) != ok {
			t.Errorf("CheckURL(%s) = %v, want ok %v", raw, err, ok)
		}
		req := &http.Request{URL: u}
		via := []*http.Request{{}}
		if err := g.CheckRedirect(10)(req, via); (err == nil) != ok {
			t.Errorf("CheckRedirect to %s = %v, want ok %v", raw, err, ok)
		}
	}
	u, _ := url.Parse("http://127.0.0.1/")
	if err := g.CheckRedirect(3)(&http.Request{URL: u}, make([]*http.Request, 3)); err == nil || !strings.Contains(err.Error(), "3 redirects") {
		t.Errorf("fourth redirect = %v, want stopped after 3", err)
	}
}

// countingServer answers 200 "ok" on addr (a loopback address) and counts the requests.
func countingServer(t *testing.T, addr string, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h.ServeHTTP(w, r)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

func guardedClient(g *Guard) *http.Client {
	return &http.Client{Transport: NewDialer(g, nil).Transport(nil), CheckRedirect: g.CheckRedirect(10)}
}

// Only loopback is dialled: refused without the allowance (no request reaches the server),
// served with it, in every spelling of the address.
func TestDialerLoopback(t *testing.T) {
	srv, hits := countingServer(t, "127.0.0.1:0", nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	hosts := []string{"127.0.0.1", "2130706433", "0x7f.0.0.1", "[::ffff:127.0.0.1]"}

	refusing := guardedClient(FromPrefixes(nil))
	for _, h := range hosts {
		_, err := refusing.Get("http://" + h + ":" + port + "/")
		var be *BlockedAddressError
		if !errors.As(err, &be) || be.Checked != netip.MustParseAddr("127.0.0.1") {
			t.Errorf("GET %s without allowance = %v, want refused for 127.0.0.1", h, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the server was reached %d times without the allowance", hits.Load())
	}

	allowing := guardedClient(FromPrefixes([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}))
	for _, h := range hosts[:3] {
		resp, err := allowing.Get("http://" + h + ":" + port + "/")
		if err != nil {
			t.Fatalf("GET %s with allowance: %v", h, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Errorf("GET %s = %q", h, b)
		}
	}
	if hits.Load() != 3 {
		t.Errorf("hits %d, want 3", hits.Load())
	}
}

// The Control hook checks the address really dialled, after resolution: a dialer given a name
// that resolves to loopback ("localhost") is refused at connect time.
func TestDialerChecksResolvedAddress(t *testing.T) {
	srv, hits := countingServer(t, "127.0.0.1:0", nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	d := NewDialer(FromPrefixes(nil), nil)
	_, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("localhost", port))
	var be *BlockedAddressError
	if !errors.As(err, &be) || !be.Checked.IsLoopback() {
		t.Errorf("dial localhost = %v, want refused as loopback", err)
	}
	if _, err := d.DialContext(context.Background(), "udp", net.JoinHostPort("127.0.0.1", port)); err == nil {
		t.Error("udp dial passed")
	}
	if hits.Load() != 0 {
		t.Errorf("the server was reached")
	}
}

// A redirect from an allowed host to a refused one is refused: the allowance covers 127.0.0.2
// only, the redirect comes from there and the target listens on 127.0.0.1.
func TestRedirectToRefusedAddress(t *testing.T) {
	target, targetHits := countingServer(t, "127.0.0.1:0", nil)
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	c := guardedClient(FromPrefixes([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}))
	for _, to := range []string{target.URL + "/secret", "http://localhost:" + port + "/secret", "http://[::ffff:127.0.0.1]:" + port + "/"} {
		start, startHits := countingServer(t, "127.0.0.2:0", http.RedirectHandler(to, http.StatusFound))
		_, err := c.Get(start.URL + "/a.wav")
		var be *BlockedAddressError
		if !errors.As(err, &be) || !be.Checked.IsLoopback() || be.Checked == netip.MustParseAddr("127.0.0.2") {
			t.Errorf("redirect to %s = %v, want refused as loopback", to, err)
		}
		if startHits.Load() != 1 {
			t.Errorf("the allowed server got %d requests, want 1", startHits.Load())
		}
	}
	if targetHits.Load() != 0 {
		t.Errorf("the refused server was reached %d times", targetHits.Load())
	}
}

func TestParseHostIP(t *testing.T) {
	tests := []struct {
		host string
		want string // "" for a host name; "error" for numeric but invalid
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0X7F.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"10.65535", "10.0.255.255"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"169.254.169.254.", "169.254.169.254"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"::1", "::1"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"example.com", ""},
		{"1.2.3.example", ""},
		{"0x7g.0.0.1", ""},
		{"08.0.0.1", ""}, // not octal: a name for the resolver, checked at dial time
		{"localhost", ""},
		{"256.0.0.1", "error"},
		{"1.2.3.256", "error"},
		{"4294967296", "error"},
		{"1.16777216", "error"},
		{"99999999999999999999999", "error"},
	}
	for _, tt := range tests {
		ip, ok, err := parseHostIP(tt.host)
		var got string
		switch {
		case err != nil:
			got = "error"
		case ok:
			got = ip.String()
		}
		if got != tt.want {
			t.Errorf("parseHostIP(%q) = %q (ok %v, err %v), want %q", tt.host, got, ok, err, tt.want)
		}
	}
}

// Public addresses, in every spelling that embeds one, pass the check (never dialled here).
func TestGuardPublicAddresses(t *testing.T) {
	g, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2606:4700::1111", "1.1.1.1"} {
		if err := g.CheckAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("CheckAddr(%s) = %v", a, err)
		}
	}
	for _, raw := range []string{"https://example.com/hook", "http://93.184.216.34/x", "http://134744072/"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) = %v", raw, err)
		}
	}
}

func TestGuardRangesAndAllow(t *testing.T) {
	for _, r := range specialRanges() {
		if !r.prefix.IsValid() || r.prefix != r.prefix.Masked() {
			t.Errorf("range %s is not a masked prefix", r.prefix)
		}
	}
	g, _ := New([]string{"10.1.2.0/24", "fd00::5", "HOOKS.example."})
	assertBlocked(t, g, map[string]bool{
		"10.1.2.3":         false,
		"10.1.3.1":         true,
		"::ffff:10.1.2.99": false,
		"64:ff9b::a01:203": false, // NAT64 of 10.1.2.3
		"fd00::5":          false,
		"fd00::6":          true,
		"fe80::1%eth0":     true,
	})
	u, _ := url.Parse("http://hooks.example:8080/")
	if !g.HostAllowed(u.Hostname()) {
		t.Error("host name allow-list is not case and trailing-dot insensitive")
	}
	for _, bad := range []string{"10.0.0.0/33", "http://x", "under_score.example", ""} {
		if _, err := New([]string{bad}); err == nil || !strings.Contains(err.Error(), "allow[0]") {
			t.Errorf("New(%q) = %v, want an error naming allow[0]", bad, err)
		}
	}
}

// assertBlocked checks g's verdict on each address: blocked (true) or allowed.
func assertBlocked(t *testing.T, g *Guard, want map[string]bool) {
	t.Helper()
	for addr, blocked := range want {
		err := g.CheckAddr(netip.MustParseAddr(addr))
		if (err != nil) != blocked {
			t.Errorf("CheckAddr(%s) = %v, want blocked %v", addr, err, blocked)
		}
	}
}
