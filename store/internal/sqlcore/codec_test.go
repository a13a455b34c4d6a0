package sqlcore

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scribehook/scribehook/api"
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

// EncodeEvent must give json.Marshal's bytes (the stored sink events) and fail where it fails.
func TestEncodeEventIsJSONMarshal(t *testing.T) {
	at := api.Time{Time: time.Date(2026, 11, 22, 1, 39, 0, 123e6, time.UTC)}
	datas := []string{
		``, `null`, `{}`, `{"a":1}`, ` { "a" : [ 1 , 2.5e3 , "x y" ] , "b" : {"c":null} } `,
		`{"t":"<b>&amp;</b>"}`, "{\"s\":\"\u2028\u2029\"}", `"é\u00e9\\n"`, `[true,false]`,
		` { "t" : "a<b> --> c&d" , "u" : "\u2028" } `, `{"a":"<",`,
		`{"a":`, `{"a":1}}`, `nope`,
	}
	for _, data := range datas {
		for _, meta := range []string{``, `{"k":"<v>"}`, ` {"k" : 1} `} {
			ev := api.Event{ID: "e<1>", Type: "job.completed", CreatedAt: at, JobID: "j1", Kind: "pre_recorded",
				Category: "final", CustomMetadata: json.RawMessage(meta), Data: json.RawMessage(data)}
			if data == "" {
				ev.Data = nil
			}
			want, werr := json.Marshal(ev)
			got, gerr := EncodeEvent(&ev)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Errorf("data %q meta %q: EncodeEvent = %s, %v; json.Marshal = %s, %v", data, meta, got, gerr, want, werr)
			}
		}
	}
}
