package netguard

import (
	"errors"
	"net/url"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://user:pw@cdn.example.com/a/b.wav?X-Amz-Signature=abc#frag", "https://cdn.example.com/a/b.wav"},
		{"https://hooks.example.com/in?", "https://hooks.example.com/in"},
		{"/relative/path?token=t", "/relative/path"},
		{"http://[::1", "(unparsable URL)"},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStripURLError(t *testing.T) {
	inner := errors.New("connection refused")
	if got := StripURLError(&url.Error{Op: "Post", URL: "https://h/?token=t", Err: inner}); got != inner {
		t.Errorf("StripURLError = %v, want the inner error", got)
	}
	if got := StripURLError(inner); got != inner {
		t.Errorf("StripURLError of a plain error = %v, want it unchanged", got)
	}
}
