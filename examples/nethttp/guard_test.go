package main

import (
	"strings"
	"testing"
)

// Which audio_url the service may be sent to fetch, decided without dialling anything.
func TestOriginsCheck(t *testing.T) {
	o, err := parseOrigins(" https://Allowed.Example ,http://127.0.0.1:8788, https://media.example:8443/,https://[::1]:9000,")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url  string
		want string // the URL submitted; "" when refused
		rule string // in the refusal
	}{
		{"https://allowed.example/a.wav", "https://allowed.example/a.wav", ""},
		{"https://ALLOWED.example/a.wav?sig=1#t", "https://ALLOWED.example/a.wav?sig=1#t", ""}, // host case is free
		{"HTTPS://allowed.example/a.wav", "https://allowed.example/a.wav", ""},
		{"https://allowed.example:443/a.wav", "https://allowed.example:443/a.wav", ""}, // the default port
		{"http://127.0.0.1:8788/sample.wav", "http://127.0.0.1:8788/sample.wav", ""},   // listed as http
		{"https://media.example:8443/x", "https://media.example:8443/x", ""},
		{"https://[::1]:9000/a.wav", "https://[::1]:9000/a.wav", ""},

		{"", "", "audio_url is required"},
		{"http://169.254.169.254/latest/meta-data/", "", "https"},
		{"https://169.254.169.254/latest/meta-data/", "", "AUDIO_ORIGINS"},
		{"https://evil.example/a.wav", "", "AUDIO_ORIGINS"},
		{"https://allowed.example.evil.com/", "", "AUDIO_ORIGINS"}, // no suffix or prefix match
		{"https://evilallowed.example/", "", "AUDIO_ORIGINS"},
		{"https://allowed.example./a.wav", "", "AUDIO_ORIGINS"}, // the list says exactly
		{"https://evil.com/https://allowed.example/", "", "AUDIO_ORIGINS"},
		{"https://user@allowed.example/", "", "user information"},
		{"https://allowed.example:x@evil.example/", "", "user information"},
		{"https://allowed.example@evil.example/", "", "user information"},
		{"https://allowed.example:8443/a.wav", "", "AUDIO_ORIGINS"},
		{"https://allowed.example:0443/a.wav", "", "port"},
		{"https://allowed.example:/a.wav", "", "port"},
		{"http://allowed.example/a.wav", "", "https"},              // listed as https only
		{"https://127.0.0.1:8788/sample.wav", "", "AUDIO_ORIGINS"}, // listed as http only
		{"http://127.0.0.1:8789/sample.wav", "", "https"},          // another port
		{"http://localhost:8788/sample.wav", "", "https"},          // another name for it
		{"https://media.example/x", "", "AUDIO_ORIGINS"},           // listed with its port only
		{"https://[::1]/a.wav", "", "AUDIO_ORIGINS"},
		{"ftp://allowed.example/a.wav", "", "https"},
		{"file:///etc/passwd", "", "https"},
		{"//allowed.example/a.wav", "", "https"},
		{"allowed.example/a.wav", "", "https"},
		{"https:allowed.example/a.wav", "", "host"},
		{"https:///a.wav", "", "host"},
		{"https://allowed%2eexample/a.wav", "", "not a URL"},
		{"https://allowed.example\\@evil.example/", "", "not a URL"},
		{"https://allowed.example/a\x00.wav", "", "not a URL"},
	} {
		got, err := o.check(c.url)
		if c.want != "" {
			if err != nil || got != c.want {
				t.Errorf("check(%q) = %q, %v; want %q", c.url, got, err, c.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("check(%q) = %q, want refused", c.url, got)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "audio_url") || !strings.Contains(msg, c.rule) {
			t.Errorf("check(%q): %q, want an error naming audio_url and %q", c.url, msg, c.rule)
		}
	}

	// No list: no remote audio at all.
	none, err := parseOrigins("")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := none.check("https://allowed.example/a.wav"); err == nil {
		t.Errorf("with no origins, check = %q, want refused", got)
	}
}

// AUDIO_ORIGINS holds origins and nothing else; anything else stops the program.
func TestParseOrigins(t *testing.T) {
	for _, list := range []string{
		"allowed.example", "https://allowed.example/audio", "https://allowed.example?x", "https://allowed.example#x",
		"https://u:p@allowed.example", "ftp://allowed.example", "https://", "https://allowed.example:99999",
		"https://allowed.example:https", "https:allowed.example", "https://a.example,https://b.example/x",
	} {
		if o, err := parseOrigins(list); err == nil {
			t.Errorf("parseOrigins(%q) = %v, want an error", list, o)
		} else if !strings.HasPrefix(err.Error(), "AUDIO_ORIGINS") || strings.Contains(err.Error(), "u:p") {
			t.Errorf("parseOrigins(%q): %q", list, err)
		}
	}
	o, err := parseOrigins("https://A.example:443, http://b.example:80/,https://c.example:8443")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"https://a.example", "http://b.example", "https://c.example:8443"} {
		if !o[want] || len(o) != 3 {
			t.Errorf("parseOrigins: %v, want %s among 3", o, want)
		}
	}
}

// APP_TOKEN must be a secret; a request must carry it exactly.
func TestAppToken(t *testing.T) {
	for _, tok := range []string{"", "short", strings.Repeat("a", minAppTokenLen-1), strings.Repeat("a", 30) + " b"} {
		_, err := newAppToken(tok)
		if err == nil || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("newAppToken(%q): %v, want a refusal saying how to make one", tok, err)
		}
		if err != nil && len(tok) > 5 && strings.Contains(err.Error(), tok) {
			t.Errorf("newAppToken(%q): the error repeats the token: %v", tok, err)
		}
	}
	const tok = "dGhlIGV4YW1wbGVzJyB0ZXN0IHRva2VuLCAzMiBieXQ="
	token, err := newAppToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]bool{
		"Bearer " + tok:                  true,
		"bearer " + tok:                  true,
		"BEARER " + tok:                  true,
		"":                               false,
		tok:                              false,
		"Bearer":                         false,
		"Bearer ":                        false,
		"Bearer " + tok[1:]:              false,
		"Bearer " + tok + "=":            false,
		"Bearer  " + tok:                 false,
		"Bearer " + tok + " ":            false,
		"Basic " + tok:                   false,
		"Bearer\t" + tok:                 false,
		"Token " + tok:                   false,
		"Bearer " + strings.ToUpper(tok): false,
	} {
		if got := token.allows(header); got != want {
			t.Errorf("allows(%q) = %v, want %v", header, got, want)
		}
	}
}
