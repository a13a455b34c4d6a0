package signature_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/scribehook/scribehook/signature"
)

// A net/http handler that accepts only what a sender holding the secret signed: a scribehook
// webhook sink, a Svix or Standard Webhooks sender. The body is read whole first, since the
// signature covers its exact bytes.
func ExampleVerifier_Verify() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	v, err := signature.NewVerifier(secret) // add the next secret here while rotating
	if err != nil {
		panic(err)
	}
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := v.Verify(body, r.Header); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized) // fixed text, no header value
			return
		}
		fmt.Fprintf(w, "accepted %s", r.Header.Get("webhook-id"))
	})

	body := []byte(`{"id":"evt_1","type":"job.succeeded"}`)
	signed := sign(secret, "evt_1", time.Now(), body)
	fmt.Println(answer(hook, body, signed))
	fmt.Println(answer(hook, []byte(`{"id":"evt_1","type":"job.failed"}`), signed))
	fmt.Println(answer(hook, body, nil))
	// Output:
	// 200 accepted evt_1
	// 401 signature mismatch
	// 401 missing signature headers (webhook-id, webhook-timestamp, webhook-signature)
}

// One request checked at a given time, with the reason of a refusal.
func ExampleVerify() {
	header := http.Header{}
	header.Set("svix-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	header.Set("svix-timestamp", "1614265330")
	header.Set("svix-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	body := []byte(`{"test": 2432232314}`)
	secrets := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}

	fmt.Println(signature.Verify(secrets, body, header, time.Unix(1614265330, 0)))
	err := signature.Verify(secrets, body, header, time.Unix(1614265330, 0).Add(time.Hour))
	fmt.Println(err, errors.Is(err, signature.ErrTimestampTooOld))
	// Output:
	// <nil>
	// timestamp too old true
}

// sign makes the headers a Standard Webhooks sender would send.
func sign(secret, id string, at time.Time, body []byte) http.Header {
	key, _ := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return h
}

// answer posts body with header to h and returns the status and the answer's text.
func answer(h http.Handler, body []byte, header http.Header) string {
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return strconv.Itoa(rec.Code) + " " + string(bytes.TrimSpace(rec.Body.Bytes()))
}
