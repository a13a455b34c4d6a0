package signature

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The example of the Svix / Standard Webhooks documentation: an outside vector, so the HMAC is
// checked against more than the tests' own signer.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = "1614265330"
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	otherSecret  = "whsec_" + "c2Vjb25kIGtleQ=="
)

// TestVerify accepts and refuses, with the fixed message and the reason of each refusal.
func TestVerify(t *testing.T) {
	at := time.Unix(1614265330, 0)
	headers := func(prefix, sig string) map[string]string {
		return map[string]string{prefix + "-id": vectorID, prefix + "-timestamp": vectorTS, prefix + "-signature": sig}
	}
	with := func(h map[string]string, k, v string) map[string]string {
		h[k] = v
		return h
	}
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		secrets []string
		now     time.Time
		err     string
		reason  error
	}{
		{"vector with webhook headers", headers("webhook", vectorSig), vectorBody, []string{vectorSecret}, at, "", nil},
		{"vector with svix headers", headers("svix", vectorSig), vectorBody, []string{vectorSecret}, at, "", nil},
		{"second of several secrets", headers("webhook", vectorSig), vectorBody, []string{otherSecret, vectorSecret}, at, "", nil},
		{"unpadded secret", headers("webhook", vectorSig), vectorBody, []string{strings.TrimRight(vectorSecret, "=")}, at, "", nil},
		{"one of several signatures", headers("webhook", "v1,AAAA v1a,xyz "+vectorSig), vectorBody, []string{vectorSecret}, at, "", nil},
		{"timestamp with spaces", with(headers("webhook", vectorSig), "webhook-timestamp", " "+vectorTS+" "), vectorBody, []string{vectorSecret}, at, "signature mismatch", ErrMismatch},
		{"edge of the tolerance, late", headers("webhook", vectorSig), vectorBody, []string{vectorSecret}, at.Add(5 * time.Minute), "", nil},
		{"edge of the tolerance, early", headers("webhook", vectorSig), vectorBody, []string{vectorSecret}, at.Add(-5 * time.Minute), "", nil},
		{"body changed", headers("webhook", vectorSig), vectorBody + " ", []string{vectorSecret}, at, "signature mismatch", ErrMismatch},
		{"id changed", with(headers("webhook", vectorSig), "webhook-id", "msg_other"), vectorBody, []string{vectorSecret}, at, "signature mismatch", ErrMismatch},
		{"wrong secret", headers("webhook", vectorSig), vectorBody, []string{otherSecret}, at, "signature mismatch", ErrMismatch},
		{"raw secret is not the base64 one", headers("webhook", vectorSig), vectorBody, []string{strings.TrimPrefix(vectorSecret, "whsec_")}, at, "signature mismatch", ErrMismatch},
		{"only other versions", headers("webhook", "v1a,"+vectorSig[3:]), vectorBody, []string{vectorSecret}, at, "no v1 signature in webhook-signature header", ErrNoSignature},
		{"signature not base64", headers("webhook", "v1,!!!"), vectorBody, []string{vectorSecret}, at, "no v1 signature in webhook-signature header", ErrNoSignature},
		{"too old", headers("webhook", vectorSig), vectorBody, []string{vectorSecret}, at.Add(5*time.Minute + time.Second), "timestamp too old", ErrTimestampTooOld},
		{"too new", headers("svix", vectorSig), vectorBody, []string{vectorSecret}, at.Add(-5*time.Minute - time.Second), "timestamp too new", ErrTimestampTooNew},
		{"timestamp not a number", with(headers("webhook", vectorSig), "webhook-timestamp", "yesterday"), vectorBody, []string{vectorSecret}, at, "invalid webhook-timestamp header", ErrInvalidTimestamp},
		{"timestamp in milliseconds", with(headers("webhook", vectorSig), "webhook-timestamp", vectorTS+"000"), vectorBody, []string{vectorSecret}, at, "timestamp too new", ErrTimestampTooNew},
		{"huge timestamp", with(headers("webhook", vectorSig), "webhook-timestamp", "9223372036854775807"), vectorBody, []string{vectorSecret}, at, "timestamp too new", ErrTimestampTooNew},
		{"missing svix id", map[string]string{"svix-timestamp": vectorTS, "svix-signature": vectorSig}, vectorBody, []string{vectorSecret}, at, "missing svix-id header", ErrMissingHeader},
		{"missing signature", map[string]string{"webhook-id": vectorID, "webhook-timestamp": vectorTS}, vectorBody, []string{vectorSecret}, at, "missing webhook-signature header", ErrMissingHeader},
		{"mixed namings: webhook-* win", map[string]string{"webhook-id": vectorID, "svix-timestamp": vectorTS, "svix-signature": vectorSig}, vectorBody, []string{vectorSecret}, at, "missing webhook-timestamp header", ErrMissingHeader},
		{"no headers", nil, vectorBody, []string{vectorSecret}, at, "missing signature headers (webhook-id, webhook-timestamp, webhook-signature)", ErrMissingHeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			header := http.Header{}
			for k, v := range tc.headers {
				header.Set(k, v)
			}
			err := Verify(tc.secrets, []byte(tc.body), header, tc.now)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("error %v, want %q", err, tc.err)
			case tc.reason != nil && !errors.Is(err, tc.reason):
				t.Errorf("error %v is not %v", err, tc.reason)
			}
		})
	}
}

