package sinks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Outbound webhook URLs come from configuration and point wherever their author likes; the guard
// keeps them off the machine itself, the private network and the cloud's metadata service
// (DESIGN.md rule 5). The decisive check runs in the dialer's Control hook, on the very address
// being connected to after DNS resolution, so a name that resolves to 10.0.0.1 (or starts to,
// between two requests: DNS rebinding) is refused as surely as the literal.

// specialRange is one range of addresses a webhook may not reach unless allow-listed.
type specialRange struct {
	prefix netip.Prefix
	name   string
}

// specialRanges lists the IANA special-purpose ranges (RFC 6890 and its updates) and the cloud
// metadata addresses. The most specific entries come first so that errors name the reason a
// person recognises: 169.254.169.254 is "cloud metadata", not merely "link-local".
var specialRanges = []specialRange{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata service"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata service"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata service"},
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

// Ranges whose addresses carry an IPv4 address inside: the IPv4 address is what is reached in
// the end, so it is what gets checked.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// BlockedAddressError says that a webhook target is in a range the guard refuses.
type BlockedAddressError struct {
	// Addr is the address as dialled or written in the URL.
	Addr netip.Addr
	// Checked is the address the range was found for: Addr, or the IPv4 address inside an
	// IPv4-mapped, NAT64 or 6to4 Addr.
	Checked netip.Addr
	Range   netip.Prefix
	Reason  string
}

func (e *BlockedAddressError) Error() string {
	via := ""
	if e.Checked != e.Addr {
		via = " (IPv4 " + e.Checked.String() + " inside)"
	}
	return fmt.Sprintf("address %s%s is in %s, %s: refused as a webhook target unless listed in allow",
		e.Addr, via, e.Range, e.Reason)
}

// Guard decides which addresses a webhook sink may connect to.
type Guard struct {
	allow      []netip.Prefix
	allowHosts map[string]bool
}

// NewGuard builds a guard with an allow-list of CIDR ranges ("10.1.2.0/24"), addresses
// ("10.1.2.3") and host names ("hooks.internal", trusted whatever they resolve to).
func NewGuard(allow []string) (*Guard, error) {
	g := &Guard{allowHosts: map[string]bool{}}
	for i, a := range allow {
		a = strings.TrimSpace(a)
		if p, err := netip.ParsePrefix(a); err == nil {
			g.allow = append(g.allow, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(a); err == nil {
			ip = ip.WithZone("")
			g.allow = append(g.allow, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		if !validHostName(a) {
			return nil, fmt.Errorf("allow[%d]: %q is not a CIDR range, an IP address or a host name", i, a)
		}
		g.allowHosts[canonicalHost(a)] = true
	}
	return g, nil
}

// CheckAddr returns a *BlockedAddressError when ip is in a special range and not allowed.
func (g *Guard) CheckAddr(ip netip.Addr) error {
	ip = ip.WithZone("")
	inner := unwrapIPv4(ip)
	for _, p := range g.allow {
		if p.Contains(ip) || p.Contains(inner) {
			return nil
		}
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(inner) {
			return &BlockedAddressError{Addr: ip, Checked: inner, Range: r.prefix, Reason: r.name}
		}
	}
	return nil
}

// unwrapIPv4 returns the IPv4 address an IPv6 address stands for (IPv4-mapped ::ffff:a.b.c.d,
// NAT64 64:ff9b::a.b.c.d, 6to4 2002:AABB:CCDD::), or ip itself.
func unwrapIPv4(ip netip.Addr) netip.Addr {
	if ip.Is4In6() {
		return ip.Unmap()
	}
	if !ip.Is6() {
		return ip
	}
	b := ip.As16()
	switch {
	case nat64Prefix.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
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
	if g.hostAllowed(host) {
		return nil
	}
	if ip, ok, err := parseHostIP(host); err != nil {
		return err
	} else if ok {
		return g.CheckAddr(ip)
	}
	return nil
}

func (g *Guard) hostAllowed(host string) bool {
	return len(g.allowHosts) > 0 && g.allowHosts[canonicalHost(host)]
}

// control is the net.Dialer Control hook: it runs after DNS resolution, before connect, once for
// every address the dialer tries.
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("network %q is not allowed for webhooks", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial address %q: %w", address, err)
	}
	return g.CheckAddr(ap.Addr())
}

// dialer connects webhook requests: host names on the allow-list are dialled as they are, and
// every other connection goes through the Control check.
type dialer struct {
	guard   *Guard
	checked net.Dialer // Control = guard.control
	trusted net.Dialer // for allow-listed host names
}

func newDialer(g *Guard, resolver *net.Resolver) *dialer {
	d := &dialer{guard: g}
	for _, nd := range []*net.Dialer{&d.checked, &d.trusted} {
		nd.Timeout = 30 * time.Second
		nd.KeepAlive = 30 * time.Second
		nd.Resolver = resolver
	}
	d.checked.Control = g.control
	return d
}

// DialContext is the http.Transport hook.
func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if d.guard.hostAllowed(host) {
		return d.trusted.DialContext(ctx, network, address)
	}
	ip, ok, err := parseHostIP(host)
	if err != nil {
		return nil, err
	}
	if ok {
		// Dial the canonical form: "2130706433" must mean 127.0.0.1 to the dialer too, not a
		// name for the resolver to interpret its own way.
		if err := d.guard.CheckAddr(ip); err != nil {
			return nil, err
		}
		address = net.JoinHostPort(ip.String(), port)
	}
	return d.checked.DialContext(ctx, network, address)
}

// parseHostIP reads a URL host as an IP address: IPv6 and dotted-quad literals, and the other
// IPv4 spellings of the URL standard and inet_aton (one to four parts, each decimal, octal with
// a leading 0 or hexadecimal with 0x). ok is false for a host name; err is set for a host that
// is numeric but no valid address (a resolver might still make something of it).
func parseHostIP(host string) (ip netip.Addr, ok bool, err error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true, nil
	}
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // a trailing dot
	}
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false, nil
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, numeric := parseIPv4Part(p)
		if !numeric {
			return netip.Addr{}, false, nil
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false, fmt.Errorf("host %q: part %d of an IPv4 address exceeds 255", host, i+1)
		}
		v = v<<8 | n
	}
	last := nums[len(nums)-1]
	bits := 8 * uint(5-len(nums))
	if last >= 1<<bits {
		return netip.Addr{}, false, fmt.Errorf("host %q: not a valid IPv4 address", host)
	}
	v = v<<bits | last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

func parseIPv4Part(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // "0x" is zero for the URL standard
		}
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil {
		// Digits too many for 64 bits are still a number, and no valid address.
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 1 << 40, true
		}
		return 0, false
	}
	return n, true
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
