package receiver

import (
	"errors"
	"testing"
	"time"

	"github.com/scribehook/scribehook/signature"
)

// TestVerifySignatureAnswers: a signed route's refusal is a 401 (*authError) whose message is
// the signature package's, and whose reason errors.Is still finds.
func TestVerifySignatureAnswers(t *testing.T) {
	v, err := signature.NewVerifier("whsec_" + "c2Vjb25kIGtleQ==")
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{"webhook-id": "msg_1", "webhook-timestamp": "1614265330", "webhook-signature": "v1,AAAA"}
	err = verifySignature(v, func(k string) string { return headers[k] }, []byte(`{}`), time.Unix(1614265330, 0))
	var ae *authError
	if !errors.As(err, &ae) || ae.msg != "signature mismatch" || !errors.Is(err, signature.ErrMismatch) {
		t.Errorf("error %#v, want an *authError \"signature mismatch\" wrapping signature.ErrMismatch", err)
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
