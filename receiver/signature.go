package receiver

import (
	"time"

	"github.com/scribehook/scribehook/signature"
)

// verifySignature checks a signed route's delivery, body the exact bytes received, with the
// route's verifier: package signature is the one check of Standard Webhooks signatures, the
// receiver's and any program's. get reads a request header. The error is an *authError whose
// message names the reason and is safe to answer.
func verifySignature(v *signature.Verifier, get func(string) string, body []byte, now time.Time) error {
	if err := v.VerifyAt(body, get, now); err != nil {
		return &authError{msg: err.Error(), err: err}
	}
	return nil
}
