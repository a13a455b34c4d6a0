// Package signature checks Standard Webhooks signatures (the scheme of Svix) over a request's
// body, with nothing but the standard library: any server, any framework. It is the check the
// scribehook receiver runs on a route with signing secrets, and the one a program runs on what a
// scribehook webhook sink sends it.
//
//	v, err := signature.NewVerifier(os.Getenv("HOOK_SECRET")) // "whsec_…", several while rotating
//	…
//	body, _ := io.ReadAll(r.Body)                             // the exact bytes received
//	if err := v.Verify(body, r.Header); err != nil {
//		http.Error(w, err.Error(), http.StatusUnauthorized)      // the message quotes no header's value
//		return
//	}
//
// The scheme: the headers webhook-id, webhook-timestamp and webhook-signature (or svix-id,
// svix-timestamp and svix-signature, when no webhook-* header is present); the timestamp in
// Unix seconds, within Tolerance of the clock either way (five minutes by default); the
// signature header a space-separated list of "version,signature" entries, of which the v1
// entries are checked (v1a and other schemes are skipped): the base64 of the HMAC-SHA256 of
// "id.timestamp.body" under a secret's key. One v1 entry made with any of the secrets is enough;
// every entry is compared with every key, in constant time.
package signature

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/scribehook/scribehook/internal/whsec"
)

// DefaultTolerance is how far a signed timestamp may be from the clock, either way, as Standard
// Webhooks prescribes; it bounds replays of a captured request.
const DefaultTolerance = 5 * time.Minute

// The reasons a request is refused. Every error Verify returns wraps one of them (errors.Is);
// its message is fixed text that may name a header, never a header's value, and is safe to
// send back.
var (
	// ErrMissingHeader: a signature header is absent or empty.
	ErrMissingHeader = errors.New("missing signature header")
	// ErrInvalidTimestamp: the timestamp header is not a whole number of seconds.
	ErrInvalidTimestamp = errors.New("invalid timestamp")
	// ErrTimestampTooOld and ErrTimestampTooNew: the timestamp is further than the tolerance
	// from the clock.
	ErrTimestampTooOld = errors.New("timestamp too old")
	ErrTimestampTooNew = errors.New("timestamp too new")
	// ErrNoSignature: the signature header holds no v1 entry that decodes.
	ErrNoSignature = errors.New("no v1 signature")
	// ErrMismatch: no v1 entry is the signature of this body under any of the secrets.
	ErrMismatch = errors.New("signature mismatch")
)

// refusal is an error of Verify: a fixed message and the reason it wraps.
type refusal struct {
	msg    string
	reason error
}

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return e.reason }

// headerNames are the three headers of one naming of the scheme.
type headerNames struct{ id, timestamp, signature string }

var (
	standardHeaders = headerNames{"webhook-id", "webhook-timestamp", "webhook-signature"}
	svixHeaders     = headerNames{"svix-id", "svix-timestamp", "svix-signature"}
)

// Verifier checks signatures made with any of its secrets. It is safe for concurrent use.
type Verifier struct {
	// Tolerance is how far the timestamp may be from the clock, either way; zero is
	// DefaultTolerance. Set it before the first Verify.
	Tolerance time.Duration
	keys      [][]byte
}

// NewVerifier builds a Verifier from one or more secrets: "whsec_" followed by base64 (padded or
// not), as Standard Webhooks and Svix print them, or any other string, whose bytes are the key.
// Several secrets let a sender rotate: a request signed with any of them is accepted. Errors
// never quote a secret.
func NewVerifier(secrets ...string) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no signing secret")
	}
	v := &Verifier{}
	for i, s := range secrets {
		key, err := whsec.Key(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// Verify checks the signature of body, the exact bytes received (before any decoding of their
// content), against the request's headers, at the present time.
func (v *Verifier) Verify(body []byte, header http.Header) error {
	return v.VerifyAt(body, header.Get, time.Now())
}

// VerifyAt is Verify for a server that does not keep its headers in an http.Header, and for a
// clock of the caller's: header returns a request header's value by name, case-insensitively
// ("" when absent), as http.Header.Get and fiber.Ctx.Get do.
func (v *Verifier) VerifyAt(body []byte, header func(name string) string, now time.Time) error {
	h := svixHeaders
	if header(standardHeaders.id) != "" || header(standardHeaders.timestamp) != "" || header(standardHeaders.signature) != "" {
		h = standardHeaders
	}
	id, ts, sigs := header(h.id), header(h.timestamp), header(h.signature)
	switch {
	case id == "" && ts == "" && sigs == "":
		return &refusal{"missing signature headers (webhook-id, webhook-timestamp, webhook-signature)", ErrMissingHeader}
	case id == "":
		return &refusal{"missing " + h.id + " header", ErrMissingHeader}
	case ts == "":
		return &refusal{"missing " + h.timestamp + " header", ErrMissingHeader}
	case sigs == "":
		return &refusal{"missing " + h.signature + " header", ErrMissingHeader}
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
	if err != nil {
		return &refusal{"invalid " + h.timestamp + " header", ErrInvalidTimestamp}
	}
	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	// Compare in seconds: converting a huge value to time.Time would overflow.
	switch nowSec, tol := now.Unix(), int64(tolerance/time.Second); {
	case sec < nowSec-tol:
		return &refusal{"timestamp too old", ErrTimestampTooOld}
	case sec > nowSec+tol:
		return &refusal{"timestamp too new", ErrTimestampTooNew}
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
		return &refusal{"no v1 signature in " + h.signature + " header", ErrNoSignature}
	}
	ok := false
	for _, key := range v.keys {
		want := whsec.Sign(key, id, ts, body)
		for _, g := range given {
			// No early exit: every pair is compared, in constant time.
			if hmac.Equal(want, g) {
				ok = true
			}
		}
	}
	if !ok {
		return &refusal{"signature mismatch", ErrMismatch}
	}
	return nil
}

// Verify checks the signature of body against header at now with any of secrets: NewVerifier
// and VerifyAt in one call, for a program that checks one request. An error reading a secret
// wraps none of the reasons above.
func Verify(secrets []string, body []byte, header http.Header, now time.Time) error {
	v, err := NewVerifier(secrets...)
	if err != nil {
		return err
	}
	return v.VerifyAt(body, header.Get, now)
}
