package signature

import (
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/internal/whsec"
)

// FuzzVerify checks the signature headers' parsing on any values: no panic, a refusal with one
// of the fixed messages (none repeats a header value) wrapping its reason, acceptance only of a
// v1 signature that is the HMAC of the request within the tolerance, and acceptance of that
// signature whatever else the header lists. Its corpus came with the check from the receiver.
func FuzzVerify(f *testing.F) {
	f.Add(vectorSecret, vectorID, vectorTS, vectorSig, []byte(vectorBody), false, int64(0))
	f.Add(vectorSecret, vectorID, vectorTS, "v1,AAAA v1a,xyz "+vectorSig, []byte(vectorBody), true, int64(300))
	f.Add("whsec_"+"c2Vjb25kIGtleQ", "msg_1", " 1614265330 ", "v1,!!! v1, ,v1 v1,,", []byte(`{}`), false, int64(-301))
	f.Add("raw secret", "", "", "", []byte(nil), false, int64(0))
	f.Add("whsec_", "id", "9223372036854775807", "v1,"+strings.Repeat("A", 44), []byte("x"), true, int64(0))
	f.Add("whsec_%%%", "id", "-9223372036854775808", "v2,abc", []byte("x"), false, int64(0))
	f.Add(vectorSecret, "msg.with.dots", "+1614265330", "\tv1,"+vectorSig[3:]+"\n", []byte(vectorBody), false, int64(0))
	at, _ := strconv.ParseInt(vectorTS, 10, 64)
	reasons := []error{ErrMissingHeader, ErrInvalidTimestamp, ErrTimestampTooOld, ErrTimestampTooNew, ErrNoSignature, ErrMismatch}
	// The answers are fixed texts: none repeats a header value.
	fixed := map[string]bool{
		"missing signature headers (webhook-id, webhook-timestamp, webhook-signature)": true,
		"timestamp too old": true, "timestamp too new": true, "signature mismatch": true,
	}
	for _, p := range []string{"webhook", "svix"} {
		fixed["missing "+p+"-id header"] = true
		fixed["missing "+p+"-timestamp header"] = true
		fixed["missing "+p+"-signature header"] = true
		fixed["invalid "+p+"-timestamp header"] = true
		fixed["no v1 signature in "+p+"-signature header"] = true
	}
	f.Fuzz(func(t *testing.T, secret, id, ts, sigs string, body []byte, svix bool, skew int64) {
		v, err := NewVerifier(secret)
		if err != nil {
			if len(secret) > len(whsec.Prefix)+2 && strings.Contains(err.Error(), secret) {
				t.Fatalf("secret error repeats the secret: %v", err)
			}
			return
		}
		key, err := whsec.Key(secret)
		if err != nil || len(key) == 0 {
			t.Fatalf("NewVerifier accepted a secret whsec.Key refuses: %q %v", key, err)
		}
		prefix := "webhook"
		if svix {
			prefix = "svix"
		}
		headers := map[string]string{prefix + "-id": id, prefix + "-timestamp": ts, prefix + "-signature": sigs}
		get := func(k string) string { return headers[k] }
		now := time.Unix(at, 0).Add(time.Duration(skew%3600) * time.Second)
		err = v.VerifyAt(body, get, now)
		if err != nil {
			var r *refusal
			if !errors.As(err, &r) || !slices.ContainsFunc(reasons, func(e error) bool { return errors.Is(err, e) }) {
				t.Fatalf("not a refusal with a reason: %T %v", err, err)
			}
			if !fixed[err.Error()] {
				t.Fatalf("message %q is not one of the fixed answers", err.Error())
			}
		}
		sec, perr := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
		inTime := perr == nil && sec >= now.Unix()-300 && sec <= now.Unix()+300
		want := whsec.Sign(key, id, ts, body)
		if err == nil {
			// Accepted: the headers are complete, the time is within the tolerance and one v1
			// entry is the HMAC.
			found := false
			for _, e := range strings.Fields(sigs) {
				if v, s, ok := strings.Cut(e, ","); ok && v == "v1" {
					if b, derr := base64.StdEncoding.DecodeString(s); derr == nil && string(b) == string(want) {
						found = true
					}
				}
			}
			if id == "" || !inTime || !found {
				t.Fatalf("accepted id %q ts %q sigs %q at %d", id, ts, sigs, now.Unix())
			}
		}
		// The right signature, added to whatever the header holds, is accepted when the
		// other headers are sound.
		headers[prefix+"-signature"] = sigs + " v1," + base64.StdEncoding.EncodeToString(want)
		err = v.VerifyAt(body, get, now)
		if ok := id != "" && ts != "" && inTime; ok != (err == nil) {
			t.Fatalf("with the right signature added: err %v, want accepted %v (id %q ts %q)", err, ok, id, ts)
		}
	})
}
