package sinks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/netguard"
)

// testDNS is a tiny authoritative DNS server on loopback, so that tests resolve names to private
// addresses without touching the machine's resolver or any real network.
type testDNS struct {
	mu      sync.Mutex
	records map[string][]netip.Addr // fully qualified, lower case
	queries int
	addr    string
}

func startTestDNS(t *testing.T, records map[string][]string) *net.Resolver {
	t.Helper()
	return newTestDNS(t, records).resolver()
}

func newTestDNS(t *testing.T, records map[string][]string) *testDNS {
	t.Helper()
	d := &testDNS{records: map[string][]netip.Addr{}}
	for name, addrs := range records {
		d.set(name, addrs...)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go d.serve(pc)
	d.addr = pc.LocalAddr().String()
	return d
}

// set replaces the addresses of name.
func (d *testDNS) set(name string, addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := strings.ToLower(name) + "."
	d.records[key] = nil
	for _, a := range addrs {
		d.records[key] = append(d.records[key], netip.MustParseAddr(a))
	}
}

func (d *testDNS) resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		// Every query goes to the test server, whatever resolv.conf names.
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "udp", d.addr)
		},
	}
}

func (d *testDNS) serve(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, ok := d.answer(buf[:n]); ok {
			_, _ = pc.WriteTo(resp, from)
		}
	}
}

func (d *testDNS) answer(req []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	d.mu.Lock()
	d.queries++
	addrs, known := d.records[strings.ToLower(q.Name.String())]
	d.mu.Unlock()
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: rcode})
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	for _, a := range addrs {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			_ = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			_ = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

// ssrfCase is one way of writing a URL host that reaches a refused address.
type ssrfCase struct {
	name    string
	host    string // as written in the URL (brackets for IPv6)
	literal bool   // refused before dialing, from the URL alone
	addr    string // the address the error names (the one checked)
	rng     string // the range the error names
	allow   string // the allow entry that lets it through
	// loopback cases really connect once allowed (to a test server on this machine); the
	// others are stopped right after the guard passes them, so no packet leaves.
	loopback bool
}

var ssrfCases = []ssrfCase{
	{"metadata", "169.254.169.254", true, "169.254.169.254", "169.254.169.254/32", "169.254.169.254", false},
	{"metadata decimal", "2852039166", true, "169.254.169.254", "169.254.169.254/32", "169.254.0.0/16", false},
	{"metadata IPv4-mapped hex", "[::ffff:a9fe:a9fe]", true, "169.254.169.254", "169.254.169.254/32", "169.254.169.254/32", false},
	{"private 10/8", "10.0.0.1", true, "10.0.0.1", "10.0.0.0/8", "10.0.0.0/8", false},
	{"private 172.16/12", "172.16.5.4", true, "172.16.5.4", "172.16.0.0/12", "172.16.0.0/12", false},
	{"private 192.168/16", "192.168.1.1", true, "192.168.1.1", "192.168.0.0/16", "192.168.1.0/24", false},
	{"CGNAT", "100.64.0.1", true, "100.64.0.1", "100.64.0.0/10", "100.64.0.0/10", false},
	{"this network", "0.0.0.0", true, "0.0.0.0", "0.0.0.0/8", "0.0.0.0/8", false},
	{"benchmarking", "198.18.0.1", true, "198.18.0.1", "198.18.0.0/15", "198.18.0.0/15", false},
	{"multicast", "224.0.0.1", true, "224.0.0.1", "224.0.0.0/4", "224.0.0.0/4", false},
	{"broadcast", "255.255.255.255", true, "255.255.255.255", "240.0.0.0/4", "255.255.255.255", false},
	{"NAT64 of private", "[64:ff9b::a00:1]", true, "10.0.0.1", "10.0.0.0/8", "10.0.0.0/8", false},
	{"6to4 of private", "[2002:c0a8:101::1]", true, "192.168.1.1", "192.168.0.0/16", "2002::/16", false},
	{"unique local", "[fd00::1]", true, "fd00::1", "fc00::/7", "fd00::/8", false},
	{"link-local IPv6", "[fe80::1]", true, "fe80::1", "fe80::/10", "fe80::/10", false},
	{"unspecified IPv6", "[::]", true, "::", "::/128", "::/128", false},
	{"loopback", "127.0.0.1", true, "127.0.0.1", "127.0.0.0/8", "127.0.0.0/8", true},
	{"loopback decimal", "2130706433", true, "127.0.0.1", "127.0.0.0/8", "127.0.0.0/8", true},
	{"loopback hex", "0x7f000001", true, "127.0.0.1", "127.0.0.0/8", "127.0.0.1", true},
	{"loopback octal", "0177.0.0.1", true, "127.0.0.1", "127.0.0.0/8", "127.0.0.0/8", true},
	{"loopback short", "127.1", true, "127.0.0.1", "127.0.0.0/8", "127.0.0.0/8", true},
	{"loopback other", "127.45.6.7", true, "127.45.6.7", "127.0.0.0/8", "127.0.0.0/8", false},
	{"loopback IPv4-mapped", "[::ffff:127.0.0.1]", true, "127.0.0.1", "127.0.0.0/8", "127.0.0.0/8", true},
	{"loopback IPv6", "[::1]", true, "::1", "::1/128", "::1", true},
	{"name to metadata", "metadata.test", false, "169.254.169.254", "169.254.169.254/32", "169.254.169.254", false},
	{"name to private", "internal.test", false, "10.1.2.3", "10.0.0.0/8", "10.1.2.0/24", false},
	{"name allowed by name", "hooks.internal.test", false, "10.9.9.9", "10.0.0.0/8", "hooks.internal.test", false},
	{"name to ULA", "v6.test", false, "fd00::5", "fc00::/7", "fd00::/8", false},
	{"name to IPv4-mapped private", "mapped.test", false, "10.0.0.7", "10.0.0.0/8", "10.0.0.0/8", false},
	{"name to loopback", "loopback.test", false, "127.0.0.1", "127.0.0.0/8", "127.0.0.0/8", true},
}

var ssrfRecords = map[string][]string{
	"metadata.test":       {"169.254.169.254"},
	"internal.test":       {"10.1.2.3"},
	"hooks.internal.test": {"10.9.9.9"},
	"v6.test":             {"fd00::5"},
	"mapped.test":         {"::ffff:10.0.0.7"},
	"loopback.test":       {"127.0.0.1"},
	"public.test":         {"93.184.216.34"},
}

// hookServer answers 204 to every POST and counts them; it listens on 127.0.0.1 and, when the
// machine has IPv6 loopback, on ::1 too with the same port.
type hookServer struct {
	port  string
	mu    sync.Mutex
	count int
}

func startHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.count++
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	_, h.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	if ln, err := net.Listen("tcp", net.JoinHostPort("::1", h.port)); err == nil {
		s6 := &http.Server{Handler: handler}
		go func() { _ = s6.Serve(ln) }()
		t.Cleanup(func() { s6.Close() })
	}
	return h
}

