package testinfra

import (
	"strings"
	"testing"
)

// A DSN that does not parse is reported without the DSN: url.Error would quote the password.
func TestWithSearchPathErrorHidesDSN(t *testing.T) {
	_, err := WithSearchPath("postgres://scribehook:s3cret-pw@127.0.0.1:port/db", "s")
	if err == nil {
		t.Fatal("WithSearchPath accepted a DSN with a non-numeric port")
	}
	const want = `parse the PostgreSQL DSN: invalid port ":port" after host`
	if got := err.Error(); got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("error %q quotes the password", err)
	}
}
