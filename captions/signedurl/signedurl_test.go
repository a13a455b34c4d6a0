package signedurl_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/captions/signedurl"
)

var now = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func TestVerify(t *testing.T) {
	s := signedurl.New(signedurl.DeriveKey("read-token"))
	exp := now.Add(time.Hour)
	expS := strconv.FormatInt(exp.Unix(), 10)
	sig := s.Sign("session-1", exp)
	other := signedurl.New(signedurl.DeriveKey("another-token"))
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'A' {
			b[0] = 'B'
		} else {
			b[0] = 'A'
		}
		return string(b)
	}
	cases := []struct {
		name, id, exp, sig string
		at                 time.Time
		want               error
	}{
		{"valid", "session-1", expS, sig, now, nil},
		{"valid a second before", "session-1", expS, sig, exp.Add(-time.Second), nil},
		{"expired at exp", "session-1", expS, sig, exp, signedurl.ErrExpired},
		{"expired", "session-1", expS, sig, exp.Add(time.Hour), signedurl.ErrExpired},
		{"wrong id", "session-2", expS, sig, now, signedurl.ErrSignature},
		{"id with a prefix", "session-10", expS, sig, now, signedurl.ErrSignature},
		{"exp moved later", "session-1", strconv.FormatInt(exp.Unix()+3600, 10), sig, now, signedurl.ErrSignature},
		{"signature tampered", "session-1", expS, flip(sig), now, signedurl.ErrSignature},
		{"another key", "session-1", expS, other.Sign("session-1", exp), now, signedurl.ErrSignature},
		{"missing sig", "session-1", expS, "", now, signedurl.ErrMissing},
		{"missing exp", "session-1", "", sig, now, signedurl.ErrMissing},
		{"exp not a number", "session-1", "+" + expS, sig, now, signedurl.ErrMalformed},
		{"exp with a leading zero", "session-1", "0" + expS, sig, now, signedurl.ErrMalformed},
		{"exp huge", "session-1", "9999999999999", sig, now, signedurl.ErrMalformed},
		{"sig short", "session-1", expS, sig[:42], now, signedurl.ErrMalformed},
		{"sig padded", "session-1", expS, sig[:42] + "=", now, signedurl.ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Verify(tc.id, tc.exp, tc.sig, tc.at)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Verify: %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), tc.sig) && tc.sig != "" {
				t.Errorf("error quotes the signature: %v", err)
			}
		})
	}
}

func TestQuery(t *testing.T) {
	s := signedurl.New(signedurl.DeriveKey("read-token"))
	exp := now.Add(2 * time.Hour)
	q := s.Query("a/b", exp)
	want := "exp=" + strconv.FormatInt(exp.Unix(), 10) + "&sig=" + s.Sign("a/b", exp)
	if q != want {
		t.Errorf("Query: %q, want %q", q, want)
	}
	if len(s.Sign("a/b", exp)) != 43 {
		t.Errorf("signature of %d characters, want 43", len(s.Sign("a/b", exp)))
	}
	// The same secret and id give the same signature (replicas agree); the key is not the
	// secret itself.
	if signedurl.New(signedurl.DeriveKey("read-token")).Sign("a/b", exp) != s.Sign("a/b", exp) {
		t.Error("two signers of one secret disagree")
	}
	if string(signedurl.DeriveKey("read-token")) == "read-token" || len(signedurl.DeriveKey("x")) != 32 {
		t.Error("DeriveKey does not derive a 32-byte key")
	}
}
