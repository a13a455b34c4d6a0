package whsec

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
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

// TestSign: the signature is the one the Standard Webhooks library computes, for a body of
// any bytes.
func TestSign(t *testing.T) {
	key := []byte("sixteen byte key")
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	for _, body := range []string{"", `{"id":"e1"}`, "a.b.c\x00\xff"} {
		want, err := wh.Sign("msg_1", at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		got := "v1," + base64.StdEncoding.EncodeToString(Sign(key, "msg_1", "1700000000", []byte(body)))
		if got != want {
			t.Errorf("body %q: %s, want %s", body, got, want)
		}
	}
}
