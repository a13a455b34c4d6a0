// Package whsec reads the signing secrets of Standard Webhooks and signs with them: the
// receiver checks deliveries with them and the webhook sink signs with them, so both must take
// a configured secret, and compute a signature, the same way.
package whsec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"strings"
)

// Prefix marks a secret written as base64, as Standard Webhooks and Svix print them.
const Prefix = "whsec_"

// Key turns a configured secret into an HMAC key: the base64 after "whsec_" (with or without
// padding, which some tools strip), or the raw bytes of any other string. Errors never quote
// the secret.
func Key(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("secret is empty")
	}
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return []byte(s), nil
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		if key, err = base64.RawStdEncoding.DecodeString(rest); err != nil {
			return nil, errors.New("whsec_ secret is not base64")
		}
	}
	if len(key) == 0 {
		return nil, errors.New("whsec_ secret is empty")
	}
	return key, nil
}

// Sign is the v1 signature of a message before its base64: the HMAC-SHA256 of
// "id.timestamp.body" under key. The body is hashed where it lies; a library's
// Sprintf("%s.%d.%s") would copy a delivery, megabytes for a long transcript, for every key.
func Sign(key []byte, id, timestamp string, body []byte) []byte {
	return SignParts(key, id, timestamp, body)
}

// SignParts is Sign of the body made of parts, one after the other, none copied.
func SignParts(key []byte, id, timestamp string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	_, _ = io.WriteString(m, id)
	_, _ = m.Write([]byte{'.'})
	_, _ = io.WriteString(m, timestamp)
	_, _ = m.Write([]byte{'.'})
	for _, p := range parts {
		_, _ = m.Write(p)
	}
	return m.Sum(nil)
}
