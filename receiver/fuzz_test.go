package receiver

import (
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/whsec"
)

// FuzzVerifySignature checks the signature headers' parsing on any values: no panic, an
// *authError with one of the fixed messages (none repeats a header value), acceptance only of a v1 signature
// that is the HMAC of the request within the tolerance, and acceptance of that signature
// whatever else the header lists.
func FuzzVerifySignature(f *testing.F) {
	f.Add(vectorSecret, vectorID, vectorTS, vectorSig, []byte(vectorBody), false, int64(0))
	f.Add(vectorSecret, vectorID, vectorTS, "v1,AAAA v1a,xyz "+vectorSig, []byte(vectorBody), true, int64(300))
	f.Add("whsec_"+"c2Vjb25kIGtleQ", "msg_1", " 1614265330 ", "v1,!!! v1, ,v1 v1,,", []byte(`{}`), false, int64(-301))
	f.Add("raw secret", "", "", "", []byte(nil), false, int64(0))
	f.Add("whsec_", "id", "9223372036854775807", "v1,"+strings.Repeat("A", 44), []byte("x"), true, int64(0))
	f.Add("whsec_%%%", "id", "-9223372036854775808", "v2,abc", []byte("x"), false, int64(0))
	f.Add(vectorSecret, "msg.with.dots", "+1614265330", "\tv1,"+vectorSig[3:]+"\n", []byte(vectorBody), false, int64(0))
	at, _ := strconv.ParseInt(vectorTS, 10, 64)
	// The answers are fixed texts: none repeats a header value.
	fixed := map[string]bool{
		"missing signature headers (webhook-id, webhook-timestamp, webhook-signature)": true,
		"timestamp too old": true, "timestamp too new": true, "signature mismatch": true,
	}
	for _, p := range []string{"webhook", "svix"} {
		fixed["missing "+p+"-id header"] = true
		fixed["missing "+p+"-timestamp header"] = true
		fixed["missing "+p+"-signature header"] = true
		fixed["invalid "+p+"-timestamp header"] = true
		fixed["no v1 signature in "+p+"-signature header"] = true
	}
	f.Fuzz(func(t *testing.T, secret, id, ts, sigs string, body []byte, svix bool, skew int64) {
		key, err := whsec.Key(secret)
		if err != nil {
			if len(secret) > len(whsec.Prefix)+2 && strings.Contains(err.Error(), secret) {
				t.Fatalf("secret error repeats the secret: %v", err)
			}
			return
		}
		if len(key) == 0 {
			t.Fatal("whsec.Key accepted an empty key")
		}
		prefix := "webhook"
		if svix {
			prefix = "svix"
		}
		headers := map[string]string{prefix + "-id": id, prefix + "-timestamp": ts, prefix + "-signature": sigs}
		get := func(k string) string { return headers[k] }
		now := time.Unix(at, 0).Add(time.Duration(skew%3600) * time.Second)
		err = verifySignature(get, body, [][]byte{key}, now)
		if err != nil {
			var ae *authError
			if !errors.As(err, &ae) {
				t.Fatalf("not an auth error: %T %v", err, err)
			}
			if !fixed[ae.msg] {
				t.Fatalf("message %q is not one of the fixed answers", ae.msg)
			}
		}
		sec, perr := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
		inTime := perr == nil && sec >= now.Unix()-300 && sec <= now.Unix()+300
		want := whsec.Sign(key, id, ts, body)
		if err == nil {
			// Accepted: the headers are complete, the time is within the tolerance and one v1
			// entry is the HMAC.
			found := false
			for _, e := range strings.Fields(sigs) {
				if v, s, ok := strings.Cut(e, ","); ok && v == "v1" {
					if b, derr := base64.StdEncoding.DecodeString(s); derr == nil && string(b) == string(want) {
						found = true
					}
				}
			}
			if id == "" || !inTime || !found {
				t.Fatalf("accepted id %q ts %q sigs %q at %d", id, ts, sigs, now.Unix())
			}
		}
		// The right signature, added to whatever the header holds, is accepted when the
		// other headers are sound.
		headers[prefix+"-signature"] = sigs + " v1," + base64.StdEncoding.EncodeToString(want)
		err = verifySignature(get, body, [][]byte{key}, now)
		if ok := id != "" && ts != "" && inTime; ok != (err == nil) {
			t.Fatalf("with the right signature added: err %v, want accepted %v (id %q ts %q)", err, ok, id, ts)
		}
	})
}

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
