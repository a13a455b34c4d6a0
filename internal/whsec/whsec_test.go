package whsec

import (
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"whsec_c2VjcmV0":   "secret",
		"whsec_c2VjcmV0IQ": "secret!", // padding stripped
		"plain-secret":     "plain-secret",
		" whsec_c2VjcmV0":  " whsec_c2VjcmV0", // not the prefix: a raw key
	} {
		got, err := Key(in)
		if err != nil || string(got) != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":           "secret is empty",
		"whsec_":     "whsec_ secret is empty",
		"whsec_***":  "whsec_ secret is not base64",
		"whsec_====": "whsec_ secret is not base64",
	} {
		_, err := Key(in)
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "***") {
			t.Errorf("error repeats the secret: %v", err)
		}
	}
}
