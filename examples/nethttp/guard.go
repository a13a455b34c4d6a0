package main

// The guard of POST /transcribe. That route spends the service key of this program, and the
// service fetches whatever audio_url it is given: open to anyone, it would let whoever reaches
// the program run jobs on its account and make the service fetch any URL for them. So it asks
// for a credential of the program's own (APP_TOKEN) and takes audio only from the origins the
// program lists (AUDIO_ORIGINS). Copy both with the route.

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// minAppTokenLen is the shortest APP_TOKEN accepted: 22 base64 characters carry 132 bits, past
// the 128 that make guessing hopeless. `openssl rand -base64 32` prints 44.
const minAppTokenLen = 22

// makeTokenHint says how to make a token, in every error about one.
const makeTokenHint = "make one with: openssl rand -base64 32"

// appToken is the SHA-256 of APP_TOKEN. Requests are compared with it hash to hash, so that the
// comparison takes the same time whatever the length or the first differing byte of what a
// client sends.
type appToken [sha256.Size]byte

// newAppToken checks that tok can serve as a secret. The errors never quote it.
func newAppToken(tok string) (appToken, error) {
	switch {
	case tok == "":
		return appToken{}, fmt.Errorf("APP_TOKEN is not set: POST /transcribe needs a bearer token of its own; %s", makeTokenHint)
	case len(tok) < minAppTokenLen:
		return appToken{}, fmt.Errorf("APP_TOKEN has %d characters, fewer than %d: %s", len(tok), minAppTokenLen, makeTokenHint)
	case strings.ContainsFunc(tok, unicode.IsSpace):
		// A client could never send it back intact in an Authorization header.
		return appToken{}, fmt.Errorf("APP_TOKEN contains blanks: %s", makeTokenHint)
	}
	return sha256.Sum256([]byte(tok)), nil
}

// allows reports whether an Authorization header carries the token: scheme Bearer (in any case,
// as RFC 9110 §11.1 has it), one space, the token.
func (t appToken) allows(authorization string) bool {
	scheme, tok, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], t[:]) == 1
}

// origins is the set of origins audio may come from, each as canonicalOrigin writes it.
type origins map[string]bool

// parseOrigins reads AUDIO_ORIGINS: origins separated by commas, each scheme://host[:port] with
// nothing after it. Empty means no remote audio at all. A path, user information or another
// scheme is an error rather than ignored: the list says exactly what is trusted.
func parseOrigins(list string) (origins, error) {
	set := origins{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		u, err := url.Parse(item)
		if err != nil {
			return nil, fmt.Errorf("AUDIO_ORIGINS: %q is not a URL: %w", item, err)
		}
		if u.User != nil {
			// Not quoted: it would be a password.
			return nil, errors.New("AUDIO_ORIGINS: an origin has user information; list scheme://host[:port] only")
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || u.Opaque != "" {
			return nil, fmt.Errorf("AUDIO_ORIGINS: %q is not an origin: list scheme://host[:port], nothing after", item)
		}
		o, err := canonicalOrigin(u)
		if err != nil {
			return nil, fmt.Errorf("AUDIO_ORIGINS: %q: %w", item, err)
		}
		set[o] = true
	}
	return set, nil
}

// check decides whether the service may be sent to fetch raw, before anything is submitted,
// and returns the URL to submit: raw as parsed and written again, so that the URL the service
// gets is the one that was checked. The errors name the field and the rule.
func (o origins) check(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("audio_url is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("audio_url is not a URL")
	}
	if u.User != nil {
		return "", errors.New("audio_url must not carry user information")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", errors.New("audio_url must be an https URL")
	}
	origin, err := canonicalOrigin(u)
	if err != nil {
		return "", fmt.Errorf("audio_url: %w", err)
	}
	if !o[origin] {
		if u.Scheme == "http" {
			return "", errors.New("audio_url must be an https URL (http only from an origin listed as http in AUDIO_ORIGINS)")
		}
		return "", errors.New("audio_url must be on an origin listed in AUDIO_ORIGINS")
	}
	return u.String(), nil
}

// canonicalOrigin is u's scheme://host[:port] as compared: scheme and host in lower case, the
// scheme's default port left out, an IPv6 address in brackets. Two spellings of one origin
// give the same string; no host matches another by suffix or prefix.
func canonicalOrigin(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", errors.New("the scheme must be https or http")
	}
	if u.Opaque != "" || u.Host == "" {
		return "", errors.New("the URL must be absolute, with a host")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("the URL must have a host")
	}
	port := u.Port()
	if port != "" {
		// Digits only, and written once: 0443 would be 443 to a dialer but another string here.
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", errors.New("the port must be a number from 1 to 65535")
		}
		if (scheme == "https" && n == 443) || (scheme == "http" && n == 80) {
			port = ""
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", errors.New("the port is empty")
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		return scheme + "://[" + host + "]", nil
	}
	return scheme + "://" + host, nil
}
