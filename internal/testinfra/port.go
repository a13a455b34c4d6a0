package testinfra

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort is a loopback port free now. Whoever binds it does so a moment later, so another
// process may take it meanwhile. The port is drawn below the kernel's ephemeral range: a port
// from that range (what listening on :0 gives) is also what every outgoing connection takes,
// and a server that dials its own components before binding its last port (weed's master and
// volume do) could find that port taken by its own client.
func FreePort() (string, error) {
	low := ephemeralLow()
	// Ports from 10000 up to the range: far from the well-known ones and from Debian's
	// servers' defaults (PostgreSQL 5432, Redis 6379, NATS 4222).
	if low > 10000+1000 {
		for i := 0; i < 50; i++ {
			p := 10000 + rand.IntN(low-10000)
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				continue
			}
			ln.Close()
			return strconv.Itoa(p), nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	return port, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, Linux's default where the
// range cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1024 {
		return 32768
	}
	return n
}
