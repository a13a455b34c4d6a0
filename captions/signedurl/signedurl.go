// Package signedurl signs and checks the expiring URLs of a live session's captions: a player
// or an OBS browser source cannot send a bearer header, and the read token must never sit in
// a URL (it would be in players' logs, proxies' logs and the page's history).
//
// A URL carries exp (its expiry, Unix seconds) and sig, HMAC-SHA256 over the session id and
// exp under a key of the server's. The id signed is the id of the path the URL names, so a
// signature for one session opens no other; comparison is constant-time.
//
//	s := signedurl.New(signedurl.DeriveKey(readToken))
//	q := s.Query(sessionID, time.Now().Add(2*time.Hour)) // "exp=…&sig=…"
//	err := s.Verify(sessionID, exp, sig, time.Now())      // nil, or one of the errors below
package signedurl

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The query parameters of a signed URL.
const (
	ParamExpiry    = "exp"
	ParamSignature = "sig"
)

// Errors of Verify and Parse; none of them quotes the signature.
var (
	ErrMissing   = errors.New("signed URL: exp and sig are required")
	ErrMalformed = errors.New("signed URL: exp must be Unix seconds and sig 43 characters of base64url")
	ErrExpired   = errors.New("signed URL: expired")
	ErrSignature = errors.New("signed URL: signature does not match")
)

// keyInfo binds a derived key to this one use: the same secret derives other keys elsewhere.
const keyInfo = "scribehook captions signed URL v1"

// sigLen is the length of sig: 32 bytes in unpadded base64url.
var sigLen = base64.RawURLEncoding.EncodedLen(sha256.Size)

// DeriveKey derives a signing key from a server secret (the read token, or a secret of its
// own) with HKDF-SHA256: the secret itself never keys anything else than what it was made
// for, and changing it invalidates every URL signed with it.
func DeriveKey(secret string) []byte {
	k, err := hkdf.Key(sha256.New, []byte(secret), nil, keyInfo, sha256.Size)
	if err != nil {
		panic(fmt.Sprintf("signedurl: derive key: %v", err)) // not reached: 32 bytes are in HKDF's range
	}
	return k
}

// Signer signs and checks URLs with one key.
type Signer struct {
	key []byte
}

// New returns a Signer keyed with key (DeriveKey's, or 32 random bytes).
func New(key []byte) *Signer { return &Signer{key: append([]byte(nil), key...)} }

// Sign is the signature of the URL of session id that expires at exp (whole seconds).
func (s *Signer) Sign(id string, exp time.Time) string {
	return base64.RawURLEncoding.EncodeToString(s.mac(id, exp.Unix()))
}

// Query is the query string of a signed URL, "exp=…&sig=…" (nothing to escape in either).
func (s *Signer) Query(id string, exp time.Time) string {
	return ParamExpiry + "=" + strconv.FormatInt(exp.Unix(), 10) + "&" + ParamSignature + "=" + s.Sign(id, exp)
}

func (s *Signer) mac(id string, exp int64) []byte {
	m := hmac.New(sha256.New, s.key)
	// Length-prefixed id: no id and expiry can be spliced into another pair.
	m.Write(strconv.AppendInt(nil, int64(len(id)), 10))
	m.Write([]byte{0})
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write(strconv.AppendInt(nil, exp, 10))
	return m.Sum(nil)
}

// Verify checks exp and sig, as the URL carried them, for session id at now: ErrMissing,
// ErrMalformed, ErrSignature, or ErrExpired (only for a URL this key signed).
func (s *Signer) Verify(id, exp, sig string, now time.Time) error {
	at, mac, err := Parse(exp, sig)
	if err != nil {
		return err
	}
	if !hmac.Equal(mac, s.mac(id, at.Unix())) {
		return ErrSignature
	}
	if !now.Before(at) {
		return fmt.Errorf("%w at %s", ErrExpired, at.UTC().Format(time.RFC3339))
	}
	return nil
}

// maxExpiry bounds exp: far beyond any TTL, short of time.Time's odd corners.
const maxExpiry = 1 << 40

// Parse reads exp and sig as a URL carries them.
func Parse(exp, sig string) (time.Time, []byte, error) {
	if exp == "" || sig == "" {
		return time.Time{}, nil, ErrMissing
	}
	// One spelling per URL: no leading zeros, no sign.
	if len(exp) > 13 || (len(exp) > 1 && exp[0] == '0') || len(sig) != sigLen {
		return time.Time{}, nil, ErrMalformed
	}
	for _, c := range []byte(exp) {
		if c < '0' || c > '9' {
			return time.Time{}, nil, ErrMalformed
		}
	}
	n, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || n > maxExpiry {
		return time.Time{}, nil, ErrMalformed
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || len(mac) != sha256.Size {
		return time.Time{}, nil, ErrMalformed
	}
	return time.Unix(n, 0), mac, nil
}
