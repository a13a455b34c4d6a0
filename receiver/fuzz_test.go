package receiver

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseCategories checks the category filter of the event stream (a query parameter):
// no panic, only known categories in the set, and an error that names what it refused.
func FuzzParseCategories(f *testing.F) {
	f.Add("final_transcripts,partial_transcripts")
	f.Add(" lifecycle_events ,, errors ")
	f.Add("final_transcripts,nope,\x00")
	f.Add(strings.Repeat(",", 1000))
	f.Fuzz(func(t *testing.T, raw string) {
		set, err := parseCategories(raw)
		if err != nil {
			if set != nil || !strings.HasPrefix(err.Error(), "category must be one of ") {
				t.Fatalf("error %v with set %v", err, set)
			}
			return
		}
		for c := range set {
			if !c.Valid() || !strings.Contains(raw, string(c)) {
				t.Fatalf("set holds %q from %q", c, raw)
			}
		}
	})
}

// FuzzClientAddrKey checks the reading of X-Forwarded-For on any value: no panic, the peer's
// own key unless the peer is a trusted proxy, and otherwise either the peer's key or the key
// of an address the header lists that is not a trusted proxy.
func FuzzClientAddrKey(f *testing.F) {
	f.Add("10.0.0.5:1", "198.51.100.7")
	f.Add("10.0.0.5:1", "198.51.100.7, 10.1.1.1")
	f.Add("[fd00::1]:1", "2001:db8::1,,")
	f.Add("203.0.113.9:80", "1.1.1.1")
	f.Add("10.0.0.5:1", "::ffff:10.0.0.1, not-an-ip, 300.1.1.1")
	f.Add("10.0.0.5:1", strings.Repeat("1.2.3.4,", 200))
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	f.Fuzz(func(t *testing.T, peer, xff string) {
		ap, err := netip.ParseAddrPort(peer)
		if err != nil {
			return
		}
		addr := net.TCPAddrFromAddrPort(ap)
		own, _ := clientKey(addr)
		got := clientAddrKey(addr, xff, trusted)
		if !inPrefixes(ap.Addr().Unmap(), trusted) {
			if got != own {
				t.Fatalf("untrusted peer %s counted as %s (own %s)", peer, got, own)
			}
			return
		}
		if got == own {
			return
		}
		for _, part := range strings.Split(xff, ",") {
			a, err := netip.ParseAddr(strings.TrimSpace(part))
			if err == nil && keyOf(a.Unmap()) == got && !inPrefixes(a.Unmap(), trusted) {
				return
			}
		}
		t.Fatalf("%s (X-Forwarded-For %q) counted as %s, which the header does not name", peer, xff, got)
	})
}
