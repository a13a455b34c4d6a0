package configs

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/scribehook/scribehook/internal/whsec"
)

// The strength serve asks of the secrets it checks itself: the read token, each route's token,
// and each signing secret (a route's, a sink's). An online guess is limited (receiver
// auth_failure_*), but a token must not be guessable offline either, from a leaked hash or a
// log of timings: 128 bits, what a random generator gives in 22 base64 characters.
const (
	MinTokenLength = 22
	MinTokenBits   = 128
	// MinSigningKeyBytes is the least a whsec_ secret's key may hold (Standard Webhooks
	// secrets hold 24 to 64 bytes).
	MinSigningKeyBytes = 16
)

// generateHint is where every refusal sends the operator.
const generateHint = "make one with: scribehook token new (or: openssl rand -base64 32)"

// NewToken returns a new random token: 32 bytes from crypto/rand, base64url without padding
// (43 characters, 256 bits), fit for a read token, a route token or a whsec_ secret's key.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// NewSigningSecret returns a new Standard Webhooks secret: "whsec_" and 32 random bytes in
// base64.
func NewSigningSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return whsec.Prefix + base64.StdEncoding.EncodeToString(b), nil
}

// TokenBits estimates the entropy of a token by the alphabet it draws from: its length times
// log2 of the size of the character classes it uses (digits 10, lower-case 26, upper-case 26,
// other printable ASCII 33, anything else 128; a token of hexadecimal digits only, in one case,
// counts 16).
// It is an upper bound: it cannot tell a phrase from random characters, which is why the
// documentation asks for a generator.
func TokenBits(s string) float64 {
	n := utf8.RuneCountInString(s)
	if n == 0 {
		return 0
	}
	var digit, lower, upper, other, wide, hexOnly = false, false, false, false, false, true
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z':
			lower = true
			hexOnly = hexOnly && r <= 'f'
		case r >= 'A' && r <= 'Z':
			upper = true
			hexOnly = hexOnly && r <= 'F'
		case r < utf8.RuneSelf && unicode.IsPrint(r):
			other, hexOnly = true, false
		default:
			wide, hexOnly = true, false
		}
	}
	switch {
	case !lower && !upper && !other && !wide:
		return float64(n) * math.Log2(10)
	case hexOnly && !(lower && upper):
		return float64(n) * 4
	}
	size := 0
	for _, c := range []struct {
		on   bool
		size int
	}{{digit, 10}, {lower, 26}, {upper, 26}, {other, 33}, {wide, 128}} {
		if c.on {
			size += c.size
		}
	}
	return float64(n) * math.Log2(float64(size))
}

// CheckToken says why s is too weak for a token, or nil: fewer than MinTokenLength characters,
// fewer than MinTokenBits by TokenBits, or one character making up more than a quarter of it
// (aaaa…, abab…), or white space at either end (a paste that took a line break).
func CheckToken(s string) error {
	n := utf8.RuneCountInString(s)
	switch {
	case strings.TrimSpace(s) != s:
		return errors.New("it starts or ends with white space")
	case n < MinTokenLength:
		return fmt.Errorf("it has %d characters, at least %d are needed", n, MinTokenLength)
	case TokenBits(s) < MinTokenBits:
		return fmt.Errorf("it has about %.0f bits by its alphabet, at least %d are needed", TokenBits(s), MinTokenBits)
	}
	counts := map[rune]int{}
	for _, r := range s {
		if counts[r]++; counts[r]*4 > n {
			return fmt.Errorf("one character makes up more than a quarter of it")
		}
	}
	return nil
}

// CheckSigningSecret is CheckToken for a signing secret: a whsec_ secret must hold at least
// MinSigningKeyBytes of key, not all one byte; a raw secret is a token.
func CheckSigningSecret(s string) error {
	if !strings.HasPrefix(s, whsec.Prefix) {
		return CheckToken(s)
	}
	key, err := whsec.Key(s)
	if err != nil {
		return err
	}
	if len(key) < MinSigningKeyBytes {
		return fmt.Errorf("its key has %d bytes, at least %d are needed", len(key), MinSigningKeyBytes)
	}
	distinct := map[byte]bool{}
	for _, b := range key {
		distinct[b] = true
	}
	if len(distinct) < 4 {
		return errors.New("its key repeats one or two bytes")
	}
	return nil
}

// CheckStrength checks the strength of every secret of s that scribehook chose (not the
// service's API key, which the service issues), naming the variable that holds each weak one
// and never its value. serve refuses to start on its error.
func (c Config) CheckStrength(s Secrets) error {
	var errs []error
	weak := func(variable, what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s) is too weak: %w; %s", variable, what, err, generateHint))
		}
	}
	if s.ReadToken != "" {
		weak(c.ReadTokenEnv, "the read token", CheckToken(s.ReadToken))
	}
	for _, r := range c.Routes {
		rs := s.Routes[r.Name]
		if rs.Token != "" {
			weak(r.TokenEnv, "route "+r.Name+"'s token", CheckToken(rs.Token))
		}
		for i, sec := range rs.SigningSecrets {
			weak(r.SigningSecretEnv, fmt.Sprintf("route %s's signing secret %d", r.Name, i+1), CheckSigningSecret(sec))
		}
	}
	for _, k := range c.Sinks {
		if sec := s.Sinks[k.Name]; sec != "" {
			weak(k.SecretEnv, "sink "+k.Name+"'s signing secret", CheckSigningSecret(sec))
		}
	}
	return errors.Join(errs...)
}
