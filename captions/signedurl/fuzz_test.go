package signedurl_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/scribehook/scribehook/captions/signedurl"
)

// FuzzVerify: whatever exp and sig a URL carries, Verify answers without panicking, and
// accepts only the signature it made.
func FuzzVerify(f *testing.F) {
	s := signedurl.New(signedurl.DeriveKey("fuzz"))
	exp := time.Unix(1795000000, 0)
	f.Add("s1", "1795000000", s.Sign("s1", exp))
	f.Add("s1", "", "")
	f.Add("s1", "-1", "AAAA")
	f.Add("", "99999999999999999999", "====")
	f.Fuzz(func(t *testing.T, id, expS, sig string) {
		err := s.Verify(id, expS, sig, time.Unix(1700000000, 0))
		if err != nil {
			return
		}
		at, _, perr := signedurl.Parse(expS, sig)
		if perr != nil || s.Sign(id, at) != sig || strconv.FormatInt(at.Unix(), 10) != expS {
			t.Fatalf("accepted %q %q %q that it did not sign", id, expS, sig)
		}
	})
}
