package receiver

import (
	"crypto/hmac"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/internal/whsec"
)

// signatureTolerance is how far a signed timestamp may be from our clock, either way, as
// Standard Webhooks prescribes; it bounds replays of captured requests.
const signatureTolerance = 5 * time.Minute

// signedHeaders are the three headers of one signing scheme.
type signedHeaders struct{ id, timestamp, signature string }

var (
	standardHeaders = signedHeaders{"webhook-id", "webhook-timestamp", "webhook-signature"}
	svixHeaders     = signedHeaders{"svix-id", "svix-timestamp", "svix-signature"}
)

// verifySignature checks a Standard Webhooks / Svix signature over body, the exact bytes
// received, with any of secrets. get reads a request header. The error's message names the
// reason and is safe to answer.
func verifySignature(get func(string) string, body []byte, secrets [][]byte, now time.Time) error {
	h := svixHeaders
	if get(standardHeaders.id) != "" || get(standardHeaders.timestamp) != "" || get(standardHeaders.signature) != "" {
		h = standardHeaders
	}
	id, ts, sigs := get(h.id), get(h.timestamp), get(h.signature)
	switch {
	case id == "" && ts == "" && sigs == "":
		return unauthorized("missing signature headers (webhook-id, webhook-timestamp, webhook-signature)")
	case id == "":
		return unauthorized("missing " + h.id + " header")
	case ts == "":
		return unauthorized("missing " + h.timestamp + " header")
	case sigs == "":
		return unauthorized("missing " + h.signature + " header")
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
	if err != nil {
		return unauthorized("invalid " + h.timestamp + " header")
	}
	// Compare in seconds: converting a huge value to time.Time would overflow.
	switch nowSec := now.Unix(); {
	case sec < nowSec-int64(signatureTolerance/time.Second):
		return unauthorized("timestamp too old")
	case sec > nowSec+int64(signatureTolerance/time.Second):
		return unauthorized("timestamp too new")
	}
	var given [][]byte
	for _, entry := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue // other schemes (v1a, ed25519) are not ours to check
		}
		if b, err := base64.StdEncoding.DecodeString(sig); err == nil {
			given = append(given, b)
		}
	}
	if len(given) == 0 {
		return unauthorized("no v1 signature in " + h.signature + " header")
	}
	ok := false
	for _, key := range secrets {
		want := whsec.Sign(key, id, ts, body)
		for _, g := range given {
			// No early exit: every pair is compared, in constant time.
			if hmac.Equal(want, g) {
				ok = true
			}
		}
	}
	if !ok {
		return unauthorized("signature mismatch")
	}
	return nil
}
