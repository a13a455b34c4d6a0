package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// HashToken is how a callback token is stored and looked up: the store keeps only the
// SHA-256, so a leaked database does not leak working callback URLs. A plain hash suffices
// (no salt, no slow hash) because tokens are 256 random bits, not guessable passwords.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// NewToken mints a callback token: 32 random bytes, base64url without padding, so it fits in
// a URL path segment as is.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
