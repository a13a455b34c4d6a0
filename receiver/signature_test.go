package receiver

import (
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/whsec"
)

// The example of the Svix / Standard Webhooks documentation: an outside vector, so the
// receiver's HMAC is checked against more than the tests' own signer.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = "1614265330"
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestVerifySignature(t *testing.T) {
	key, err := whsec.Key(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := whsec.Key("whsec_" + "c2Vjb25kIGtleQ==")
	at := time.Unix(1614265330, 0)
	headers := func(prefix, sig string) map[string]string {
		return map[string]string{prefix + "-id": vectorID, prefix + "-timestamp": vectorTS, prefix + "-signature": sig}
	}
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		secrets [][]byte
		now     time.Time
		err     string
	}{
		{"vector with webhook headers", headers("webhook", vectorSig), vectorBody, [][]byte{key}, at, ""},
		{"vector with svix headers", headers("svix", vectorSig), vectorBody, [][]byte{key}, at, ""},
		{"second of several secrets", headers("webhook", vectorSig), vectorBody, [][]byte{other, key}, at, ""},
		{"one of several signatures", headers("webhook", "v1,AAAA v1a,xyz "+vectorSig), vectorBody, [][]byte{key}, at, ""},
		{"edge of the tolerance", headers("webhook", vectorSig), vectorBody, [][]byte{key}, at.Add(5 * time.Minute), ""},
		{"body changed", headers("webhook", vectorSig), vectorBody + " ", [][]byte{key}, at, "signature mismatch"},
		{"wrong secret", headers("webhook", vectorSig), vectorBody, [][]byte{other}, at, "signature mismatch"},
		{"only other versions", headers("webhook", "v1a,"+vectorSig[3:]), vectorBody, [][]byte{key}, at, "no v1 signature in webhook-signature header"},
		{"signature not base64", headers("webhook", "v1,!!!"), vectorBody, [][]byte{key}, at, "no v1 signature in webhook-signature header"},
		{"too old", headers("webhook", vectorSig), vectorBody, [][]byte{key}, at.Add(5*time.Minute + time.Second), "timestamp too old"},
		{"too new", headers("webhook", vectorSig), vectorBody, [][]byte{key}, at.Add(-5*time.Minute - time.Second), "timestamp too new"},
		{"timestamp not a number", map[string]string{"webhook-id": vectorID, "webhook-timestamp": "yesterday", "webhook-signature": vectorSig}, vectorBody, [][]byte{key}, at, "invalid webhook-timestamp header"},
		{"huge timestamp", map[string]string{"webhook-id": vectorID, "webhook-timestamp": "9223372036854775807", "webhook-signature": vectorSig}, vectorBody, [][]byte{key}, at, "timestamp too new"},
		{"missing id", map[string]string{"svix-timestamp": vectorTS, "svix-signature": vectorSig}, vectorBody, [][]byte{key}, at, "missing svix-id header"},
		{"no headers", nil, vectorBody, [][]byte{key}, at, "missing signature headers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			get := func(k string) string { return tc.headers[k] }
			err := verifySignature(get, []byte(tc.body), tc.secrets, tc.now)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if _, ok := err.(*authError); err != nil && !ok {
				t.Errorf("error %T is not an auth error", err)
			}
		})
	}
}

func TestNewChecksConfig(t *testing.T) {
	st := newClosedStore(t)
	ing := &switchIngester{}
	cases := map[string]Config{
		"no store":           {Ingester: ing},
		"no ingester":        {Store: st},
		"route without name": {Store: st, Ingester: ing, Routes: []Route{{Token: "t"}}},
		"reserved name":      {Store: st, Ingester: ing, Routes: []Route{{Name: "job", Token: "t"}}},
		"duplicate name":     {Store: st, Ingester: ing, Routes: []Route{{Name: "a", Token: "t"}, {Name: "a", Token: "u"}}},
		"empty token":        {Store: st, Ingester: ing, Routes: []Route{{Name: "a"}}},
		"bad secret":         {Store: st, Ingester: ing, Routes: []Route{{Name: "a", Token: "t", SigningSecrets: []string{"whsec_%%%"}}}},
	}
	for name, cfg := range cases {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Metrics register once per registry: a second receiver on the same one is refused.
	ok := Config{Store: st, Ingester: ing}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
	ok.Metrics = nil
	r1, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	ok.Metrics = r1.cfg.Metrics
	if _, err := New(ok); err == nil {
		t.Error("second receiver on one registry accepted")
	}
}
