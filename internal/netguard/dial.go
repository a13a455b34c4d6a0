package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// control is the net.Dialer Control hook: it runs after DNS resolution, before connect, once for
// every address the dialer tries.
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("network %q is not allowed", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial address %q: %w", address, err)
	}
	return g.CheckAddr(ap.Addr())
}

// Dialer connects through a guard: host names on the allow-list are dialled as they are, and
// every other connection goes through the Control check.
type Dialer struct {
	guard *Guard
	// Checked and Trusted are exported so that a test can wrap their Control hooks and stop a
	// dial the guard let through before it connects anywhere.
	Checked net.Dialer // Control = the guard's check
	Trusted net.Dialer // for allow-listed host names
}

// NewDialer returns a dialer that checks every connection against g; resolver nil is
// net.DefaultResolver.
func NewDialer(g *Guard, resolver *net.Resolver) *Dialer {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	d := &Dialer{guard: g}
	for _, nd := range []*net.Dialer{&d.Checked, &d.Trusted} {
		nd.Timeout = 30 * time.Second
		nd.KeepAlive = 30 * time.Second
		nd.Resolver = resolver
	}
	d.Checked.Control = g.control
	return d
}

// DialContext is the http.Transport hook.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if d.guard.HostAllowed(host) {
		return d.Trusted.DialContext(ctx, network, address)
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
	return d.Checked.DialContext(ctx, network, address)
}

// Transport returns a clone of base (http.DefaultTransport's settings when nil) whose every
// connection goes through d.
func (d *Dialer) Transport(base *http.Transport) *http.Transport {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	// A proxy would be the address dialled, and the guard would check it instead of the target.
	tr.Proxy = nil
	tr.DialContext = d.DialContext
	// Any of these would take over dials from DialContext and skip the guard.
	tr.Dial = nil
	tr.DialTLSContext = nil
	tr.DialTLS = nil
	return tr
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