func (h *hookServer) hits() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

var errStopped = errors.New("stopped by the test after the guard let the address through")

func TestWebhookAddressGuard(t *testing.T) {
	resolver := startTestDNS(t, ssrfRecords)
	hook := startHookServer(t)
	ev := api.Event{ID: "ev-1", Type: api.EventJobCreated, JobID: "job-1", Kind: api.KindPreRecorded, Data: []byte(`{}`)}

	for _, tc := range ssrfCases {
		t.Run(tc.name, func(t *testing.T) {
			port := "9" // never connected to: refused addresses fail before connect
			if tc.loopback {
				port = hook.port
			}
			rawURL := "http://" + tc.host + ":" + port + "/hook?token=s3cr3t"
			wantMsg := fmt.Sprintf("%s, ", tc.rng)
			spec := Spec{Name: "hook", Kind: KindWebhook, URL: rawURL, SigningSecrets: []string{"whsec_c2VjcmV0"}, Timeout: 5 * time.Second}
			deps := Deps{Resolver: resolver, Logger: logx.Discard()}

			// Refused without allow.
			if tc.literal {
				_, err := NewWebhook(spec, deps)
				var se *SpecError
				if !errors.As(err, &se) || se.Field != "URL" {
					t.Fatalf("NewWebhook(%s) = %v, want a SpecError on URL", rawURL, err)
				}
				checkBlocked(t, err, tc.addr, wantMsg)
				u, _ := url.Parse(rawURL)
				g, _ := NewGuard(nil)
				checkBlocked(t, g.CheckURL(u), tc.addr, wantMsg)
			} else {
				s, err := NewWebhook(spec, deps)
				if err != nil {
					t.Fatalf("NewWebhook: %v", err)
				}
				defer s.Close()
				before := hook.hits()
				err = s.Deliver(context.Background(), ev)
				f := AsFailure(err)
				if !f.Permanent {
					t.Errorf("refused address: failure %v is not permanent", err)
				}
				checkBlocked(t, err, tc.addr, wantMsg)
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("error quotes the URL's query: %v", err)
				}
				if hook.hits() != before {
					t.Errorf("the test server was reached")
				}
			}

			// Accepted with allow.
			spec.Allow = []string{tc.allow}
			s, err := NewWebhook(spec, deps)
			if err != nil {
				t.Fatalf("NewWebhook with allow %q: %v", tc.allow, err)
			}
			defer s.Close()
			if tc.loopback {
				before := hook.hits()
				if err := s.Deliver(context.Background(), ev); err != nil {
					t.Fatalf("allowed Deliver: %v", err)
				}
				if hook.hits() != before+1 {
					t.Errorf("server hits %d, want %d", hook.hits(), before+1)
				}
				return
			}
			var mu sync.Mutex
			var dialled []string
			guarded := s.dialer.Checked.Control
			s.dialer.Checked.Control = func(network, address string, c syscall.RawConn) error {
				if err := guarded(network, address, c); err != nil {
					return err
				}
				mu.Lock()
				dialled = append(dialled, address)
				mu.Unlock()
				return errStopped
			}
			s.dialer.Trusted.Control = s.dialer.Checked.Control
			if tc.allow == tc.host {
				// Allowed by name: dialled without the check, still stopped before connect.
				s.dialer.Trusted.Control = func(network, address string, _ syscall.RawConn) error {
					mu.Lock()
					dialled = append(dialled, address)
					mu.Unlock()
					return errStopped
				}
			}
			err = s.Deliver(context.Background(), ev)
			if !errors.Is(err, errStopped) {
				t.Fatalf("allowed Deliver = %v, want the guard to pass the address", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(dialled) == 0 {
				t.Fatal("nothing dialled")
			}
			got, _ := netip.ParseAddrPort(dialled[0])
			if netguard.EmbeddedIPv4(got.Addr()).String() != tc.addr {
				t.Errorf("dialled %s, want %s", dialled[0], tc.addr)
			}
		})
	}
}

func checkBlocked(t *testing.T, err error, addr, rangeMsg string) {
	t.Helper()
	var be *BlockedAddressError
	if !errors.As(err, &be) {
		t.Fatalf("error %v is not a BlockedAddressError", err)
	}
	if be.Checked.String() != addr {
		t.Errorf("blocked %s, want %s", be.Checked, addr)
	}
	msg := err.Error()
	if !strings.Contains(msg, addr) || !strings.Contains(msg, rangeMsg) || !strings.Contains(msg, "allow") {
		t.Errorf("error %q does not name address %s, range %q and the allow-list", msg, addr, rangeMsg)
	}
}

func TestGuardSchemes(t *testing.T) {
	g, _ := NewGuard(nil)
	for _, raw := range []string{"ftp://example.com/", "file:///etc/passwd", "gopher://example.com/", "javascript:alert(1)"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%s) passed", raw)
		}
		_, err := NewWebhook(Spec{Name: "h", Kind: KindWebhook, URL: raw}, Deps{Logger: logx.Discard()})
		var se *SpecError
		if !errors.As(err, &se) || se.Field != "URL" {
			t.Errorf("NewWebhook(%s) = %v, want a SpecError on URL", raw, err)
		}
	}
}

// A name that resolves to an allowed address first and then to a refused one (DNS rebinding)
// is refused on the next connection: the check runs on every dial, on the address dialled.
func TestGuardDNSRebinding(t *testing.T) {
	dns := newTestDNS(t, map[string][]string{"rebind.test": {"127.0.0.1"}})
	hook := startHookServer(t)
	s, err := NewWebhook(Spec{Name: "hook", Kind: KindWebhook, URL: "http://rebind.test:" + hook.port + "/",
		Allow: []string{"127.0.0.1"}}, Deps{Resolver: dns.resolver(), Logger: logx.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := api.Event{ID: "ev-1", Type: api.EventJobCreated, JobID: "j"}
	if err := s.Deliver(context.Background(), ev); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	dns.set("rebind.test", "127.0.0.2")
	// A kept-alive connection would be reused without a dial; a later attempt finds none.
	s.Close()
	err = s.Deliver(context.Background(), ev)
	checkBlocked(t, err, "127.0.0.2", "127.0.0.0/8, loopback")
	if !AsFailure(err).Permanent {
		t.Errorf("failure %v is not permanent", err)
	}
	if hook.hits() != 1 {
		t.Errorf("hits %d, want 1", hook.hits())
	}
}
