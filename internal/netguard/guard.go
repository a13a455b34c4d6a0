// Package netguard keeps outbound HTTP requests whose URL someone else chose (webhook sinks, the
// sandbox's audio fetches) off the machine itself, the private network and the cloud's metadata
// service (docs/design.md, rule 5).
//
// The decisive check runs in the dialer's Control hook, on the very address being connected to
// after DNS resolution, so a name that resolves to 10.0.0.1 (or starts to, between two requests:
// DNS rebinding) is refused as surely as the literal; every redirect is a new dial and is checked
// again. An allow-list opens chosen ranges (and, for webhooks, host names) for self-hosted
// targets.
package netguard

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// specialRange is one range of addresses that may not be reached unless allow-listed.
type specialRange struct {
	prefix netip.Prefix
	name   string
}

// specialRanges lists the IANA special-purpose ranges (RFC 6890 and its updates) and the cloud
// metadata addresses. The most specific entries come first so that errors name the reason a
// person recognises: 169.254.169.254 is "cloud metadata", not merely "link-local".
func specialRanges() []specialRange {
	return []specialRange{
		{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata service"},
		{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata service"},
		{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata service"},
		// Azure's platform address (WireServer: the VM agent's configuration and keys), public
		// by its range but answering only inside the cloud.
		{netip.MustParsePrefix("168.63.129.16/32"), "cloud platform service"},
		{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
		{netip.MustParsePrefix("10.0.0.0/8"), "private network"},
		{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
		{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
		{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
		{netip.MustParsePrefix("172.16.0.0/12"), "private network"},
		{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
		{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1)"},
		{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
		{netip.MustParsePrefix("192.168.0.0/16"), "private network"},
		{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
		{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2)"},
		{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3)"},
		{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
		{netip.MustParsePrefix("240.0.0.0/4"), "reserved (and broadcast)"},
		{netip.MustParsePrefix("::/128"), "unspecified"},
		{netip.MustParsePrefix("::1/128"), "loopback"},
		{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
		{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
		{netip.MustParsePrefix("100::/64"), "discard-only"},
		{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (Teredo, ORCHID…)"},
		{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
		{netip.MustParsePrefix("3fff::/20"), "documentation"},
		{netip.MustParsePrefix("5f00::/16"), "segment routing (SRv6)"},
		{netip.MustParsePrefix("fc00::/7"), "unique local"},
		{netip.MustParsePrefix("fe80::/10"), "link-local"},
		{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
		{netip.MustParsePrefix("ff00::/8"), "multicast"},
	}
}

// BlockedAddressError says that a target is in a range the guard refuses.
type BlockedAddressError struct {
	// Addr is the address as dialled or written in the URL.
	Addr netip.Addr
	// Checked is the address the range was found for: Addr, or the IPv4 address inside an
	// IPv4-mapped, IPv4-translated, NAT64 or 6to4 Addr.
	Checked netip.Addr
	Range   netip.Prefix
	Reason  string
}

func (e *BlockedAddressError) Error() string {
	via := ""
	if e.Checked != e.Addr {
		via = " (IPv4 " + e.Checked.String() + " inside)"
	}
	return fmt.Sprintf("address %s%s is in %s, %s: refused unless allow-listed", e.Addr, via, e.Range, e.Reason)
}

// Guard decides which addresses a client may connect to. It is immutable once built, so one
// guard serves any number of concurrent requests.
type Guard struct {
	special    []specialRange
	allow      []netip.Prefix
	allowHosts map[string]bool
}

// New builds a guard with an allow-list of CIDR ranges ("10.1.2.0/24"), addresses
// ("10.1.2.3") and host names ("hooks.internal", trusted whatever they resolve to).
func New(allow []string) (*Guard, error) {
	g := FromPrefixes(nil)
	for i, a := range allow {
		a = strings.TrimSpace(a)
		if p, err := ParsePrefix(a); err == nil {
			g.allow = append(g.allow, p)
			continue
		}
		if !validHostName(a) {
			return nil, fmt.Errorf("allow[%d]: %q is not a CIDR range, an IP address or a host name", i, a)
		}
		g.allowHosts[canonicalHost(a)] = true
	}
	return g, nil
}

// FromPrefixes builds a guard that allows the given ranges and no host names: for callers whose
// allow-list is addresses only (the sandbox's --allow-fetch).
func FromPrefixes(allow []netip.Prefix) *Guard {
	g := &Guard{special: specialRanges(), allowHosts: map[string]bool{}}
	for _, p := range allow {
		if p.IsValid() {
			g.allow = append(g.allow, p.Masked())
		}
	}
	return g
}

// ParsePrefix reads a CIDR range or a single address (a /32 or /128), the spellings of an
// allow-list entry.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR range or an IP address", s)
	}
	ip = ip.WithZone("")
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}

// CheckAddr returns a *BlockedAddressError when ip is in a special range and not allowed.
func (g *Guard) CheckAddr(ip netip.Addr) error {
	ip = ip.WithZone("")
	inner := EmbeddedIPv4(ip)
	for _, p := range g.allow {
		if p.Contains(ip) || p.Contains(inner) {
			return nil
		}
	}
	for _, r := range g.special {
		if r.prefix.Contains(inner) {
			return &BlockedAddressError{Addr: ip, Checked: inner, Range: r.prefix, Reason: r.name}
		}
	}
	return nil
}

// EmbeddedIPv4 returns the IPv4 address an IPv6 address stands for (IPv4-mapped ::ffff:a.b.c.d,
// IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:AABB:CCDD::), or ip
// itself: the IPv4 address is what is reached in the end, so it is what gets checked.
func EmbeddedIPv4(ip netip.Addr) netip.Addr {
	if ip.Is4In6() {
		return ip.Unmap()
	}
	if !ip.Is6() {
		return ip
	}
	b := ip.As16()
	switch {
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && [8]byte(b[4:12]) == [8]byte{}: // 64:ff9b::/96
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case b[0] == 0x20 && b[1] == 0x02: // 2002::/16
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case [8]byte(b[0:8]) == [8]byte{} && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0: // ::ffff:0:0/96
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	return ip
}

// CheckURL refuses what can be refused before any connection: schemes other than http and
// https, URLs without a host, and hosts that are IP addresses in a special range, including
// the numeric spellings of IPv4 that resolvers accept (2130706433, 0x7f.1, 0177.0.0.1).
func (g *Guard) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q: only http and https are allowed", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("no host")
	}
	if g.HostAllowed(host) {
		return nil
	}
	if ip, ok, err := parseHostIP(host); err != nil {
		return err
	} else if ok {
		return g.CheckAddr(ip)
	}
	return nil
}

// CheckRedirect is an http.Client CheckRedirect that follows at most maxRedirects redirects,
// each to a URL that CheckURL accepts; the dial of the new target is checked as well.
func (g *Guard) CheckRedirect(maxRedirects int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if err := g.CheckURL(req.URL); err != nil {
			return fmt.Errorf("redirect: %w", err)
		}
		return nil
	}
}

// HostAllowed reports whether host is a name on the allow-list (case and trailing dot
// ignored).
func (g *Guard) HostAllowed(host string) bool {
	return len(g.allowHosts) > 0 && g.allowHosts[canonicalHost(host)]
}

func canonicalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
