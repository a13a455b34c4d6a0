// Package whsec reads the signing secrets of Standard Webhooks: the receiver checks deliveries
// with them and the webhook sink signs with them, so both must take a configured secret the
// same way.
package whsec

import (
	"encoding/base64"
	"errors"
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
