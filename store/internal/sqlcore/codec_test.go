package sqlcore

import (
	"encoding/json"
	"strings"
	"testing"
)

// EncodeHeaders writes what json.Marshal gives for the headers, cleaned or not.
func TestEncodeHeadersIsJSONMarshal(t *testing.T) {
	cases := []map[string]string{
		nil, {}, {"content-type": "application/json"},
		{"user-agent": "a <b> & \"c\" \\ \x00\x1f\u2028 é \xff", "webhook-id": "msg_1", "Zeta": "", "alpha": "x"},
		{"\xc3": "\u2029", "k\n": "v\t"},
	}
	clean := func(s string) string { return strings.ReplaceAll(s, "\x00", "") }
	for _, h := range cases {
		for _, c := range []func(string) string{nil, clean} {
			got, err := EncodeHeaders(h, c)
			if err != nil {
				t.Fatal(err)
			}
			if h == nil {
				if got.Valid {
					t.Errorf("nil headers: %q, want NULL", got.String)
				}
				continue
			}
			in := h
			if c != nil {
				in = map[string]string{}
				for k, v := range h {
					in[c(k)] = c(v)
				}
			}
			want, _ := json.Marshal(in)
			if !got.Valid || got.String != string(want) {
				t.Errorf("%q: %q, json.Marshal gives %q", h, got.String, want)
			}
			back, err := DecodeHeaders(got)
			if err != nil || len(back) != len(in) {
				t.Errorf("%q: decoded back as %q, %v", h, back, err)
			}
		}
	}
}
