package receiver

import (
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Failed authentications are limited per client address, so that a credential cannot be
// guessed online: each wrong credential (a wrong bearer token, a forged dashboard cookie, a
// wrong sign-in, an unknown callback token) takes one from its address's bucket; an address
// whose bucket is empty is answered 429 with Retry-After on every request that needs a
// credential, right or wrong, until the bucket refills. A right credential takes nothing, and
// one address's bucket never touches another's. Requests without any credential (a browser
// that was never signed in) take nothing either: they cannot guess.

// Defaults of Config.AuthFailureBurst and Config.AuthFailureRefill: 20 wrong credentials at
// once, then one every 3 s (1,200 an hour instead of thousands a second).
const (
	DefaultAuthFailureBurst  = 20
	DefaultAuthFailureRefill = 3 * time.Second
)

// maxAuthBuckets bounds the addresses the limiter remembers. Past it, buckets that have
// refilled are dropped first; if none has, the oldest failures are forgotten (the limit fails
// open for them rather than growing without bound).
const maxAuthBuckets = 1 << 16

// Label values of scribehook_auth_failures_total and scribehook_auth_limited_total.
const (
	surfaceRead     = "read"     // read API and /metrics: a bearer token or the dashboard's cookie
	surfaceLogin    = "login"    // the dashboard's sign-in form
	surfaceCallback = "callback" // a callback token no route or job has
)

// authLimiter is a token bucket of failed authentications per client key (clientKey).
type authLimiter struct {
	burst  float64
	refill time.Duration
	now    func() time.Time

	mu      sync.Mutex
	buckets map[netip.Addr]*authBucket
	// held is len(buckets), read without the lock: every callback and read asks wait, and
	// while no address has failed lately (buckets are dropped once they refill) it answers
	// without taking the lock.
	held atomic.Int64
}

type authBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// newAuthLimiter returns nil (no limit) when burst is negative.
func newAuthLimiter(burst int, refill time.Duration, now func() time.Time) *authLimiter {
	switch {
	case burst < 0:
		return nil
	case burst == 0:
		burst = DefaultAuthFailureBurst
	}
	if refill <= 0 {
		refill = DefaultAuthFailureRefill
	}
	return &authLimiter{burst: float64(burst), refill: refill, now: now, buckets: map[netip.Addr]*authBucket{}}
}

// level brings b up to date and returns its tokens.
func (l *authLimiter) level(b *authBucket, now time.Time) float64 {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = math.Min(l.burst, b.tokens+float64(elapsed)/float64(l.refill))
		b.at = now
	}
	return b.tokens
}

// wait says how long key must wait before its next credential is checked: 0 when it may go on.
func (l *authLimiter) wait(key netip.Addr) time.Duration {
	if l == nil || !key.IsValid() || l.held.Load() == 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		return 0
	}
	tokens := l.level(b, l.now())
	if tokens >= l.burst {
		l.drop(key)
		return 0
	}
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(l.refill))
}

// fail takes one token from key's bucket.
func (l *authLimiter) fail(key netip.Addr) {
	if l == nil || !key.IsValid() {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxAuthBuckets {
			l.evict(now)
		}
		b = &authBucket{tokens: l.burst, at: now}
		l.buckets[key] = b
		l.held.Add(1)
	}
	b.tokens = math.Max(0, l.level(b, now)-1)
}

// evict drops the buckets that have refilled, or, when none has, the half with the most tokens.
func (l *authLimiter) evict(now time.Time) {
	for k, b := range l.buckets {
		if l.level(b, now) >= l.burst {
			l.drop(k)
		}
	}
	if len(l.buckets) < maxAuthBuckets {
		return
	}
	var sum float64
	for _, b := range l.buckets {
		sum += b.tokens
	}
	mean := sum / float64(len(l.buckets))
	for k, b := range l.buckets {
		if b.tokens >= mean {
			l.drop(k)
		}
	}
}

// drop forgets key's bucket; l.mu is held.
func (l *authLimiter) drop(key netip.Addr) {
	delete(l.buckets, key)
	l.held.Store(int64(len(l.buckets)))
}

// retryAfterSeconds is a wait as Retry-After says it: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// clientAddrKey is the client key (clientKey) of a request that came from peer with the
// X-Forwarded-For header xff: peer itself, unless peer is one of trusted (a proxy of the
// operator's), in which case the nearest address of xff that is not a trusted proxy. A proxy
// appends the address it saw to the header, so entries to its right are the proxies' own and
// the first untrusted one from the right is the client as far as anyone trusted can tell.
func clientAddrKey(peer net.Addr, xff string, trusted []netip.Prefix) netip.Addr {
	key, _ := clientKey(peer)
	if ip := peerIP(peer); !ip.IsValid() || !inPrefixes(ip, trusted) {
		return key
	}
	parts := strings.Split(xff, ",")
	for i := len(parts) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(parts[i]))
		if err != nil {
			break // a forged or mangled entry: stop at the proxy
		}
		a = a.Unmap()
		if inPrefixes(a, trusted) {
			continue
		}
		return keyOf(a)
	}
	return key
}

func peerIP(peer net.Addr) netip.Addr {
	if tcp, ok := peer.(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// keyOf is the key an address is counted under: an IPv4 address itself, an IPv6 address by its
// /64, since one IPv6 subscriber usually holds a whole /64.
func keyOf(ip netip.Addr) netip.Addr {
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
