package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/configs"
)

// TestServeRefusesWeakSecrets: serve does not start with a read token, route token or signing
// secret under the documented strength; the error names the variable and how to make a
// strong one, never the value, and nothing is created.
func TestServeRefusesWeakSecrets(t *testing.T) {
	strong, err := configs.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want, weak string
	}{
		{"read token", "", map[string]string{"SCRIBEHOOK_READ_TOKEN": "4711"},
			"SCRIBEHOOK_READ_TOKEN (the read token) is too weak: it has 4 characters, at least 22 are needed; make one with: scribehook token new", "4711"},
		{"route token", "routes:\n  - {name: partner, token_env: PARTNER_TOKEN}\n", map[string]string{"SCRIBEHOOK_READ_TOKEN": strong, "PARTNER_TOKEN": "42"},
			"PARTNER_TOKEN (route partner's token) is too weak: it has 2 characters", "42"},
		{"signing secret", "routes:\n  - {name: partner, token_env: PARTNER_TOKEN, signing_secret_env: PARTNER_SECRET}\n",
			map[string]string{"PARTNER_TOKEN": strong, "PARTNER_SECRET": "whsec_c2hvcnQ="},
			"PARTNER_SECRET (route partner's signing secret 1) is too weak: its key has 5 bytes", "c2hvcnQ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dsn := filepath.Join(dir, "s.db")
			path := filepath.Join(dir, "scribehook.yaml")
			writeFile(t, path, []byte("store: {dsn: "+dsn+"}\nlisten: 127.0.0.1:"+freePort(t)+"\n"+tc.file))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, err := runCmd(ctx, nil, "--config", path, "serve")
			if err == nil || !strings.Contains(err.Error(), "refusing to start") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "="+tc.weak) || strings.Contains(err.Error(), " "+tc.weak+" ") || strings.Contains(err.Error(), `"`+tc.weak) {
				t.Errorf("the error shows the secret: %v", err)
			}
			if _, err := os.Stat(dsn); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the store was created: %v", err)
			}
		})
	}
}

// TestTokenNew: token new prints a token serve accepts, a new one each time; --signing a
// whsec_ secret.
func TestTokenNew(t *testing.T) {
	ctx := context.Background()
	seen := map[string]bool{}
	for range 5 {
		out, _, err := runCmd(ctx, nil, "token", "new")
		if err != nil {
			t.Fatal(err)
		}
		tok := strings.TrimSuffix(out, "\n")
		if len(tok) != 43 || strings.ContainsAny(tok, "\n =+/") || seen[tok] {
			t.Fatalf("token new printed %q", out)
		}
		seen[tok] = true
		if err := configs.CheckToken(tok); err != nil {
			t.Errorf("token new made a token serve refuses: %v", err)
		}
	}
	out, _, err := runCmd(ctx, nil, "token", "new", "--signing")
	if err != nil {
		t.Fatal(err)
	}
	sec := strings.TrimSuffix(out, "\n")
	if !strings.HasPrefix(sec, "whsec_") || configs.CheckSigningSecret(sec) != nil {
		t.Errorf("token new --signing printed %q", out)
	}
}
