package configs

import (
	"strings"
	"testing"
)

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  string // "" accepted, else a part of the reason
	}{
		{"4711", "it has 4 characters, at least 22 are needed"},
		{"42", "it has 2 characters"},
		{"read-token", "it has 10 characters"},
		{"0123456789012345678901234567890123", "it has about 113 bits by its alphabet"},
		{"0123456789abcdef0123456789abcde", "it has about 124 bits"}, // 31 hex digits
		{"9f86d081884c7d659a2feaa0c55ad015", ""},                     // openssl rand -hex 16
		{"ababababababababababababababab", "about 120 bits"},         // hex alphabet
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "more than a quarter"},    // 141 bits by its alphabet
		{"Zm9vYmFyYmF6cXV4cXV1eA", ""},                               // 22 base64 characters, 132 bits
		{"qwertyuiopasdfghjklzxc", "about 103 bits"},                 // lower-case only
		{"kJ8sP2nQ7vX4mR1tW6yZ3b", ""},                               // 22 of the base64 alphabet
		{" kJ8sP2nQ7vX4mR1tW6yZ3bA9", "white space"},                 // a paste with a space
		{"kJ8sP2nQ7vX4mR1tW6yZ3bA9\n", "white space"},                // and a line break
		{"550e8400-e29b-41d4-a716-446655440000", ""},                 // a UUID
		{"YmFzZTY0IHN0YW5kYXJkIHdpdGggcGFkZGluZyE+Lw==", ""},         // openssl rand -base64 32
		{strings.Repeat("ab", 6) + "cdefghijklmnopqrs", ""},          // 29 lower-case: 136 bits
		{"read-token-for-tests-0123", ""},                            // a phrase passes: only a generator helps
		{"ÄÖÜäöüßÄÖÜäöüßÄÖÜäöüßÄÖÜ", ""},                             // other scripts count 128
		{"1234567890123456789012345678901234567890", ""},             // 40 digits: 133 bits
	} {
		err := CheckToken(tc.token)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q refused: %v", tc.token, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.token, err, tc.want)
		}
	}
}

// TestNewTokenIsStrong: what token new makes always passes, over many draws (the quarter rule
// must never refuse a random token).
func TestNewTokenIsStrong(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != 43 || seen[tok] {
			t.Fatalf("token %q (len %d, seen %v)", tok, len(tok), seen[tok])
		}
		seen[tok] = true
		if err := CheckToken(tok); err != nil {
			t.Fatalf("new token %q refused: %v", tok, err)
		}
		sec, err := NewSigningSecret()
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckSigningSecret(sec); err != nil {
			t.Fatalf("new signing secret refused: %v", err)
		}
	}
}

func TestCheckSigningSecret(t *testing.T) {
	for _, tc := range []struct{ secret, want string }{
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", ""},                   // 24 bytes
		{"whsec_c2hvcnQ=", "its key has 5 bytes, at least 16"},           // "short"
		{"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "repeats one or two"}, // 24 zero bytes
		{"whsec_not base64!", "not base64"},
		{"raw", "it has 3 characters"},
		{"kJ8sP2nQ7vX4mR1tW6yZ3bA9", ""},
	} {
		err := CheckSigningSecret(tc.secret)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q refused: %v", tc.secret, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.secret, err, tc.want)
		}
	}
}

// TestCheckStrength: every weak secret serve would use is named by its variable, never shown.
func TestCheckStrength(t *testing.T) {
	cfg := ServeDefaults()
	cfg.Routes = []Route{{Name: "partner", TokenEnv: "PARTNER_TOKEN", SigningSecretEnv: "PARTNER_SECRET"}}
	cfg.Sinks = append(cfg.Sinks, Sink{Name: "hook", Kind: "webhook", SecretEnv: "HOOK_SECRET"})
	s := Secrets{
		ReadToken: "4711",
		Routes:    map[string]RouteSecrets{"partner": {Token: "42", SigningSecrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2hvcnQ="}}},
		Sinks:     map[string]string{"hook": "hunter2"},
		APIKey:    "k", // the service's: not ours to judge
	}
	err := cfg.CheckStrength(s)
	if err == nil {
		t.Fatal("weak secrets accepted")
	}
	want := []string{
		"SCRIBEHOOK_READ_TOKEN (the read token) is too weak: it has 4 characters, at least 22 are needed; make one with: scribehook token new (or: openssl rand -base64 32)",
		"PARTNER_TOKEN (route partner's token) is too weak: it has 2 characters, at least 22 are needed; make one with: scribehook token new (or: openssl rand -base64 32)",
		"PARTNER_SECRET (route partner's signing secret 2) is too weak: its key has 5 bytes, at least 16 are needed; make one with: scribehook token new (or: openssl rand -base64 32)",
		"HOOK_SECRET (sink hook's signing secret) is too weak: it has 7 characters, at least 22 are needed; make one with: scribehook token new (or: openssl rand -base64 32)",
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("error\n%s\nwant\n%s", err, strings.Join(want, "\n"))
	}
	for _, secret := range []string{"4711", "hunter2", "c2hvcnQ="} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret %q", secret)
		}
	}
	good, _ := NewToken()
	sec, _ := NewSigningSecret()
	s = Secrets{ReadToken: good, Routes: map[string]RouteSecrets{"partner": {Token: good, SigningSecrets: []string{sec}}}, Sinks: map[string]string{"hook": sec}}
	if err := cfg.CheckStrength(s); err != nil {
		t.Errorf("strong secrets refused: %v", err)
	}
}