// TestVerifierTolerance: a Verifier's own tolerance replaces the default, both ways.
func TestVerifierTolerance(t *testing.T) {
	v, err := NewVerifier(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	v.Tolerance = 10 * time.Second
	get := func(k string) string {
		return map[string]string{"webhook-id": vectorID, "webhook-timestamp": vectorTS, "webhook-signature": vectorSig}[k]
	}
	at := time.Unix(1614265330, 0)
	for skew, want := range map[time.Duration]error{
		10 * time.Second: nil, 11 * time.Second: ErrTimestampTooOld, -10 * time.Second: nil, -11 * time.Second: ErrTimestampTooNew,
	} {
		if err := v.VerifyAt([]byte(vectorBody), get, at.Add(skew)); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("clock %+v from the timestamp: %v, want %v", skew, err, want)
		}
	}
}

// TestNewVerifierErrors: bad secrets are refused by their index, never quoted.
func TestNewVerifierErrors(t *testing.T) {
	for secrets, want := range map[string]string{
		"":                    "no signing secret",
		"ok,whsec_***secret*": "secret 1: whsec_ secret is not base64",
		"ok,":                 "secret 1: secret is empty",
		"whsec_":              "secret 0: whsec_ secret is empty",
	} {
		var list []string
		if secrets != "" {
			list = strings.Split(secrets, ",")
		}
		_, err := NewVerifier(list...)
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", secrets, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "***secret*") {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
}

// TestVerifyStandardWebhooksSigner: what the Standard Webhooks library signs is accepted, under
// either naming of the headers, and what it refuses is refused.
func TestVerifyStandardWebhooksSigner(t *testing.T) {
	wh, err := standardwebhooks.NewWebhook(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(otherSecret, vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, body := range []string{"", `{"id":"e1","text":"<b>&amp;</b> é"}`, "a.b.c\x00\xff"} {
		sig, err := wh.Sign("msg_1", now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		ts := now.Unix()
		for _, prefix := range []string{"webhook", "svix"} {
			h := http.Header{}
			h.Set(prefix+"-id", "msg_1")
			h.Set(prefix+"-timestamp", strconv.FormatInt(ts, 10))
			h.Set(prefix+"-signature", sig)
			if err := v.Verify([]byte(body), h); err != nil {
				t.Errorf("%s headers, body %q: %v", prefix, body, err)
			}
			// The library agrees on the vector's refusal of a changed body.
			if prefix == "webhook" {
				if err := wh.Verify([]byte(body+"x"), h); err == nil {
					t.Errorf("the library accepted a changed body")
				}
				if err := v.Verify([]byte(body+"x"), h); !errors.Is(err, ErrMismatch) {
					t.Errorf("changed body: %v, want a mismatch", err)
				}
			}
		}
	}
	// The vector is the library's signature too.
	sig, err := wh.Sign(vectorID, time.Unix(1614265330, 0), []byte(vectorBody))
	if err != nil || sig != vectorSig {
		t.Errorf("the library signs the vector %q (%v), want %q", sig, err, vectorSig)
	}
}
